"""How parallel and how out of order one diffusion decode was, read from its Steps.

Two questions a viewer asks of the heatmap: does the model commit several tokens per forward pass, and does
it commit them anywhere, or only at the leftmost masked position (which is what an autoregressive model does)?
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from app.engine.diffusion import Step, answer_length


def decode_order(steps: Sequence[Step], block_length: int, eos_id: int) -> dict[str, Any]:
    """Counts over one decode (the all-masked start first, as `diffusion.generate` yields it).

    answer_tokens: positions before the first end-of-text; passes: every call of the network (the last
    step's nfe); commits_per_step: positions committed per step; not_leftmost: commits that are not the
    leftmost masked position of their block when the step began; holes: commits that leave a masked
    position to their left in the block (true out-of-order writing)."""
    commits = not_leftmost = holes = 0
    per_step = []
    for before, step in zip(steps, steps[1:]):
        per_step.append(len(step.committed))
        for pos in step.committed:
            lo = pos // block_length * block_length
            open_before = np.flatnonzero(before.masked[lo:lo + block_length])
            commits += 1
            not_leftmost += bool(len(open_before)) and lo + int(open_before[0]) != pos
            holes += bool(step.masked[lo:pos].any())
    last = steps[-1]
    n = answer_length(last.ids, last.masked, eos_id)
    return {"answer_tokens": n, "passes": last.nfe, "refreshes": last.refreshes, "steps": len(per_step),
            "commits": commits, "commits_per_step": per_step, "not_leftmost": not_leftmost, "holes": holes}


def commit_steps(steps: Sequence[Step]) -> np.ndarray:
    """For each answer position, the step (1 = the first after the all-masked start) whose commit it kept: the
    decode's trajectory, which `train.py --order-frac` replays as the states the sampler saw. 0 = never committed."""
    order = np.zeros(len(steps[0].ids), dtype=np.int64)
    for i, step in enumerate(steps[1:], start=1):
        order[step.remasked] = 0
        order[step.committed] = i
    return order


def summarise(runs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Pooled figures over several decodes: tokens per pass, commits per step (mean and median) and the
    shares of commits that were not the leftmost masked position, or left a hole."""
    tokens = sum(r["answer_tokens"] for r in runs)
    passes = sum(r["passes"] for r in runs)
    commits = sum(r["commits"] for r in runs)
    per_step = [c for r in runs for c in r["commits_per_step"]]
    return {
        "answer_tokens_per_pass": round(tokens / passes, 2) if passes else None,
        "worst_answer_tokens_per_pass": min((round(r["answer_tokens"] / r["passes"], 2) for r in runs if r["passes"]),
                                            default=None),
        "passes": passes, "refreshes": sum(r["refreshes"] for r in runs),
        "mean_commits_per_step": round(float(np.mean(per_step)), 2) if per_step else None,
        "median_commits_per_step": float(np.median(per_step)) if per_step else None,
        "share_not_leftmost": round(sum(r["not_leftmost"] for r in runs) / commits, 3) if commits else None,
        "share_leaving_a_hole": round(sum(r["holes"] for r in runs) / commits, 3) if commits else None,
    }
