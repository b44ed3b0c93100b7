#!/usr/bin/env bash
# One round of self-distillation for the diffusion twin (dParallel's recipe with its own text as the target): the twin
# in MODELS_DIR writes its own stories at the page's defaults on the machine's CPU cores (app/training/self_distill.py),
# then continues on them, and on any earlier rounds' stories named in SD_WITH, with certainty forcing at weight 1,
# one run per entry of RUNS side by side: MINUTES, or MINUTES:F to lay F of the stories that kept their trajectory
# out as states of the decode that wrote them (train.py --order-frac).
# Usage: bash scripts/self_distill_round.sh MODELS_DIR OUT_DIR "1.5 3" [CORPUS_DIR]
#        bash scripts/self_distill_round.sh MODELS_DIR OUT_DIR "4 4:0.5" [CORPUS_DIR]
# OUT_DIR gets stories.npz, self_distill.log and one folder per run (m1.5, m3, m4o0.5) with the twin, its log and what
# the twins bench reads. Round 2 of the model card ran the same commands (from a script beside the checkout, before this
# one existed) on an H200 with MODELS_DIR the sd candidate of scripts/parallel_twin_gpu.sh, SD_MINUTES=1.8, SD_JOBS=15,
# lengths "1.5 3" and SD_WITH the 3,669 stories round 1 wrote on this CPU.
# SD_TEMPERATURE=0.7 has the twin sample its stories instead of writing its greedy favourites (docs/twins.md).
# SD_KEEP=0.3 trains on the share of them the AR twin reads most fluently (app/training/pick_stories.py; round 5).
# On a CPU: DEVICE=cpu BATCH=16.
set -uo pipefail
MODELS=$1; OUT=$2; LENGTHS=${3:-3}; CORPUS=${4:-../shared/corpus}
DEVICE=${DEVICE:-cuda}
C="$CORPUS/tinystories-a.txt $CORPUS/tinystories-b.txt"
mkdir -p "$OUT"
OMP_NUM_THREADS=1 python3 -m app.training.self_distill --models "$MODELS" --corpus $C --out "$OUT/stories.npz" \
  --minutes "${SD_MINUTES:-3}" --jobs "${SD_JOBS:-$(( $(nproc) > 2 ? $(nproc) - 1 : 1 ))}" --seed "${SD_SEED:-2}" \
  --stories "${SD_STORIES:-100000}" --temperature "${SD_TEMPERATURE:-0}" > "$OUT/self_distill.log" 2>&1 || { tail "$OUT/self_distill.log"; exit 1; }
DATA="$OUT/stories.npz"
if [ -n "${SD_KEEP:-}" ]; then
  DATA="$OUT/picked.npz"
  python3 -m app.training.pick_stories "$OUT/stories.npz" --out "$DATA" --keep "$SD_KEEP" --models "$MODELS" \
    > "$OUT/pick_stories.log" 2>&1 || { tail "$OUT/pick_stories.log"; exit 1; }
fi
for run in $LENGTHS; do
  IFS=: read -r min order <<< "$run"
  d="$OUT/m$min${order:+o$order}"; mkdir -p "$d"
  cp "$MODELS"/tokenizer.json "$MODELS"/ar.safetensors "$MODELS"/ar.json "$MODELS"/referee.safetensors \
    "$MODELS"/referee.json "$d/"
  python3 -m app.training.train --device "$DEVICE" --twin diffusion --corpus $C --kd-data "$DATA" \
    ${SD_WITH:-} --init-from "$MODELS/diffusion.safetensors" --first-token 0 --tokens 400000000 \
    --batch "${BATCH:-256}" --pad-frac 0.5 --prefix-frac 0.5 --block-frac 0.75 --certainty 1 --order-frac "${order:-0}" \
    --lr 3e-4 --threads 2 --eval-every 200 --checkpoint-every 100000 --max-minutes "$min" --out "$d" > "$d/log.txt" 2>&1 &
done
wait
