#!/usr/bin/env bash
# One call of a lent GPU for the several-tokens-a-pass twins, bringing back what the CPU needs to judge them.
# Usage, on the device machine (the `run` tool; copy ../shared/corpus into .gpu/corpus here first and carry it):
#   bash scripts/gpu_candidates.sh .gpu/corpus "$OUT" MINUTES [STORIES]
# Runs scripts/parallel_twin_gpu.sh (the AR twin writes STORIES stories; three certainty-forcing candidates train for
# MINUTES each, side by side) and puts in OUT eight files: the card's name, each candidate's weights and training log
# (cfW.diffusion.safetensors, cfW.diffusion.json) and the story writer's log. Back here, for each candidate W:
#   mkdir cands/cfW && cp assets/models/{tokenizer,ar,referee}.* cands/cfW/
#   cp FILES_AT/cfW.diffusion.safetensors cands/cfW/diffusion.safetensors   (and .json)
#   python -m app.engine.fit_filter --models cands/cfW --corpus ../shared/corpus/tinystories-*.txt --prompts 200 --jobs 2
#   python -m scripts.choose_twin_defaults cands/cfW --filter-levels
#   python -m app bench --json --only twins --models cands/cfW
set -euo pipefail
CORPUS=$1; OUT=$2; MIN=${3:-6}; STORIES=${4:-200000}
WORK=$(mktemp -d)
python3 -c "import torch; print(torch.__version__, torch.cuda.get_device_name(0) if torch.cuda.is_available() else 'cpu')" \
  > "$OUT/device.txt"
bash scripts/parallel_twin_gpu.sh "$CORPUS" "$WORK" "$MIN" "$STORIES"
for w in 0.5 1 2; do
  cp "$WORK/cf$w/diffusion.safetensors" "$OUT/cf$w.diffusion.safetensors"
  cp "$WORK/cf$w/diffusion.json" "$OUT/cf$w.diffusion.json"
done
tail -n 40 "$WORK/distill.log" > "$OUT/distill.log"
