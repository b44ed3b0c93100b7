"""Fits the built-in diffusion twin's commit filter from its own decoding: `python -m app.engine.fit_filter`.

Decodes openings of training stories one token per pass (confidence order, temperature 0, blocks of 16), and
again as a perfect filter would, and fits app/engine/commit_filter.py's network to say which guesses were final.
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


def main(argv: list[str] | None = None) -> None:
    """Fits the built-in diffusion twin's filter from its own decoding of training-story openings."""
    from app.engine.model import DEFAULT_MODELS_DIR, load_twin
    from app.engine.train import read_stories, split_stories

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=str(DEFAULT_MODELS_DIR),
                    help="folder with diffusion.safetensors and tokenizer.json")
    ap.add_argument("--corpus", nargs="+", required=True,
                    help="the twins' training stories (openings are drawn from them)")
    ap.add_argument("--prompts", type=int, default=200, help="openings to decode")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    start = time.time()
    model, tok = load_twin("diffusion", args.models)
    train, _ = split_stories(read_stories(args.corpus), 1337)  # the training side only: held-out stories stay unseen
    rng = np.random.default_rng(args.seed)
    prompts = [tok.encode(train[int(i)])[: int(rng.integers(3, 13))] for i in rng.integers(0, len(train), args.prompts)]
    settings = replace(diffusion.DiffusionSettings(), block_length=16, scoring="confidence", temperature=0.0,
                       steps=128, threshold=None, filter=0.5)
    X, y = collect(model, prompts, settings, diffusion.generate)
    f = fit(X, y)
    f.about = {"rows": int(len(y)), "positive": round(float(y.mean()), 3), "prompts": args.prompts,
               "reference": "one token per pass, confidence order, temperature 0, blocks of 16, 128 tokens",
               "seconds": round(time.time() - start, 1), "features": list(FEATURES),
               "train_accuracy": round(float(((f.score(X) > 0.5) == (y > 0.5)).mean()), 3)}
    f.save(Path(args.models) / "diffusion.filter.safetensors")
    print(json.dumps(f.about))


if __name__ == "__main__":
    main()
