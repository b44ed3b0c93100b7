"""Fits the built-in diffusion twin's commit filter from its own decoding: `python -m app.training.fit_filter`.

Decodes openings of training stories one token per pass with the page's own settings for the twin (its order, blocks and
guards: a filter fitted to another decoding learns another decoding's final tokens), and again as a perfect filter
would, and fits app/engine/commit_filter.py's network to say which guesses were final. `--jobs` decodes the openings
in that many processes.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from app.engine import diffusion
from app.engine.commit_filter import FEATURES, collect, fit
from app.training.stories import SPLIT_SEED, read_stories, split_stories

REFERENCE = "one token per pass, the page's settings for the twin (app.engine.diffusion.TWIN_DIFFUSION), 128 tokens"


def reference_settings() -> diffusion.DiffusionSettings:
    """The decoding the filter learns to shorten: the page's twin settings, one token per pass (no threshold; the
    filter level only lets the perfect filter's picks through)."""
    twin = diffusion.TWIN_DIFFUSION
    return replace(twin, threshold=None, filter=0.5, steps=twin.gen_length)


def _rows(job: tuple[str, list[list[int]]]) -> tuple[np.ndarray, np.ndarray]:
    """Feature rows and labels of some openings (one process's share)."""
    from app.engine.model import load_twin

    model, _ = load_twin("diffusion", job[0])
    return collect(model, job[1], reference_settings(), diffusion.generate)


def main(argv: list[str] | None = None) -> None:
    """Fits the built-in diffusion twin's filter from its own decoding of training-story openings."""
    from app.engine.model import DEFAULT_MODELS_DIR, load_twin

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=str(DEFAULT_MODELS_DIR),
                    help="folder with diffusion.safetensors and tokenizer.json")
    ap.add_argument("--corpus", nargs="+", required=True,
                    help="the twins' training stories (openings are drawn from them)")
    ap.add_argument("--prompts", type=int, default=200, help="openings to decode")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=1, help="processes that decode the openings (one per core)")
    args = ap.parse_args(argv)
    start = time.time()
    model, tok = load_twin("diffusion", args.models)
    train, _ = split_stories(read_stories(args.corpus), SPLIT_SEED)  # the training side: held-out stories stay unseen
    rng = np.random.default_rng(args.seed)
    prompts = [tok.encode(train[int(i)])[: int(rng.integers(3, 13))] for i in rng.integers(0, len(train), args.prompts)]
    if args.jobs > 1:  # each process loads the twin itself (a spawned process shares nothing)
        from multiprocessing import get_context

        with get_context("spawn").Pool(args.jobs) as pool:
            parts = pool.map(_rows, [(args.models, prompts[i::args.jobs]) for i in range(args.jobs)])
    else:
        parts = [collect(model, prompts, reference_settings(), diffusion.generate)]
    X, y = np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])
    f = fit(X, y)
    f.about = {"rows": int(len(y)), "positive": round(float(y.mean()), 3), "prompts": args.prompts,
               "reference": REFERENCE, "jobs": args.jobs,
               "seconds": round(time.time() - start, 1), "features": list(FEATURES),
               "train_accuracy": round(float(((f.score(X) > 0.5) == (y > 0.5)).mean()), 3)}
    f.save(Path(args.models) / "diffusion.filter.safetensors")
    print(json.dumps(f.about))


if __name__ == "__main__":
    main()
