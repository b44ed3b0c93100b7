"""The watch pace, as the player replays a race and the exports time it: declared once in theme.json (`paces`,
`pace`), which the player's timeline.js reads as THEME.paces and THEME.pace.

A run whose every side with frames reports forward passes (a model on this machine) and that ended in under the pace
is stretched to last the pace (never sped up); any other run, and the forward-pass clock, keep their own timing.
`pace_factor` is the player's `paceFactor()` (app/view/player/timeline.js) in Python: the share of real time a replay
runs at, so the page's GIF and MP4 and `python -m app export` last as long as the replay the viewer watched.
"""

from __future__ import annotations

from app.trace.frames import Recording
from app.view.theme import THEME

PACES: tuple[float, ...] = tuple(float(v) for v in THEME["paces"])  # seconds; 0 is real time
PACE: float = float(THEME["pace"])  # the player's default watch pace
HOLD: float = 2.5  # seconds an export holds its last frame by default, so a slide shows the result
HOLD_MAX: float = 30.0  # the most the page's export box offers


def watchable(rec: Recording, clock: str = "time") -> bool:
    """Whether the watch pace applies: the time clock, and every side with frames reports forward passes."""
    sides = [frames for frames in rec.frames.values() if frames]
    return clock != "passes" and bool(sides) and all(frames[-1].nfe is not None for frames in sides)


def pace_factor(rec: Recording, clock: str = "time", pace: float = PACE) -> float:
    """The share of real time a replay at `pace` seconds runs at: end / pace for a watchable run that ended sooner,
    else 1."""
    end = max((frames[-1].t for frames in rec.frames.values() if frames), default=0.0)
    if pace > 0 and watchable(rec, clock) and 0 < end < pace:
        return end / pace
    return 1.0
