"""The forward process: the noising a masked-diffusion model is trained to reverse, played on a recorded answer.

Training takes finished text, masks a random share t of its positions and asks the model to restore them;
decoding runs that backwards, from everything masked (t = 1) to nothing (t = 0). Here a recording's final
answer is masked in a random order, nested (a masked position stays masked), from t = 0 to t = 1, each frame
noting t. The result is a recording like any other, so the player, the page and the exports show it; no model runs.
"""

from __future__ import annotations

import random

from app.analysis.changes import display_tokens
from app.trace.frames import Frame, Recording, make_header

STEPS = 20
SECONDS_PER_STEP = 0.25  # the animation's pace at 1x: 20 steps in 5 s
NAME = "forward process"


def t_note(t: float, masked: int, total: int) -> str:
    """The line a forward-process frame shows: 't = 0.35: 22 of 64 positions masked (34%)'."""
    return f"t = {t:.2f}: {masked} of {total} positions masked ({masked / total:.0%})"


def forward_frames(final: Frame, steps: int = STEPS, seed: int = 0) -> list[Frame]:
    """`final`'s tokens masked step by step: frame k masks round(k/steps x n) positions, the first ones of one
    random order (so once masked a position stays masked), from none at t = 0 to all at t = 1."""
    tokens = display_tokens(final)
    n = len(tokens)
    if not n or steps < 1:
        raise ValueError("the forward process needs an answer with at least one token and at least one step")
    order = random.Random(seed).sample(range(n), n)
    frames = []
    for k in range(steps + 1):
        t = k / steps
        count = round(t * n)
        hidden = set(order[:count])
        masked = [i in hidden for i in range(n)]
        frames.append(Frame(t=k * SECONDS_PER_STEP, step=k, tokens=["" if m else tok for tok, m in zip(tokens, masked)],
                            masked=masked, final=k == steps, note=t_note(t, count, n)))
    return frames


def forward_recording(rec: Recording, side: str = "left", steps: int = STEPS, seed: int = 0) -> Recording:
    """A recording of the forward process on `side`'s final answer (left), beside that side's own run (right),
    the reverse direction that wrote the answer."""
    frames = rec.frames.get(side) or []
    if not frames:
        raise ValueError(f"the recording has no {side} frames to take an answer from")
    source = rec.header["sources"].get(side, {"name": side, "settings": {}})
    header = {**make_header(str(rec.header.get("prompt", "")),
                            {"left": {"name": NAME, "settings": {"steps": steps, "seed": seed}}, "right": source}),
              "caption": f"The forward process: the answer {source['name']} wrote, masked step by step at random "
                         "(left), beside the run that wrote it (right)."}
    ends = {"left": {"status": "done", "message": "Noising only: no model runs here, so this side's chart line and "
                                                  "rate measure nothing."},
            "right": rec.ends.get(side, {"status": "done", "message": ""})}
    return Recording(header=header, frames={"left": forward_frames(frames[-1], steps, seed), "right": list(frames)},
                     ends=ends, warnings=[])
