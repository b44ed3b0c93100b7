"""Keeps the self-distilled stories the AR twin reads most fluently: `python -m app.training.pick_stories IN --out OUT`.

A twin self-distilled on its own sampled stories (temperature 0.7) settles at the quality of those samples
(docs/twins.md: round 4's text stayed near the perplexity of what it learned from, however many tokens it committed a
pass). Like ReST and RAFT, this keeps the stories a judge scores best. Those with an adjacent repeated word are dropped;
of the rest, the share `--keep` with the lowest negative log-likelihood per answer token under the AR twin stays, with
its trajectory. The AR twin judges here; the referee, which judges the bench, never sees these stories.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import numpy as np

from app.measure.quality import nll, stutter
from app.training.stories import PROMPT, command_line, load_orders, load_streams, save_stream


def spans(starts: np.ndarray, total: int) -> list[tuple[int, int]]:
    """(first, past-the-end) of each story of a stream of `total` tokens whose stories start at `starts`."""
    return list(zip(starts.tolist(), [*starts[1:].tolist(), total]))


def story_scores(ar: Any, tok: Any, tokens: np.ndarray, starts: np.ndarray,
                 orders: np.ndarray) -> list[float | None]:
    """Each story's AR-twin NLL per answer token (its end-of-text included), or None for a story that stutters or has
    no answer. A story is opening (orders PROMPT), answer, end-of-text."""
    out: list[float | None] = []
    for a, b in spans(starts, len(tokens)):
        n_prompt = int(np.argmax(orders[a:b] != PROMPT))
        prompt, answer = tokens[a:a + n_prompt].tolist(), tokens[a + n_prompt:b].tolist()
        repeats, _ = stutter([tok.decode(answer[:-1])])
        out.append(None if repeats or len(answer) < 2 else nll(ar, prompt, answer) / len(answer))
    return out


def picked(scores: list[float | None], keep: float) -> list[int]:
    """Indices, in their order, of the share `keep` of all stories with the lowest scores (stutterers never)."""
    ranked = sorted((s, i) for i, s in enumerate(scores) if s is not None)
    return sorted(i for _, i in ranked[:round(keep * len(scores))])


def main(argv: list[str] | None = None) -> dict:
    """Writes the kept stories, with their trajectories, as an .npz `train.py --kd-data` reads; returns its stats."""
    from app.engine.model import DEFAULT_MODELS_DIR, load_twin

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("stories", nargs="+", help=".npz files written by app.training.self_distill")
    ap.add_argument("--out", required=True)
    ap.add_argument("--keep", type=float, default=0.5, help="share of all stories to keep")
    ap.add_argument("--models", default=str(DEFAULT_MODELS_DIR), help="folder with the AR twin that judges")
    args = ap.parse_args(argv)
    tokens, starts, stats = load_streams(args.stories)
    orders = load_orders(args.stories)
    ar, tok = load_twin("ar", args.models)
    scores = story_scores(ar, tok, tokens, starts, orders)
    kept = picked(scores, args.keep)
    every = spans(starts, len(tokens))
    chosen = [every[i] for i in kept]
    stream = [t for a, b in chosen for t in tokens[a:b].tolist()]
    new_orders = [o for a, b in chosen for o in orders[a:b].tolist()]
    new_starts = np.cumsum([0, *(b - a for a, b in chosen)])[:-1].tolist()
    summary = {"teacher": "stories picked by the AR twin's NLL per answer token", "from": stats,
               "stories": len(kept), "tokens": len(stream), "of": len(scores), "keep": args.keep,
               "stuttered": sum(s is None for s in scores),
               "nll_per_token": {"all": _mean([s for s in scores if s is not None]),
                                 "kept": _mean([s for i in kept if (s := scores[i]) is not None])},
               "command": command_line("app.training.pick_stories", argv)}
    save_stream(args.out, stream, new_starts, summary, new_orders)
    print(json.dumps({k: v for k, v in summary.items() if k != "from"}), flush=True)
    return summary


def _mean(values: list[float]) -> float | None:
    return round(float(np.mean(values)), 4) if values else None


if __name__ == "__main__":
    main()
