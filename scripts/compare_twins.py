"""Compares two pairs of twins (for example the shipped ones and a retrained pair) with each AR twin as judge.

    python -m scripts.compare_twins EARLIER_DIR LATER_DIR

Each AR twin favours text like its own training, so every setting's answers are scored by both AR twins:
perplexity under the earlier / the later AR twin, then distinct-2 of words, on the bench's prompts and the
default-selection prompts, at most 128 tokens, seed 0.
"""

from __future__ import annotations

import math
import sys
from dataclasses import replace

from app.engine.autoregressive import ARSettings
from app.engine.diffusion import TWIN_DIFFUSION, DiffusionSettings
from app.engine.model import load_twin
from app.measure.quality import PROMPTS, distinct2, nll, run_ar, run_diffusion
from scripts.choose_twin_defaults import SELECTION_PROMPTS


def main() -> None:
    dirs = {"earlier": sys.argv[1], "later": sys.argv[2]}
    dm = {k: load_twin("diffusion", p)[0] for k, p in dirs.items()}
    ar_and_tok = {k: load_twin("ar", p) for k, p in dirs.items()}
    am = {k: model for k, (model, _) in ar_and_tok.items()}
    tok = ar_and_tok["later"][1]
    ids = [tok.encode(p) for p in (*PROMPTS, *SELECTION_PROMPTS)]
    llada = DiffusionSettings()
    settings = {
        "diffusion, LLaDA's defaults": ("diffusion", llada),
        "diffusion, the twin's defaults": ("diffusion", TWIN_DIFFUSION),
        "diffusion, entropy, t=0.5, blocks of 4": ("diffusion", replace(TWIN_DIFFUSION, block_length=4)),
        "diffusion, left to right, t=0.7": ("diffusion", replace(llada, block_length=1, temperature=0.7, threshold=None,
                                                                lookahead=8, dual_cache=False)),
        "AR, t=0.8, top-40": ("ar", ARSettings(temperature=0.8, top_k=40)),
        "AR, greedy": ("ar", ARSettings()),
    }
    for name, (kind, s) in settings.items():
        for pair in dirs:
            run = run_diffusion if kind == "diffusion" else run_ar
            outs = [(p, run((dm if kind == "diffusion" else am)[pair], p, s)[0]) for p in ids]
            tokens = sum(len(o) for _, o in outs)
            ppl = [math.exp(sum(nll(am[j], p, o) for p, o in outs) / tokens) for j in dirs]
            d2 = [x for x in (distinct2(tok.decode(o)) for _, o in outs) if x is not None]
            print(f"{name} ({pair} twins): perplexity {ppl[0]:.1f} / {ppl[1]:.1f}, distinct-2 {sum(d2) / len(d2):.2f}",
                  flush=True)


if __name__ == "__main__":
    main()
