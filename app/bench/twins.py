"""The twins section of `python -m app bench`: the twins at the page's defaults on held-out openings.

Answer tokens per forward pass, commits per step and text quality judged by the referee (an AR model trained with
another seed that taught neither twin), beside the most parallel setting the defaults were chosen from, and both
twins alone on the first prompt a new user tries.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from app.engine.autoregressive import ARSettings
from app.engine.diffusion import DiffusionSettings
from app.errors import SourceError
from app.sources.local import TWIN_DIFFUSION

# Held-out openings for the twins section: neither the sampler defaults nor the training were tuned on them.
EVAL_PROMPTS = (
    "Once upon a time, there was a little bird named Pip.",
    "Sara found a shiny key under her bed.",
    "The sun was hot, so Ben and Mia went to the pool.",
    "One day, a small frog wanted to see the big lake.",
    "Grandma baked a cake for Timmy's birthday.",
    "There was a tall tree in the park. Every day,",
    "Lucy had a red kite. She loved to fly it",
    "A little boy named Sam was scared of the dark.",
    "The puppy ran after the ball and",
    "Once upon a time, a bear lived in a cave near the river.",
    "Anna and her mom went to the store to buy some milk.",
    "Jack saw a big box in the garden. He wondered",
    "It was raining, and Emma could not play outside.",
    "The little car was sad because it was old.",
    "Tim wanted to help his dad fix the fence.",
    "Once upon a time, there was a girl who loved to sing.",
    "The fish swam in the blue sea. One day,",
    "Max and his friend built a tower with blocks.",
    "Mommy said, \"Today we will go to the zoo!\"",
    "A kind old man lived in a small house.",
    "The kitten was hungry, so she",
    "Ella drew a picture of a rainbow for her teacher.",
    "Once there was a brave knight who had a horse.",
    "Tom and Lily played in the snow all morning.",
)
RACE_PROMPT = "Once upon a time, there was a little dog named Max."  # the prompt a new user tries first
# the built-in diffusion twin's defaults before the distilled twin: one token per step unless the threshold fires
PREVIOUS_DEFAULTS = DiffusionSettings(block_length=16, scoring="entropy", temperature=0.5)
# the most parallel setting `scripts.choose_twin_defaults` weighed: 48 steps for 128 tokens, at least 2-3 a pass
PARALLEL = DiffusionSettings(block_length=16, scoring="confidence", temperature=0.3, steps=48)
# the page's defaults with a bolder learned commit filter (app/engine/commit_filter.py)
BOLDER = replace(TWIN_DIFFUSION, filter=0.5)
# where diffusion might win on wall time: each block starts with a pass over everything the model sees, so a
# short lookahead makes that refresh cheaper, and a longer answer lengthens what the AR twin attends to per token
LOOKAHEAD = 16
# (answer length, lookahead) on the race prompt; the first is the page's defaults, the race prompt alone
WALL = ((TWIN_DIFFUSION.gen_length, 0), (128, LOOKAHEAD), (256, 0), (256, LOOKAHEAD))


def bench(models_dir: str | Path | None = None, prompts: tuple[str, ...] = EVAL_PROMPTS) -> dict[str, Any]:
    """The twins at the page's defaults on held-out openings (128 tokens, seed 0): answer tokens per forward
    pass, commits per step and how many were not the leftmost masked position, and text quality judged by
    the referee (an AR model trained with another seed that taught neither twin); the most parallel setting the
    defaults were chosen from beside them; and both twins alone on the first prompt a new user tries."""
    from app.engine.parallel import decode_order, summarise
    from app.engine.measure import distinct2, mean, nll, timed
    from app.engine import autoregressive, diffusion
    from app.engine.model import DEFAULT_MODELS_DIR, load_twin
    from app.sources.local import twin

    folder = str(models_dir or DEFAULT_MODELS_DIR)
    try:
        dm, tok = twin("diffusion", folder)
        am, _ = twin("ar", folder)
        referee, _ = load_twin("referee", folder)
    except SourceError as e:
        return {"skipped": str(e)}
    ids = [tok.encode(p) for p in prompts]

    def judged(answers: list[list[int]], secs: list[float]) -> dict[str, Any]:
        """Referee perplexity pooled over the answers' tokens, distinct-2, seconds and the first six texts."""
        texts = [tok.decode(a) for a in answers]
        tokens = sum(len(a) for a in answers)
        nlls = sum(nll(referee, p, a) for p, a in zip(ids, answers))
        return {"answer_tokens": tokens, "referee_ppl": round(float(np.exp(nlls / tokens)), 2),
                "distinct2": mean([distinct2(t) for t in texts]), "seconds_mean": round(float(np.mean(secs)), 3),
                "seconds_worst": round(max(secs), 3), "samples": texts[:6]}

    def diffusion_runs(s: DiffusionSettings) -> dict[str, Any]:
        runs, answers, secs = [], [], []
        for p in ids:
            steps, sec = timed(lambda: list(diffusion.generate(dm, p, s)))
            runs.append(decode_order(steps, s.block_length, dm.eos_id))
            answers.append([int(i) for i in steps[-1].ids[: runs[-1]["answer_tokens"]]])
            secs.append(sec)
        return {"settings": s.to_json(), **summarise(runs), **judged(answers, secs)}

    def ar_runs(s: ARSettings) -> dict[str, Any]:
        lasts, secs = [], []
        for p in ids:
            last, sec = timed(lambda: list(autoregressive.generate(am, p, s))[-1])
            lasts.append(last)
            secs.append(sec)
        tokens, passes = sum(len(x.ids) for x in lasts), sum(x.nfe for x in lasts)
        return {"settings": s.to_json(), "answer_tokens_per_pass": round(tokens / passes, 2),
                **judged([x.ids for x in lasts], secs)}

    wall = wall_time(dm, am, tok.encode(RACE_PROMPT))
    alone = wall[0]  # the page's defaults: the whole answer, 128 tokens
    race: dict[str, Any] = {"prompt": RACE_PROMPT, **{name: {
        "seconds_worst_of_3": alone[name]["seconds_worst"], "seconds_best_of_3": alone[name]["seconds_best"],
        "passes": alone[name]["passes"], "answer_tokens": alone[name]["answer_tokens"]} for name in ("diffusion", "ar")},
        "wall_time": wall}
    return {"prompts": len(prompts), "gen_length": TWIN_DIFFUSION.gen_length,
            "diffusion_default": diffusion_runs(TWIN_DIFFUSION),
            "diffusion_48_steps": diffusion_runs(PARALLEL),
            "diffusion_without_filter": diffusion_runs(PREVIOUS_DEFAULTS),
            "diffusion_filter_0.5": diffusion_runs(BOLDER),
            f"diffusion_lookahead_{LOOKAHEAD}": diffusion_runs(replace(TWIN_DIFFUSION, lookahead=LOOKAHEAD)),
            "ar_default": ar_runs(ARSettings(gen_length=TWIN_DIFFUSION.gen_length)),
            "race_prompt_alone": race,
            "targets": ">= 3 answer tokens per pass; several commits per step, not only the leftmost masked; "
                       "referee perplexity no worse than the previous twin at its defaults, distinct-2 >= 0.5"}


