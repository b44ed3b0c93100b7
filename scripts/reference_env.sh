#!/usr/bin/env bash
# Builds the environments the families' reference samplers run in (tests/test_hf_reference_env.py): transformers
# 4.46.2, the version Dream's README pins (LLaDA's config.json was saved by 4.46.3), and transformers 4.57.0, the
# version dllm's pyproject.toml pins (its A2D Qwen3 and ModernBERT chat samplers), each beside this machine's torch.
# Converge itself runs transformers 5; comparing against the authors' own stack catches a load path that runs under
# 5 but computes wrongly. Needs the package index once; the tests skip when the environment is absent.
set -euo pipefail
cd "$(dirname "$0")/.."
ENV=.ref-envs/transformers-4.46
python -m venv --system-site-packages "$ENV"
"$ENV/bin/pip" install --quiet "transformers==4.46.2" "tokenizers>=0.20,<0.21" "huggingface_hub<1.0"
"$ENV/bin/python" -c "import transformers, torch; print('reference env:', transformers.__version__, torch.__version__)"
DLLM_ENV=.ref-envs/transformers-4.57
python -m venv --system-site-packages "$DLLM_ENV"
"$DLLM_ENV/bin/pip" install --quiet "transformers==4.57.0"
"$DLLM_ENV/bin/python" -c "import transformers, torch; print('dllm reference env:', transformers.__version__, torch.__version__)"
