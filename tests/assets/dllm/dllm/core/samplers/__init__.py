# Vendored unchanged below this header: dllm's sampler module __init__.py, from GitHub ZHZisZZ/dllm, path dllm/core/samplers/__init__.py, commit ca176752fbceec49c6b4777a2c18ae88e4eb10ed.
# tests/test_hf_dllm.py compares Converge's hf-diffusion output with its samplers token for token. License: Apache-2.0 (the dllm repository).

from .base import BaseSampler, BaseSamplerConfig, BaseSamplerOutput
from .bd3lm import BD3LMSampler, BD3LMSamplerConfig
from .mdlm import MDLMSampler, MDLMSamplerConfig
from .utils import add_gumbel_noise, get_num_transfer_tokens

__all__ = [
    "BaseSampler",
    "BaseSamplerConfig",
    "BaseSamplerOutput",
    "BD3LMSampler",
    "BD3LMSamplerConfig",
    "MDLMSampler",
    "MDLMSamplerConfig",
    "add_gumbel_noise",
    "get_num_transfer_tokens",
]
