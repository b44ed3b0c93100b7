"""The uniform-state twin beside the masked twin and the AR twin, with the twins bench's own measures.

    python -m scripts.uniform_bench [MODELS_DIR] [--uniform DIR] [--prompts N] [--out FILE.json]

On the twins bench's held-out openings (app/bench/twins.py EVAL_PROMPTS), 128 tokens, seeds 0-2: the masked twin at
the page's defaults and the AR twin greedy (both greedy, so one seed stands for all), and the uniform twin
(`uniform.safetensors` in --uniform, default MODELS_DIR) with app/engine/uniform.py at a few settings, each seed on
its own (its canvas of noise depends on the seed) and pooled. Per row: answer tokens per pass, referee perplexity,
distinct-2, stutter, recital and empty answers (app/engine/measure.py `quality`, `recited`), and for the uniform rows
the worst seed (the highest referee perplexity) beside the pooled figures.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from app.bench.twins import EVAL_PROMPTS, SEEDS
from app.engine import autoregressive, diffusion, uniform
from app.engine.autoregressive import ARSettings
from app.engine.diffusion import TWIN_DIFFUSION
from app.engine.measure import quality, recited, training_ngrams
from app.engine.model import DEFAULT_MODELS_DIR, load_twin
from app.engine.uniform import UniformSettings

UNIFORM_SETTINGS = {  # 128 tokens; the step budget is the answer length, as the masked twin's defaults
    "uniform, entropy bound 0.5, blocks of 32": UniformSettings(entropy_bound=0.5, block_length=32),
    "uniform, entropy bound 1.0, blocks of 32": UniformSettings(entropy_bound=1.0, block_length=32),
    "uniform, one position a pass (no bound), blocks of 32": UniformSettings(entropy_bound=None, block_length=32),
}


def figures(referee: Any, tok: Any, known: Any, runs: list[tuple[list[int], list[int], int]]) -> dict[str, Any]:
    """Tokens per pass and the bench's quality figures over (prompt ids, answer ids, passes) runs."""
    q, texts = quality(referee, tok, [(p, a) for p, a, _ in runs])
    found, spans = recited(texts, known) if known is not None else (0, 0)
    passes = sum(n for _, _, n in runs)
    return {"answers": len(runs), "answer_tokens_per_pass": round(q["answer_tokens"] / passes, 3) if passes else None,
            "passes": passes, **q, "recited": round(found / spans, 4) if spans else None,
            "empty_answers": sum(not a for _, a, _ in runs), "samples": texts[:3]}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="?", default=str(DEFAULT_MODELS_DIR))
    ap.add_argument("--uniform", default=None, help="folder holding uniform.safetensors (default: MODELS_DIR)")
    ap.add_argument("--prompts", type=int, default=len(EVAL_PROMPTS))
    ap.add_argument("--only", nargs="*", default=None, help="the uniform settings to run (their names' first words)")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    dm, tok = load_twin("diffusion", args.models)
    am, _ = load_twin("ar", args.models)
    referee, _ = load_twin("referee", args.models)
    um, _ = load_twin("uniform", args.uniform or args.models)
    known = training_ngrams()
    prompts = [tok.encode(t) for t in EVAL_PROMPTS[: args.prompts]]
    report: dict[str, Any] = {"prompts": len(prompts), "gen_length": 128, "seeds": list(SEEDS), "rows": {}}

    def row(name: str, runs_by_seed: dict[int, list], seconds: float) -> None:
        pooled = figures(referee, tok, known, [r for runs in runs_by_seed.values() for r in runs])
        per_seed = {seed: figures(referee, tok, known, runs) for seed, runs in runs_by_seed.items()}
        worst = max(per_seed, key=lambda k: per_seed[k]["referee_ppl"] or 0)
        report["rows"][name] = {"pooled": pooled, "seconds": round(seconds, 1), "worst_seed": worst,
                                "per_seed": {k: {x: v[x] for x in ("answer_tokens_per_pass", "referee_ppl",
                                                                   "distinct2", "stutter", "empty_answers")}
                                             for k, v in per_seed.items()}}
        p = pooled
        print(f"{name}: {p['answer_tokens_per_pass']} tokens/pass, ppl {p['referee_ppl']}, distinct-2 "
              f"{p['distinct2']}, stutter {p['stutter']}, recited {p['recited']}, empty {p['empty_answers']} "
              f"({seconds:.0f} s); worst seed {worst}: {per_seed[worst]['referee_ppl']}", flush=True)

    t = time.time()
    runs = []
    for p in prompts:
        last = list(diffusion.generate(dm, p, TWIN_DIFFUSION))[-1]
        n = diffusion.answer_length(last.ids, last.masked, dm.eos_id)
        runs.append((p, [int(i) for i in last.ids[:n]], last.nfe))
    row("masked twin, page defaults (greedy: one seed)", {0: runs}, time.time() - t)
    t = time.time()
    runs = []
    for p in prompts:
        last = list(autoregressive.generate(am, p, ARSettings(gen_length=128)))[-1]
        runs.append((p, list(last.ids), last.nfe))
    row("AR twin, greedy (one seed)", {0: runs}, time.time() - t)
    for name, s in UNIFORM_SETTINGS.items():
        if args.only and not any(name.split(", ", 1)[1].startswith(o) for o in args.only):
            continue
        t = time.time()
        by_seed: dict[int, list] = {}
        for seed in SEEDS:
            by_seed[seed] = []
            for p in prompts:
                last = uniform.decode(um, p, replace(s, seed=seed))
                by_seed[seed].append((p, [int(i) for i in uniform.answer(last, um.eos_id)], last.nfe))
        row(name, by_seed, time.time() - t)
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=1) + "\n")
    return report


if __name__ == "__main__":
    main()
