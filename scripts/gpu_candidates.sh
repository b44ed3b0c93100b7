#!/usr/bin/env bash
# One call of a lent GPU for the several-tokens-a-pass twins, bringing back what the CPU needs to judge them.
# Usage, on the device machine (the `run` tool; copy ../shared/corpus into .gpu/corpus here first and carry it):
#   bash scripts/gpu_candidates.sh .gpu/corpus "$OUT" MINUTES [STORIES]
# Runs scripts/parallel_twin_gpu.sh (the AR twin writes STORIES stories and the diffusion twin its own on the CPU
# cores; four certainty-forcing candidates train for MINUTES each, side by side) and puts in OUT eleven files: the
# card's name, each candidate's weights and training log (W.diffusion.safetensors, W.diffusion.json for W in cf0.5,
# cf1, cf2, sd) and the two story writers' logs. Back here, for each candidate W:
#   mkdir cands/W && cp assets/models/{tokenizer,ar,referee}.* cands/W/
#   cp FILES_AT/W.diffusion.safetensors cands/W/diffusion.safetensors   (and .json)
#   python -m app.training.fit_filter --models cands/W --corpus ../shared/corpus/tinystories-*.txt --prompts 200 --jobs 2
#   python -m scripts.choose_twin_defaults cands/W --filter-levels
#   python -m app bench --json --only twins --models cands/W
set -euo pipefail
CORPUS=$1; OUT=$2; MIN=${3:-6}; STORIES=${4:-200000}
WORK=$(mktemp -d)
python3 -c "import torch; print(torch.__version__, torch.cuda.get_device_name(0) if torch.cuda.is_available() else 'cpu')" \
  > "$OUT/device.txt"
bash scripts/parallel_twin_gpu.sh "$CORPUS" "$WORK" "$MIN" "$STORIES"
for w in cf0.5 cf1 cf2 sd; do
  cp "$WORK/$w/diffusion.safetensors" "$OUT/$w.diffusion.safetensors"
  cp "$WORK/$w/diffusion.json" "$OUT/$w.diffusion.json"
done
tail -n 40 "$WORK/distill.log" > "$OUT/distill.log"
tail -n 40 "$WORK/self_distill.log" > "$OUT/self_distill.log"
