"""The twins section of `python -m app bench`: the twins at the page's defaults on held-out openings and on the page's
own prompts, pooled over three sampler seeds.

Answer tokens per forward pass, commits per step and text quality: referee perplexity (an AR model trained with
another seed that taught neither twin), distinct-2, stutter and recital; beside the settings the defaults were
chosen from, and both twins alone on the first screen's prompt.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from app.engine.autoregressive import TWIN_AR, ARSettings
from app.engine.diffusion import TWIN_DIFFUSION, DiffusionSettings
from app.errors import UserError
from app.lessons.prompts import EXAMPLE_PROMPTS, STORY

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
RACE_PROMPT = STORY  # the first screen's race: the prompt a new user sees first
SEEDS = (0, 1, 2)  # one seed is not enough: the referee's perplexity moves by half from one to the next
# the page's defaults until the fresh-stories twins: sampled at 0.5 with the learned filter at 0.6, no stutter guard
PREVIOUS_DEFAULTS = replace(TWIN_DIFFUSION, temperature=0.5, filter=0.6, no_repeat=False, no_repeat_ngram=0, min_gap=1,
                            min_length=0)
# the twins' defaults before the guard every twin now runs alike (issue 51): the AR twin greedy with no guard, the
# masked twin with its stutter guard and no repeated run of 7 tokens
AR_BEFORE_GUARD = ARSettings(gen_length=TWIN_AR.gen_length)
DIFFUSION_BEFORE_GUARD = replace(TWIN_DIFFUSION, no_repeat=True, no_repeat_ngram=7)
# the guards `python -m scripts.twin_guard --compare` gives both twins alike, (run length, stutter guard) each: runs of
# 4 alone (the defaults before the neighbour guard), then with the stutter guard, then longer runs with and without it
GUARD_CONFIGS = ((4, False), (4, True), (5, False), (5, True), (6, False), (6, True))
GUARD_KEYS = ("answers", "stutter", "glued_doubles", "answers_repeating_a_sentence", "empty_answers", "referee_ppl",
              "referee_ppl_by_seed", "worst_seed", "answer_tokens_per_pass")
# the page's defaults with the learned commit filter (app/engine/commit_filter.py) at the bolder level it had before
FILTERED = replace(TWIN_DIFFUSION, filter=0.6)
# the most parallel setting an earlier search weighed (48 steps for 128 tokens, at least 2-3 a pass), with today's
# guards
PARALLEL = replace(TWIN_DIFFUSION, scoring="confidence", temperature=0.3, steps=48, filter=None)
# ... and bolder
BOLDER = replace(TWIN_DIFFUSION, filter=0.5)
# where diffusion might win on wall time: each block starts with a pass over everything the model sees, so a
# short lookahead makes that refresh cheaper, and a longer answer lengthens what the AR twin attends to per token
LOOKAHEAD = 16
# (answer length, lookahead) on the race prompt; the first is the page's defaults, the race prompt alone
WALL = ((TWIN_DIFFUSION.gen_length, 0), (128, LOOKAHEAD), (256, 0), (256, LOOKAHEAD))
# the commit spacing the bench sets beside the defaults' (app/engine/diffusion.py, min_gap): off where they space, 2
# where they do not
SPACING = 1 if TWIN_DIFFUSION.min_gap > 1 else 2
# ... and the stutter guard turned the other way from the defaults'
GUARD_ROW = "diffusion_without_stutter_guard" if TWIN_DIFFUSION.no_repeat else "diffusion_with_stutter_guard"
# the curve of tokens per pass against quality, one lever moved from the page's defaults at a time: the learned filter
# bolder and bolder, with the defaults' commit spacing and with SPACING; fewer steps without the filter; then the
# joint-error repairs the sampler has (ReMDM's remasking at about 3 tokens a pass, and the stutter guard turned the
# other way from the defaults', with a bold filter and with SPACING too)
CURVE: tuple[dict[str, Any], ...] = (*({"filter": level} for level in (0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2)),
         *({"filter": level, "min_gap": SPACING} for level in (0.8, 0.6, 0.4, 0.3, 0.2)),
         *({"filter": None, "steps": n} for n in (64, 43, 32)),
         *({"filter": None, "steps": 43, "remask": r} for r in (0.3, 0.6)),
         *({"filter": level, "no_repeat": not TWIN_DIFFUSION.no_repeat} for level in (0.6, 0.5)),
         *({"filter": level, "min_gap": SPACING, "no_repeat": not TWIN_DIFFUSION.no_repeat}
           for level in (0.4, 0.3, 0.2)))
CURVE_KEYS = ("answer_tokens_per_pass", "share_not_leftmost", "referee_ppl", "distinct2", "stutter", "recited",
              "empty_answers")
TARGETS = ("diffusion twin at the page's defaults, pooled over the held-out openings and seeds "
           "(greedy: the seeds agree): "
           "stutter <= 1% of "
           "adjacent word pairs, referee perplexity no worse than the AR twin's, distinct-2 >= 0.55, no empty answer, "
           "and, the several-tokens issue's bar, >= 2.5 answer tokens per pass at referee perplexity <= 9.6, "
           "distinct-2 >= 0.642 and stutter <= 0.5% (the fresh-stories twin's defaults) with >= 35% of commits not the "
           "leftmost masked position; every page prompt recited (8-word runs found in the training stories) under 5% "
           "by each twin")


# long: its measurements are closures over the loaded twins, the referee and the training n-grams, so that each row of
# the result below reads as one call
def bench(models_dir: str | Path | None = None, prompts: tuple[str, ...] = EVAL_PROMPTS,
          seeds: tuple[int, ...] = SEEDS, curve_only: bool = False,
          held_out_stories: int | None = None, guard_only: bool = False,
          guards: tuple[tuple[int, bool], ...] = ()) -> dict[str, Any]:
    """The twins at the page's defaults on held-out openings and on the page's own prompts (128 tokens), pooled over
    `seeds`: answer tokens per pass, commits per step and how many were not the leftmost masked position; referee
    perplexity (an AR model trained with another seed that taught neither twin), distinct-2, stutter (adjacent
    repeated words), recital (8-word runs found verbatim in the training stories) and empty answers; the stutter
    guards and the filter on and off; the curve of tokens per pass against quality (only that with `curve_only`);
    both twins at their defaults on the first sentences of the held-out training stories (the first
    `held_out_stories` of them; all by default); both twins alone on the first screen's prompt; and `guard`: both
    twins before and after the guard against repeated runs they now share, on the openings and the first screen's
    prompt, with sentence repeats and the worst seed's perplexity (only that with `guard_only`; with `guards`, both
    twins under each (run length, stutter guard) of them alike instead of before and after)."""
    from app.engine import autoregressive, diffusion
    from app.engine.model import DEFAULT_MODELS_DIR, load_twin
    from app.engine.parallel import decode_order, summarise
    from app.measure.quality import CORPUS, TRAINING_FILES, quality, recited, timed, training_ngrams
    from app.sources.local import twin
    from app.training.stories import held_out_openings

    folder = str(models_dir or DEFAULT_MODELS_DIR)
    try:
        dm, tok = twin("diffusion", folder)
        am, _ = twin("ar", folder)
        referee, _ = load_twin("referee", folder)
    except UserError as e:
        return {"skipped": str(e)}
    known = training_ngrams()
    page = tuple(EXAMPLE_PROMPTS.values())

    def judged(runs: list[tuple[list[int], list[int], float]]) -> dict[str, Any]:
        """Quality over (prompt ids, answer ids, seconds) runs: referee perplexity pooled over the answers' tokens,
        distinct-2, stutter and recital shares, empty answers, seconds and the first six texts."""
        figures, texts = quality(referee, tok, [(p, a) for p, a, _ in runs])
        found, spans = recited(texts, known) if known is not None else (0, 0)
        secs = [sec for _, _, sec in runs]
        return {"answers": len(runs), **figures,
                "recited": round(found / spans, 4) if spans else None, "recited_runs": found, "eight_word_runs": spans,
                "empty_answers": sum(not a for _, a, _ in runs),
                "seconds_mean": round(float(np.mean(secs)), 3), "seconds_worst": round(max(secs), 3),
                "samples": texts[:6]}

    def by_seed(runs: list[tuple[list[int], list[int], float]], with_seeds: tuple[int, ...]) -> dict[str, Any]:
        """Referee perplexity of each seed's answers (runs in seed order, as many a seed) and the worst seed: a
        pooled figure can hide one seed's loops."""
        each = len(runs) // len(with_seeds)
        ppl = {seed: quality(referee, tok, [(p, a) for p, a, _ in runs[k * each:(k + 1) * each]])[0]["referee_ppl"]
               for k, seed in enumerate(with_seeds)}
        worst = max(ppl, key=lambda seed: ppl[seed] or 0.0)
        return {"referee_ppl_by_seed": ppl, "worst_seed": {"seed": worst, "referee_ppl": ppl[worst]}}

    def diffusion_runs(s: DiffusionSettings, on: tuple[str, ...] = prompts,
                       with_seeds: tuple[int, ...] = seeds) -> dict[str, Any]:
        orders, runs = [], []
        for seed in with_seeds:
            for text in on:
                p = tok.encode(text)
                steps, sec = timed(lambda p=p, seed=seed: list(diffusion.generate(dm, p, replace(s, seed=seed))))
                orders.append(decode_order(steps, s.block_length, dm.eos_id))
                runs.append((p, [int(i) for i in steps[-1].ids[: orders[-1]["answer_tokens"]]], sec))
        return {"settings": s.to_json(), "seeds": list(with_seeds), **summarise(orders), **judged(runs),
                **by_seed(runs, with_seeds)}

    def greedy(s: DiffusionSettings | ARSettings) -> bool:
        """True when every seed writes the same: greedy, in a deterministic order, without remasking."""
        return s.temperature == 0 and getattr(s, "scoring", "") != "random" and getattr(s, "remask", 0) == 0

    def curve() -> list[dict[str, Any]]:
        """The page's defaults with the levers of each CURVE point moved: tokens per pass against quality. A greedy
        setting in a deterministic order runs one seed, which stands for all (the main rows run every seed
        regardless)."""
        points = []
        for moved in CURVE:
            s = replace(TWIN_DIFFUSION, **moved)
            r = diffusion_runs(s, with_seeds=seeds[:1] if greedy(s) else seeds)
            points.append({"moved": moved, "seeds": r["seeds"], **{k: r[k] for k in CURVE_KEYS}})
        return points

    if curve_only:
        return {"prompts": len(prompts), "gen_length": TWIN_DIFFUSION.gen_length, "curve": curve()}

    def ar_runs(s: ARSettings, on: tuple[str, ...] = prompts,
                with_seeds: tuple[int, ...] = seeds) -> dict[str, Any]:
        runs, passes = [], 0
        for seed in with_seeds:
            for text in on:
                p = tok.encode(text)
                last, sec = timed(
                    lambda p=p, seed=seed: list(autoregressive.generate(am, p, replace(s, seed=seed)))[-1])
                runs.append((p, list(last.ids), sec))
                passes += last.nfe
        tokens = sum(len(a) for _, a, _ in runs)
        return {"settings": s.to_json(), "seeds": list(with_seeds),
                "answer_tokens_per_pass": round(tokens / passes, 2), **judged(runs), **by_seed(runs, with_seeds)}

    def guard() -> dict[str, Any]:
        """Both twins before and after the guard they now share, in the same run, on the held-out openings and the
        first screen's prompt: stutter, answers repeating a sentence, empty answers, perplexity and its worst seed."""
        on = (*prompts, RACE_PROMPT)
        rows = {"ar_before": ar_runs(AR_BEFORE_GUARD, on), "ar_after": ar_runs(TWIN_AR, on),
                "diffusion_before": diffusion_runs(DIFFUSION_BEFORE_GUARD, on),
                "diffusion_after": diffusion_runs(TWIN_DIFFUSION, on)}
        out: dict[str, Any] = {"prompts": len(on), "seeds": list(seeds), "gen_length": TWIN_AR.gen_length}
        for name, row in rows.items():
            out[name] = {"settings": row["settings"], **{k: row[k] for k in GUARD_KEYS if k in row}}
        return out

    def compare() -> dict[str, Any]:
        """Both twins under each of `guards` alike, as `guard` measures them: which guards to give both sides."""
        on = (*prompts, RACE_PROMPT)
        out: dict[str, Any] = {"prompts": len(on), "seeds": list(seeds), "gen_length": TWIN_AR.gen_length}
        for n, neighbour in guards:
            name = f"runs_of_{n}" + ("_and_stutter_guard" if neighbour else "")
            for kind, row in (("ar", ar_runs(replace(TWIN_AR, no_repeat_ngram=n, no_repeat=neighbour), on)),
                              ("diffusion", diffusion_runs(replace(TWIN_DIFFUSION, no_repeat_ngram=n,
                                                                   no_repeat=neighbour), on))):
                out[f"{kind}_{name}"] = {"settings": row["settings"], **{k: row[k] for k in GUARD_KEYS if k in row},
                                         "samples": row["samples"][:2]}
        return out

    if guard_only:
        return {"guard": compare() if guards else guard()}

    ar = TWIN_AR
    page_prompts = {}
    for text in page:  # each page prompt on its own: neither twin may recite it
        d, a = diffusion_runs(TWIN_DIFFUSION, (text,)), ar_runs(ar, (text,))
        page_prompts[text] = {name: {k: r[k] for k in ("recited", "stutter", "referee_ppl", "distinct2",
                                                       "empty_answers")}
                              | ({"answer_tokens_per_pass": r["answer_tokens_per_pass"]}) for name, r in
                              (("diffusion", d), ("ar", a))}
    stories: dict[str, Any] = {"skipped": "the training stories (../shared/corpus) are not beside the checkout"}
    files = [str(CORPUS / f) for f in TRAINING_FILES]
    if all(Path(f).is_file() for f in files):  # openings as a visitor might type them, from stories never trained on
        held = tuple(held_out_openings(files)[:held_out_stories])
        stories = {"prompts": len(held), "seeds_note": "greedy settings run one seed: every seed writes the same",
                   "diffusion_default": diffusion_runs(TWIN_DIFFUSION, held, seeds[:1] if greedy(TWIN_DIFFUSION)
                                                       else seeds),
                   "ar_default": ar_runs(ar, held, seeds[:1] if greedy(ar) else seeds)}
    wall = wall_time(dm, am, tok.encode(RACE_PROMPT))
    alone = wall[0]  # the page's defaults: the whole answer, 128 tokens
    race: dict[str, Any] = {"prompt": RACE_PROMPT, **{name: {
        "seconds_worst_of_3": alone[name]["seconds_worst"], "seconds_best_of_3": alone[name]["seconds_best"],
        "passes": alone[name]["passes"], "answer_tokens": alone[name]["answer_tokens"]}
        for name in ("diffusion", "ar")},
        "wall_time": wall}
    return {"prompts": len(prompts), "gen_length": TWIN_DIFFUSION.gen_length, "seeds": list(seeds),
            "diffusion_default": diffusion_runs(TWIN_DIFFUSION),
            "diffusion_without_no_repeat_runs": diffusion_runs(replace(TWIN_DIFFUSION, no_repeat_ngram=0)),
            GUARD_ROW: diffusion_runs(replace(TWIN_DIFFUSION, no_repeat=not TWIN_DIFFUSION.no_repeat)),
            f"diffusion_min_gap_{SPACING}": diffusion_runs(replace(TWIN_DIFFUSION, min_gap=SPACING)),
            "diffusion_previous_defaults": diffusion_runs(PREVIOUS_DEFAULTS),
            "diffusion_filter_0.6": diffusion_runs(FILTERED),
            "diffusion_filter_0.5": diffusion_runs(BOLDER),
            "diffusion_48_steps": diffusion_runs(PARALLEL),
            f"diffusion_lookahead_{LOOKAHEAD}": diffusion_runs(replace(TWIN_DIFFUSION, lookahead=LOOKAHEAD)),
            "ar_default": ar_runs(ar),
            "curve": curve(),
            "page_prompts": page_prompts,
            "held_out_story_openings": stories,
            "race_prompt_alone": race,
            "guard": guard(),
            "targets": TARGETS}


def wall_time(dm: Any, am: Any, prompt: list[int], repeats: int = 3) -> list[dict[str, Any]]:
    """Each twin alone on one prompt at each (answer length, lookahead) of WALL, runs alternated so load falls on
    both alike: worst and best seconds of `repeats`, passes, answer tokens and milliseconds per answer token."""
    from app.engine import autoregressive, diffusion
    from app.measure.quality import timed

    rows = []
    for length, look in WALL:
        d = replace(TWIN_DIFFUSION, gen_length=length, steps=length, lookahead=look)  # the page's steps rule
        a = replace(TWIN_AR, gen_length=length)
        runs = {"diffusion": lambda d=d: list(diffusion.generate(dm, prompt, d)),
                "ar": lambda a=a: list(autoregressive.generate(am, prompt, a))}
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
