"""The uniform section of `python -m app bench` (`--only uniform`): the uniform-state twin beside the masked twin and
the AR twin in the same run, with the twins section's own measures.

On the twins bench's held-out openings (app/bench/twins.py EVAL_PROMPTS), 128 tokens, seeds 0-2: the masked twin at
the page's defaults and the AR twin greedy (both greedy, so one seed stands for all), and the uniform twin with
app/engine/uniform.py at its page defaults and the lesson's bolder bound, each seed on its own (its canvas of noise
depends on the seed) and pooled. Per row: answer tokens per pass, referee perplexity, the share of doubled tokens,
distinct-2, stutter, recital and empty answers (app/measure/quality.py `quality`, `doubled`, `recited`), and for the
uniform rows the worst seed (the highest referee perplexity) and its figures beside the pooled ones.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

from app.bench.twins import EVAL_PROMPTS, SEEDS
from app.engine import autoregressive, diffusion, uniform
from app.engine.autoregressive import ARSettings
from app.engine.diffusion import TWIN_DIFFUSION
from app.engine.model import DEFAULT_MODELS_DIR, load_twin
from app.engine.uniform import UniformSettings
from app.measure.quality import doubled, quality, recited, training_ngrams

UNIFORM_SETTINGS = {  # 128 tokens; the step budget is the answer length, as the masked twin's defaults
    "uniform_page_defaults": UniformSettings(),
    "uniform_entropy_bound_4": UniformSettings(entropy_bound=4.0),
}


PER_SEED = ("answer_tokens_per_pass", "referee_ppl", "doubled", "stutter", "distinct2", "empty_answers")


def figures(referee: Any, tok: Any, known: Any, runs: list[tuple[list[int], list[int], int]],
            repeatable: Any = None) -> dict[str, Any]:
    """Tokens per pass and the bench's quality figures over (prompt ids, answer ids, passes) runs, with the share of
    answer tokens that double the token before them (`doubled`)."""
    q, texts = quality(referee, tok, [(p, a) for p, a, _ in runs])
    found, spans = recited(texts, known) if known is not None else (0, 0)
    passes = sum(n for _, _, n in runs)
    twice, tokens = doubled([(p, a) for p, a, _ in runs], repeatable)
    return {"answers": len(runs), "answer_tokens_per_pass": round(q["answer_tokens"] / passes, 3) if passes else None,
            "passes": passes, **q, "doubled": round(twice / tokens, 4) if tokens else None,
            "recited": round(found / spans, 4) if spans else None,
            "empty_answers": sum(not a for _, a, _ in runs), "samples": texts[:3]}


def bench(models_dir: str | None = None) -> dict[str, Any]:
    """The three twins on the held-out openings, each row's figures pooled and per seed, with its seconds."""
    folder = models_dir or DEFAULT_MODELS_DIR
    dm, tok = load_twin("diffusion", folder)
    am, _ = load_twin("ar", folder)
    referee, _ = load_twin("referee", folder)
    um, _ = load_twin("uniform", folder)
    known = training_ngrams()
    prompts = [tok.encode(t) for t in EVAL_PROMPTS]
    report: dict[str, Any] = {"prompts": len(prompts), "gen_length": 128, "seeds": list(SEEDS), "rows": {}}

    def row(name: str, runs_by_seed: dict[int, list], seconds: float) -> None:
        pooled = figures(referee, tok, known, [r for runs in runs_by_seed.values() for r in runs], um.repeatable)
        per_seed = {seed: figures(referee, tok, known, runs, um.repeatable) for seed, runs in runs_by_seed.items()}
        worst = max(per_seed, key=lambda k: per_seed[k]["referee_ppl"] or 0)
        report["rows"][name] = {"pooled": pooled, "seconds": round(seconds, 1), "worst_seed": worst,
                                "worst": {x: per_seed[worst][x] for x in PER_SEED},
                                "per_seed": {k: {x: v[x] for x in PER_SEED} for k, v in per_seed.items()}}

    t = time.time()
    runs = []
    for p in prompts:
        last = list(diffusion.generate(dm, p, TWIN_DIFFUSION))[-1]
        n = diffusion.answer_length(last.ids, last.masked, dm.eos_id)
        runs.append((p, [int(i) for i in last.ids[:n]], last.nfe))
    row("masked_twin_page_defaults", {0: runs}, time.time() - t)
    t = time.time()
    runs = [(p, list(last.ids), last.nfe) for p in prompts
            for last in [list(autoregressive.generate(am, p, ARSettings(gen_length=128)))[-1]]]
    row("ar_twin_greedy", {0: runs}, time.time() - t)
    for name, s in UNIFORM_SETTINGS.items():
        t = time.time()
        by_seed: dict[int, list] = {}
        for seed in SEEDS:
            by_seed[seed] = []
            for p in prompts:
                canvas = uniform.decode(um, p, replace(s, seed=seed))
                by_seed[seed].append((p, [int(i) for i in uniform.answer(canvas, um.eos_id)], canvas.nfe))
        row(name, by_seed, time.time() - t)
    report["settings"] = {name: s.to_json() for name, s in UNIFORM_SETTINGS.items()}
    return report
