"""Chooses the diffusion twin's sampler defaults by the model card's rule, on prompts the bench does not use.

    python -m scripts.choose_twin_defaults [MODELS_DIR]

Runs scoring x temperature x block length at 128 tokens, one token per step with threshold 0.9, on three
selection prompts, and prints each setting's perplexity under the AR twin and distinct-2; the choice is the
lowest perplexity among the settings with distinct-2 >= 0.5 (greedy loops are predictable, so perplexity
alone would pick them).
"""

from __future__ import annotations

import sys
from dataclasses import replace

from app.engine.diffusion import DiffusionSettings
from app.engine.measure import samples
from app.sources.local import twin

SELECTION_PROMPTS = ("Once upon a time, there was a big dog.", "Once upon a time", "Lily and Ben went to the beach.")
MIN_DISTINCT2 = 0.5


def main() -> None:
    folder = sys.argv[1] if len(sys.argv) > 1 else None
    dm, tok = twin("diffusion", folder)
    am, _ = twin("ar", folder)
    prompts = [tok.encode(p) for p in SELECTION_PROMPTS]
    rows = []
    for scoring in ("confidence", "margin", "entropy"):
        for temperature in (0.0, 0.5, 0.8):
            for block in (16, 32):
                s = replace(DiffusionSettings(), scoring=scoring, temperature=temperature, block_length=block)
                r = samples("diffusion", dm, am, tok, prompts, s)
                rows.append((scoring, temperature, block, r["ppl"], r["distinct2"]))
                print(f"{scoring:10s} t={temperature:<4} blocks {block:3d}: perplexity {r['ppl']:8.2f}, distinct-2 {r['distinct2']}",
                      flush=True)
    ok = [r for r in rows if r[4] is not None and r[4] >= MIN_DISTINCT2]
    best = min(ok, key=lambda r: r[3]) if ok else None
    print("chosen:", f"scoring={best[0]} temperature={best[1]} block_length={best[2]}" if best else "none above the bound")


if __name__ == "__main__":
    main()
