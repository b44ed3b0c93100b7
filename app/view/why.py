"""The CPU result explained where it is seen: when the side that made fewer forward passes (diffusion, several tokens
a pass) still finishes after the other (one token a pass) in seconds, the metrics say why in one line, with what a
pass over a block costs against a one-token pass on this machine and on a GPU measured elsewhere."""

from __future__ import annotations

import functools
from typing import Any, Callable

from app.errors import UserError
from app.measure.pass_cost import iter_rounds, twin_pass

BLOCK = 32  # positions a block pass recomputes, as in the GPU figure below
# One NVIDIA H200, an 8B-class model (LLaDA-8B's shape), bfloat16, batch 1: a pass over 32 new positions took 21.5 ms
# against 19.7 ms for one new token (measured 2026-11-26 on a GPU, not here: ../shared/reference/gpu-figures.md)
GPU_BLOCK_COST = 21.5 / 19.7
GPU = "an H200"
REPEATS = 7  # timed passes per point: enough for a ratio, quick on the tiny twin


@functools.lru_cache(maxsize=1)
def cpu_block_cost() -> float | None:
    """A pass of the diffusion twin over BLOCK positions against a pass over one, timed on this machine as the
    pass-cost sweep times them (app/measure/pass_cost.py), once per process; None without the twin."""
    from app.engine.model import DEFAULT_MODELS_DIR, load_twin

    try:
        model, _ = load_twin("diffusion", DEFAULT_MODELS_DIR)
    except (UserError, OSError, ValueError, KeyError):
        return None
    rounds = list(iter_rounds(lambda n: twin_pass(model, n), (1, BLOCK), REPEATS))
    ms = {row["positions"]: row["ms"] for row in rounds[-1][0]}
    return ms[BLOCK] / ms[1] if ms.get(1) else None


def slower_with_fewer_passes(metrics: dict[str, Any]) -> tuple[str, str] | None:
    """(the side that made fewer forward passes yet reached its final answer later, the other side), or None: both
    sides must have finished and counted their passes."""
    done = {s: m for s, m in metrics.items() if m and m.get("t_final") is not None and m.get("nfe")}
    if len(done) != 2:
        return None
    a, b = sorted(done, key=lambda s: done[s]["nfe"])
    return (a, b) if done[a]["nfe"] < done[b]["nfe"] and done[a]["t_final"] > done[b]["t_final"] else None


def why_line(metrics: dict[str, Any], cost: Callable[[], float | None] | None = None) -> str | None:
    """The one line that says why fewer passes took longer here, or None where they did not (or no cost is known);
    `cost` gives the block pass's cost against a one-token pass (this machine's, `cpu_block_cost`, by default)."""
    sides = slower_with_fewer_passes(metrics)
    if sides is None:
        return None
    here = (cost or cpu_block_cost)()
    if here is None:
        return None
    fewer, more = sides
    return (f"Why {more} finished first with more forward passes: on this machine a pass over a block of {BLOCK} "
            f"positions costs {here:.1f}x a one-token pass (the pass-cost sweep's measurement), so {fewer}'s fewer "
            f"passes cost more each; on {GPU} (measured elsewhere, an 8B-class model) it costs "
            f"{GPU_BLOCK_COST:.2f}x, and fewer passes finish sooner.")