def wall_time(dm: Any, am: Any, prompt: list[int], repeats: int = 3) -> list[dict[str, Any]]:
    """Each twin alone on one prompt at each (answer length, lookahead) of WALL, runs alternated so load falls on
    both alike: worst and best seconds of `repeats`, passes, answer tokens and milliseconds per answer token."""
    from app.engine import autoregressive, diffusion
    from app.engine.measure import timed

    rows = []
    for length, look in WALL:
        d = replace(TWIN_DIFFUSION, gen_length=length, steps=length, lookahead=look)  # the page's steps rule
        a = ARSettings(gen_length=length)
        runs = {"diffusion": lambda: list(diffusion.generate(dm, prompt, d)),
                "ar": lambda: list(autoregressive.generate(am, prompt, a))}
        secs: dict[str, list[float]] = {name: [] for name in runs}
        lasts: dict[str, Any] = {}
        for run in runs.values():
            run()  # warm: caches and buffers
        for _ in range(repeats):
            for name, run in runs.items():
                steps, sec = timed(run)
                secs[name].append(sec)
                lasts[name] = steps[-1]
        row: dict[str, Any] = {"gen_length": length, "lookahead": look}
        for name, last in lasts.items():
            n = diffusion.answer_length(last.ids, last.masked, dm.eos_id) if name == "diffusion" else len(last.ids)
            row[name] = {"seconds_worst": round(max(secs[name]), 3), "seconds_best": round(min(secs[name]), 3),
                         "passes": last.nfe, "answer_tokens": n,
                         "ms_per_token_worst": round(1000 * max(secs[name]) / max(n, 1), 2)}
        row["diffusion_faster_in_worst"] = row["diffusion"]["seconds_worst"] < row["ar"]["seconds_worst"]
        rows.append(row)
    return rows
