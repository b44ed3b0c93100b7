"""Chooses the diffusion twin's sampler defaults by the model card's rule, on prompts the bench does not use.

    python -m scripts.choose_twin_defaults [MODELS_DIR]

Runs temperature x scoring x learned-filter level, in blocks of 16 with the stutter guard and a shortest answer of one
token, at 128 tokens on six selection prompts (sampled settings pooled over seeds 0, 1 and 2; greedy ones once, since
a seed changes nothing there), and prints each setting's answer tokens per forward pass (every network call counted),
referee perplexity, distinct-2 and stutter beside the AR twin's (greedy) on the same prompts. The rule: the most tokens
per pass among the settings whose referee perplexity is at most the AR twin's, whose distinct-2 is at least 0.55 and
whose stutter (adjacent repeated words) is at most 1%: the fresh-stories issue's quality bounds.
The referee (an AR model trained with another seed, `referee.safetensors`) judges: it taught neither twin. These six
prompts are not the bench's: the bench's held-out prompts (app.bench.twins.EVAL_PROMPTS) are never tuned on.
"""

from __future__ import annotations

import math
import sys
from dataclasses import replace
from typing import Any

from app.engine import autoregressive, diffusion
from app.engine.autoregressive import ARSettings
from app.engine.measure import distinct2, mean, nll, stutter
from app.sources.local import TWIN_DIFFUSION, twin

SELECTION_PROMPTS = ("Once upon a time, there was a big dog.", "Once upon a time", "Lily and Ben went to the beach.",
                     "The little girl had a doll.", "One day, a boy found a ball in the park.", "The bird sang a song.")
MIN_DISTINCT2 = 0.55
MAX_STUTTER = 0.01
GRID = [(temperature, scoring, level) for temperature in (0.0, 0.3, 0.5) for scoring in ("entropy", "confidence")
        for level in (None, 0.9, 0.8, 0.7, 0.6, 0.5)]


def main() -> None:
    folder = sys.argv[1] if len(sys.argv) > 1 else None
    from app.engine.model import DEFAULT_MODELS_DIR, load_twin

    dm, tok = twin("diffusion", folder)
    am, _ = twin("ar", folder)
    referee, _ = load_twin("referee", folder or DEFAULT_MODELS_DIR)
    prompts = [tok.encode(p) for p in SELECTION_PROMPTS]

    def judged(runs: list[tuple[list[int], list[int]]]) -> dict[str, Any]:
        texts = [tok.decode(a) for _, a in runs]
        tokens = sum(len(a) for _, a in runs)
        repeats, pairs = stutter(texts)
        return {"ppl": round(math.exp(sum(nll(referee, p, a) for p, a in runs) / tokens), 2),
                "distinct2": mean([distinct2(t) for t in texts]), "stutter": round(repeats / max(pairs, 1), 4)}

    ar = judged([(p, list(list(autoregressive.generate(am, p, ARSettings()))[-1].ids)) for p in prompts])
    print(f"AR twin (greedy): perplexity {ar['ppl']}, distinct-2 {ar['distinct2']}, stutter {ar['stutter']}", flush=True)
    rows = []
    for temperature, scoring, level in GRID:
        s = replace(TWIN_DIFFUSION, temperature=temperature, scoring=scoring, filter=level)
        runs, tokens, passes = [], 0, 0
        for seed in (0,) if temperature == 0 else (0, 1, 2):
            for p in prompts:
                last = list(diffusion.generate(dm, p, replace(s, seed=seed)))[-1]
                n = diffusion.answer_length(last.ids, last.masked, dm.eos_id)
                runs.append((p, [int(i) for i in last.ids[:n]]))
                tokens, passes = tokens + n, passes + last.nfe
        r = {"tokens_per_pass": round(tokens / passes, 3), **judged(runs)}
        rows.append((s, r))
        print(f"t={temperature:<4} {scoring:10s} filter {level}: {r['tokens_per_pass']} tokens/pass, perplexity "
              f"{r['ppl']:6.2f}, distinct-2 {r['distinct2']}, stutter {r['stutter']}", flush=True)
    ok = [(s, r) for s, r in rows
          if (r["distinct2"] or 0) >= MIN_DISTINCT2 and r["ppl"] <= ar["ppl"] and r["stutter"] <= MAX_STUTTER]
    best = max(ok, key=lambda sr: sr[1]["tokens_per_pass"]) if ok else None
    print("chosen:", f"temperature={best[0].temperature} scoring={best[0].scoring} filter={best[0].filter}"
          if best else "none within the bounds")


if __name__ == "__main__":
    main()
