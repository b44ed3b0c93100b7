#!/usr/bin/env bash
# Candidate diffusion twins that commit several tokens a pass, on one GPU: the recipe that gave the earlier twin 1.37
# tokens a pass (sequence-level distillation from the AR twin, then dParallel's certainty forcing), applied to the
# fresh-stories twins, with certainty forcing at three weights side by side; and a fourth candidate that learns, with
# certainty forcing at weight 1, the shipped diffusion twin's own stories instead (dParallel's self-distillation: on
# the CPU, 8M tokens of it gave 1.31 tokens a pass at the page's defaults where the shipped twin gives 1.01, at a cost
# in distinct-2; docs/twins.md).
# Usage: bash scripts/parallel_twin_gpu.sh CORPUS_DIR OUT_DIR MINUTES [STORIES]
# 1. The shipped AR twin (kept at its best held-out loss, so it no longer recites) writes STORIES stories from
#    openings of training stories at temperature 0, 0.3 and 0.6 (app/training/distill.py).
#    Meanwhile the machine's CPU cores write the diffusion twin's own stories at the page's defaults for SD_MINUTES
#    (app/training/self_distill.py, numpy, one process per core). SD_WITH names .npz files of its stories written
#    earlier (on this CPU, say); sd learns them too.
# 2. The shipped diffusion twin continues on them for MINUTES each, certainty weight 0.5, 1 and 2 on the AR twin's
#    stories and 1 on its own (sd), three quarters of its sequences laid out as the block sampler sees them
#    (app/training/train.py).
# Each candidate folder then holds everything the twins bench reads; on a CPU afterwards:
#   python -m app.training.fit_filter --models OUT/cfW --corpus CORPUS_DIR/tinystories-*.txt --prompts 200
#   python -m scripts.choose_twin_defaults OUT/cfW
#   python -m app bench --json --only twins --models OUT/cfW
# On a CPU, DEVICE=cpu BATCH=16 runs the same recipe (the model card's earlier twin took about 2 hours of it).
set -uo pipefail
CORPUS=$1; OUT=$2; MIN=${3:-4}; STORIES=${4:-200000}
DEVICE=${DEVICE:-cuda}
C="$CORPUS/tinystories-a.txt $CORPUS/tinystories-b.txt"
mkdir -p "$OUT"
OMP_NUM_THREADS=1 python3 -m app.training.self_distill --corpus $C --out "$OUT/self.npz" --minutes "${SD_MINUTES:-3}" \
  --jobs "${SD_JOBS:-$(( $(nproc) > 2 ? $(nproc) - 2 : 1 ))}" --stories "${SD_STORIES:-100000}" > "$OUT/self_distill.log" 2>&1 &
WRITER=$!
python3 -m app.training.distill --device "$DEVICE" --teacher assets/models/ar.safetensors --corpus $C \
  --out "$OUT/kd.npz" --stories "$STORIES" --batch "${WRITE_BATCH:-1024}" --max-len 224 --threads 2 \
  > "$OUT/distill.log" 2>&1 || { tail "$OUT/distill.log"; exit 1; }
wait "$WRITER" || { tail "$OUT/self_distill.log"; exit 1; }
for run in cf0.5:kd:0.5 cf1:kd:1 cf2:kd:2 sd:self:1; do
  IFS=: read -r name data w <<< "$run"
  streams="$OUT/$data.npz"; [ "$data" = self ] && streams="$streams ${SD_WITH:-}"
  d="$OUT/$name"; mkdir -p "$d"
  cp assets/models/tokenizer.json assets/models/ar.safetensors assets/models/ar.json assets/models/referee.safetensors \
    assets/models/referee.json "$d/"
  python3 -m app.training.train --device "$DEVICE" --twin diffusion --corpus $C --kd-data $streams \
    --init-from assets/models/diffusion.safetensors --first-token 0 --tokens 400000000 --batch "${BATCH:-256}" \
    --pad-frac 0.5 --prefix-frac 0.5 --block-frac 0.75 --certainty "$w" --lr 3e-4 --threads 2 --eval-every 200 \
    --checkpoint-every 100000 --max-minutes "$MIN" --out "$d" > "$d/log.txt" 2>&1 &
done
wait
