"""The line under the metrics when the side that made fewer forward passes still finished later: each side's passes
and the seconds a pass it took in this race, read from its own frames, why a pass over many positions costs more here
than one over a single position, and a GPU's figure, measured elsewhere. It reads the race alone: writing it runs no
model and times nothing, so a recording or an export says what the race it holds says.

Seconds a pass: the time from the side's first frame that counts a pass to its last frame, over the passes made in
between, so the wait before the first pass (loading, a request's latency, the prompt's own pass) is left out. The line
appears only where those figures explain the gap: for each side, its passes x its seconds a pass lies within
EXPLAINED of its time to final (the figure beside it in the metrics), and the sides differ by more than NOISE in
passes and in time."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from app.trace.frames import Frame

EXPLAINED = 0.2  # passes x seconds a pass within this share of the side's time to final: its passes explain its time
NOISE = 0.1  # the sides differ by more than this share in passes and in time, or the gap is noise
# One NVIDIA H200, an 8B-class model (LLaDA-8B's shape), bfloat16, batch 1: a pass over 32 new positions took 21.5 ms
# against 19.7 ms for one new token (measured 2026-11-26 on a GPU, not here: ../shared/reference/gpu-figures.md)
GPU_BLOCK = 32
GPU_BLOCK_COST = 21.5 / 19.7
GPU = "an H200"


@dataclass(frozen=True)
class Paced:
    """One finished side on the forward-pass clock: its title, its passes and time to final (as the metrics show
    them), its tokens a pass, its seconds a pass after its first pass (None with no pass after it), and whether it
    typed (each pass adds one token at the end, nothing hidden: a pass over one new position)."""

    name: str
    passes: int
    seconds: float
    tokens_per_pass: float | None
    per_pass: float | None
    typed: bool

    def explained(self) -> bool:
        """Whether passes x seconds a pass lies within EXPLAINED of the time to final."""
        return self.per_pass is not None and abs(self.passes * self.per_pass - self.seconds) <= EXPLAINED * self.seconds


def _typed(frames: Sequence[Frame]) -> bool:
    """Whether every pass of a side added one token at its end and no frame hid a position (masked, noise or draft):
    how an autoregressive side's frames read, each pass over the one position it writes."""
    counted = [(f.nfe, len(f.tokens)) for f in frames if f.nfe]
    if not counted or any(any(f.masked or ()) or set(f.states or "") - {"a"} for f in frames):
        return False
    pairs = zip(counted, counted[1:-1])  # the last frame may be cut at end-of-text
    return counted[-1][0] - counted[0][0] == len(counted) - 1 and all(
        b_nfe - a_nfe == 1 and b_len == a_len + 1 for (a_nfe, a_len), (b_nfe, b_len) in pairs)


def paced(name: str, metrics: dict[str, Any] | None, frames: Sequence[Frame]) -> Paced | None:
    """A side's figures for the line from its metrics and frames; None for a side that has not reached a final frame
    or counted no passes."""
    if not metrics or metrics.get("final_settled_at") is None or not metrics.get("nfe") or not frames:
        return None
    passes, seconds = int(metrics["nfe"]), float(metrics["t_final"])
    first = next((f for f in frames if f.nfe), None)
    per_pass = None
    if first is not None and passes > (first.nfe or 0) and seconds > first.t:
        per_pass = (seconds - first.t) / (passes - (first.nfe or 0))
    return Paced(name, passes, seconds, metrics.get("tokens_per_nfe"), per_pass, _typed(frames))


def apart(a: float, b: float) -> bool:
    """Whether two figures differ by more than NOISE (the larger over the smaller)."""
    return max(a, b) > (1 + NOISE) * min(a, b)


def slower_with_fewer_passes(sides: Sequence[Paced | None]) -> tuple[Paced, Paced] | None:
    """(the side that made fewer passes yet finished later, the other), where the line explains it: both finished,
    apart in passes and in time, each side's passes x seconds a pass within EXPLAINED of its time, the fewer passes
    fixing more than one token each and costing more each, and the other side's passes typing one; else None."""
    done = [s for s in sides if s is not None]
    if len(done) != 2:
        return None
    fewer, more = sorted(done, key=lambda s: s.passes)
    if not (apart(fewer.passes, more.passes) and apart(fewer.seconds, more.seconds) and fewer.seconds > more.seconds):
        return None
    if not (fewer.explained() and more.explained()) or not more.typed or not (fewer.tokens_per_pass or 0) > 1:
        return None
    return (fewer, more) if (fewer.per_pass or 0) > (more.per_pass or 0) else None


def seconds_text(v: float) -> str:
    """Seconds as the metrics table writes them (app/view/player/common.js `seconds`)."""
    return f"{v:.3f} s" if v < 10 else f"{v:.2f} s"


def ms_text(v: float) -> str:
    """Seconds as milliseconds, three figures or more."""
    ms = v * 1000
    return f"{ms:.0f} ms" if ms >= 100 else f"{ms:.1f} ms" if ms >= 10 else f"{ms:.2f} ms"


def _side(p: Paced) -> str:
    assert p.per_pass is not None
    return (f"{p.passes} passes at {ms_text(p.per_pass)} a pass = {seconds_text(p.passes * p.per_pass)} "
            f"of its {seconds_text(p.seconds)} to final")


def why_line(sides: Sequence[Paced | None]) -> str | None:
    """The one line that says why fewer passes took longer in this race, or None where its figures do not say so."""
    found = slower_with_fewer_passes(sides)
    if found is None:
        return None
    fewer, more = found
    assert fewer.per_pass is not None and more.per_pass is not None
    return (f"Why {more.name} finished first with more forward passes: {fewer.name} made {_side(fewer)}, "
            f"{more.name} {_side(more)} (a side's time a pass: from its first pass to its last, in this race). "
            f"{fewer.name} fixed {fewer.tokens_per_pass:.2f} tokens a pass, so each of its passes ran over many "
            f"positions where each of {more.name}'s ran over the one it wrote; where the arithmetic is the limit, as "
            f"on a CPU, a pass costs more the more positions it runs over, and here each of {fewer.name}'s took "
            f"{fewer.per_pass / more.per_pass:.1f}x one of {more.name}'s. On {GPU} (measured elsewhere, an 8B-class "
            f"model), where reading the weights is the limit, a pass over {GPU_BLOCK} positions costs "
            f"{GPU_BLOCK_COST:.2f}x a one-token pass, "
            f"so there fewer passes finish sooner.")
