#!/usr/bin/env bash
# The fresh-stories twins' candidate runs, side by side on one GPU (each twin is tiny, so one card holds them all).
# Usage: bash scripts/train_twins_gpu.sh CORPUS_DIR OUT_DIR MINUTES
# Every run is app/training/train.py unchanged but for --device cuda; on a CPU, drop --device and give each run
# the same --tokens (the model card lists the tokens each candidate saw). Each run stops by itself after its
# minutes (its learning rate decays on that clock) and writes its twin and log; the AR runs keep their best
# held-out weights (early stopping), since the AR twin memorises the 0.42M training tokens.
set -uo pipefail
CORPUS=$1; OUT=$2; MIN=${3:-6}
C="$CORPUS/tinystories-a.txt $CORPUS/tinystories-b.txt"
T="python3 -m app.training.train --device ${DEVICE:-cuda} --corpus $C --batch ${BATCH:-256} --pad-frac 0.5 --threads 2 --checkpoint-every 100000"
D="--twin diffusion --first-token 0 --prefix-frac 0.5 --block-frac 0.5 --eval-every 200 --tokens 400000000"
A="--twin ar --eval-every 20 --keep-best --tokens 100000000"
mkdir -p "$OUT"
for r in ar_aug ar_plain d_scratch_aug d_cont_aug d_scratch_aug_cf d_from_ar_aug; do
  mkdir -p "$OUT/$r"; cp assets/models/tokenizer.json "$OUT/$r/"
done
AR_MIN=$(python3 -c "print(round($MIN * 0.3, 2))")
(
  $T $A --augment 40 --max-minutes "$AR_MIN" --out "$OUT/ar_aug" > "$OUT/ar_aug/log.txt" 2>&1
  $T $D --augment 40 --lr 1e-3 --init-from "$OUT/ar_aug/ar.safetensors" --max-minutes "$(python3 -c "print(round($MIN * 0.66, 2))")" \
    --out "$OUT/d_from_ar_aug" > "$OUT/d_from_ar_aug/log.txt" 2>&1
) &
$T $A --max-minutes "$AR_MIN" --out "$OUT/ar_plain" > "$OUT/ar_plain/log.txt" 2>&1 &
$T $D --augment 40 --lr 1e-3 --max-minutes "$MIN" --out "$OUT/d_scratch_aug" > "$OUT/d_scratch_aug/log.txt" 2>&1 &
$T $D --augment 40 --lr 5e-4 --init-from assets/models/diffusion.safetensors --max-minutes "$MIN" \
  --out "$OUT/d_cont_aug" > "$OUT/d_cont_aug/log.txt" 2>&1 &
$T $D --augment 40 --lr 1e-3 --certainty 0.5 --max-minutes "$MIN" --out "$OUT/d_scratch_aug_cf" \
  > "$OUT/d_scratch_aug_cf/log.txt" 2>&1 &
wait
