"""Start from a draft, per source (issue 53): each side's `Plan` from the race's one `Revision`, and its frames'
letters.

`plan_for` is the one place a side's plan is made: a source calls it with the draft in its own tokenizer's ids and,
for `unsure`, a way to read its model's doubt, and gets the positions to re-noise and how it revises: `revise` (a
diffusion model in place), `prefix` (an autoregressive model keeps the draft up to the first re-noised position and
writes the rest again) or `cannot` (`cannot`: a source with no way to start from text writes from nothing, and says
so). The Hugging Face families that decode their own way (app/sources/hf.py) call it with their own tokenizer.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from app.engine.draft import Plan, Revision, choose, letters
from app.errors import UserError, counted
from app.trace.frames import SIDES
from app.trace.reading import RecordingError, read_recording
from app.trace.store import is_id, locate

MODES = ("revise", "prefix", "cannot")


def plan_for(revision: Revision, source: str, draft_ids: Sequence[int], mode: str, gen_length: int,
             doubt: Callable[[], np.ndarray] | None = None, doubt_passes: int = 1) -> Plan:
    """`source`'s plan for `revision`, its draft tokenized as `draft_ids`: the positions to re-noise (`choose`; for
    `unsure`, `doubt()` gives each draft token's surprisal in `doubt_passes` forward passes, counted in the plan's
    nfe, and their seconds in its `seconds`, where the side's clock starts) and, for `prefix`, how much of the draft
    it keeps. A UserError naming the fix when the draft cannot fit."""
    if mode not in ("revise", "prefix"):
        raise ValueError(f"plan_for makes revise and prefix plans, not {mode!r} (see `cannot`)")
    ids = tuple(int(i) for i in draft_ids)
    if not ids:
        raise UserError(f"The draft has no tokens for {source}: type some text to start from, or start from nothing.")
    if len(ids) > gen_length:
        raise UserError(f"The draft is {counted(len(ids), 'token')} for {source} but its answer is {gen_length}: "
                        f"raise the answer length to {len(ids)} or more, or shorten the draft.")
    uncertainty, seconds = None, 0.0
    if revision.where == "unsure":
        if doubt is None:
            raise UserError(f"{source} cannot say which positions it is least sure of: "
                            "re-noise random positions or a span instead.")
        began = time.monotonic()
        uncertainty = np.asarray(doubt(), dtype=np.float64)
        seconds = time.monotonic() - began
    renoised = choose(len(ids), revision, uncertainty)
    passes = doubt_passes if uncertainty is not None else 0
    if mode == "revise":
        return Plan(ids, renoised, "revise", nfe=passes, seconds=seconds)
    kept = min(renoised) if renoised else len(ids)
    note = (f"{source} cannot revise in place: it keeps the draft's first {counted(kept, 'token')}, up to the first "
            "re-noised position, and writes the rest again.")
    return Plan(ids, renoised, "prefix", kept_prefix=kept, note=note, nfe=passes, seconds=seconds)


def cannot(source: str, why: str = "it takes no text to start from") -> Plan:
    """The plan of a source that cannot start from a draft: it writes from nothing, and says so in one sentence.
    Why run rather than refuse: the race still shows that side's answer beside the revision, and says which it is."""
    return Plan((), (), "cannot", note=f"{source} cannot start from a draft ({why}), so it writes from nothing.")


def revision_letters(plan: Plan, ids: Sequence[int] | np.ndarray, open_: Sequence[bool] | np.ndarray) -> str | None:
    """A frame's `revision` letters (app/engine/draft.py `letters`) from token ids, compared id for id with the
    draft's; a draft position open now (re-noised, or a draft token the sampler remasked) is `r`. None for a side
    that does not start from the draft."""
    if plan.mode == "cannot":
        return None
    flags = [bool(o) for o in open_]
    gone = set(plan.renoised) | {i for i, o in enumerate(flags[: len(plan.tokens)]) if o}
    return letters([str(t) for t in plan.tokens], gone, [str(int(t)) for t in ids], flags)


def header_entry(plan: Plan, display: list[str] | None) -> dict[str, Any]:
    """A side's `draft` in the header's sources entry (`Plan.to_json`), its tokens as display strings."""
    return plan.to_json(display if plan.mode != "cannot" else None)


def recorded_answer(ref: str, owner: str | None = None, paths: bool = True) -> str:
    """The final answer of one side of a recording, `NAME[#side]` (left by default), as a draft to start from. NAME
    is a library id ("example/...", "user/..." in `owner`'s own folder) or, with `paths` (the command line), a file;
    a UserError naming the fix when there is no such recording or that side never finished."""
    name, _, side = ref.partition("#")
    side = side or "left"
    if side not in SIDES:
        raise UserError(f"Side must be left or right, not {side!r}: write NAME#left or NAME#right.")
    if not name:
        raise UserError("Name the recording to start from, like @example/NAME.jsonl#left.")
    if is_id(name):
        path: str | Path = locate(name, owner)
    elif paths:
        path = name
    else:
        raise UserError("Start from a recording in the list (example/NAME.jsonl or user/NAME.jsonl), not a file path.")
    try:
        recording = read_recording(path)
    except RecordingError as e:
        raise UserError(str(e)) from None
    frames = recording.frames[side]
    last = frames[-1] if frames else None
    text = (last.text if last.text is not None else "".join(last.tokens)) if last is not None and last.final else ""
    if not text.strip():
        raise UserError(f"The {side} side of {Path(name).name} has no finished answer to start from: "
                        "pick the other side or another recording.")
    return text
