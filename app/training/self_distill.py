"""Self-distillation data: the diffusion twin writes stories at the page's defaults, which it then learns from.

`python -m app.training.self_distill --corpus ../shared/corpus/tinystories-*.txt --out self.npz --minutes 30 --jobs 2`,
then `python -m app.training.train --twin diffusion --init-from assets/models/diffusion.safetensors --kd-data self.npz
--certainty 1.0 ...` (the whole command and what it gave: docs/twins.md).

dParallel (Chen et al. 2025) trains a diffusion model with certainty forcing on its own answers rather than on a
teacher's or the corpus's text: its own greedy text is one mode of its predictions, so learning it makes several
positions sure at once without teaching it another writer's style. Openings are the first sentence (at most 28
tokens) or the first 3 to 12 tokens of training stories and of three name-swapped copies of each
(app/training/augment.py); held-out stories are never used. Each answer is written as the page writes it
(`TWIN_DIFFUSION`, `--gen-length` tokens) and ends with end-of-text, where the twin wrote one or where the answer was
cut. With `--temperature` above 0 the twin samples its guesses instead (one seed per story), for stories that vary more
than its greedy favourites. Each story keeps its trajectory (the decode step that wrote each token), which
`train.py --order-frac` lays out as the states the sampler passed through. The writer is numpy only: one process per
core with `--jobs`.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from dataclasses import replace
from typing import Any

import numpy as np

from app.engine import diffusion
from app.engine.parallel import commit_steps
from app.training.stories import (
    FIRST_SENTENCE,
    NEVER,
    PROMPT,
    SPLIT_SEED,
    command_line,
    read_stories,
    save_stream,
    split_stories,
)

OPENING_MAX = 28  # tokens of a first-sentence opening


def training_openings(tok: Any, corpus: list[str], n: int, seed: int) -> list[list[int]]:
    """`n` openings from the training side of the split and three name-swapped copies of it, shuffled by `seed`: a
    story's first sentence (seven in ten, at most OPENING_MAX tokens), else its first 3-12 tokens."""
    from app.training.augment import augmented

    train, _ = split_stories(read_stories(corpus), SPLIT_SEED)
    pool = train + augmented(train, 3, SPLIT_SEED)
    rng = random.Random(seed)
    rng.shuffle(pool)
    out = []
    for story in (s.strip() for s in pool[:n]):
        sentence = FIRST_SENTENCE.match(story)
        if sentence and rng.random() < 0.7:
            out.append(tok.encode(sentence.group(1))[:OPENING_MAX])
        else:
            out.append(tok.encode(story)[: rng.randint(3, 12)])
    return out


def write(job: tuple[str, list[list[int]], int, float, float, int]) -> list[tuple[list[int], list[int]]]:
    """One process's stories: the opening, the twin's answer at the page's defaults (sampled at `temperature`, story i
    with seed `seed + i`), end-of-text; until its openings or its minutes run out. Empty answers are dropped. Each comes
    with its trajectory: the decode step that wrote each token (stories.PROMPT for the opening, stories.NEVER for an
    end-of-text appended to a cut answer)."""
    from app.engine.model import load_twin

    folder, prompts, gen_length, minutes, temperature, seed = job
    model, _ = load_twin("diffusion", folder)
    settings = replace(diffusion.TWIN_DIFFUSION, gen_length=gen_length, steps=gen_length,
                       temperature=temperature).validate()
    start, stories = time.time(), []
    for i, prompt in enumerate(prompts):
        if time.time() - start > 60 * minutes:
            break
        steps = list(diffusion.generate(model, prompt, replace(settings, seed=(seed + i) % 10_000)))
        n = diffusion.answer_length(steps[-1].ids, steps[-1].masked, model.eos_id)
        if n:
            order = commit_steps(steps)
            end = int(order[n]) if n < len(order) and order[n] else NEVER
            stories.append(([*prompt, *steps[-1].ids[:n].tolist(), model.eos_id],
                            [PROMPT] * len(prompt) + order[:n].tolist() + [end]))
    return stories


def main(argv: list[str] | None = None) -> dict:
    """Writes the twin's own stories to --out (the .npz app.training.train reads with --kd-data); returns their
    stats."""
    from app.engine.model import DEFAULT_MODELS_DIR, load_twin

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=str(DEFAULT_MODELS_DIR), help="folder with the diffusion twin and its filter")
    ap.add_argument("--corpus", nargs="+", required=True,
                    help="the twins' training stories (openings come from the training side of the split)")
    ap.add_argument("--out", required=True, help=".npz with the token stream and story starts")
    ap.add_argument("--stories", type=int, default=100_000, help="at most this many openings")
    ap.add_argument("--minutes", type=float, default=30.0, help="each process stops after this long")
    ap.add_argument("--gen-length", type=int, default=diffusion.TWIN_DIFFUSION.gen_length)
    ap.add_argument("--temperature", type=float, default=diffusion.TWIN_DIFFUSION.temperature,
                    help="sample the twin's guesses at this temperature (0: greedy, the page's default)")
    ap.add_argument("--jobs", type=int, default=1, help="processes that write (one per core)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    start = time.time()
    _, tok = load_twin("diffusion", args.models)
    prompts = training_openings(tok, args.corpus, args.stories, args.seed)
    jobs = [(args.models, prompts[i :: args.jobs], args.gen_length, args.minutes, args.temperature, 1000 * i)
            for i in range(args.jobs)]
    if args.jobs > 1:  # each process loads the twin itself (a spawned process shares nothing)
        from multiprocessing import get_context

        with get_context("spawn").Pool(args.jobs) as workers:
            parts = workers.map(write, jobs)
    else:
        parts = [write(jobs[0])]
    stories = [s for part in parts for s, _ in part]
    orders = [o for part in parts for _, o in part]
    starts = np.cumsum([0, *(len(s) for s in stories)])[:-1]
    stats = {"teacher": "the diffusion twin itself at the page's defaults", "models": args.models,
             "temperature": args.temperature,
             "stories": len(stories), "tokens": int(sum(len(s) for s in stories)), "gen_length": args.gen_length,
             "seconds": round(time.time() - start, 1), "jobs": args.jobs,
             "command": command_line("app.training.self_distill", argv)}
    save_stream(args.out, [t for s in stories for t in s], starts.tolist(), stats, [o for s in orders for o in s])
    print(json.dumps(stats), flush=True)
    return stats


if __name__ == "__main__":
    main()
