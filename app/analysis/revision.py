"""A side that started from a draft (issue 53): its frames' `revision` letters, its plan from the header, and the
counts the metrics add: how many of the final answer's tokens are the draft's own (kept) and how many the side changed
from the draft (edited).

The letters (app/trace/frames.py REVISION) are one a token, so they line up with a row's tokens and states as they
are; a frame without them (every recording before issue 53) means no draft, and nothing here adds anything for it.
"""

from __future__ import annotations

from typing import Any

from app.trace.frames import Frame

KEPT, EDITED, RENOISED, BEYOND = "k", "e", "r", "."  # app/engine/draft.py's letters, as a recording carries them
MODES = ("revise", "prefix", "cannot")  # how a side revises (app/engine/draft.py Plan)
MAX_NOTE = 300  # a plan's note is one sentence; a longer one is cut (a damaged or hostile header)


def first_codes(codes: list[int], letters: str | None) -> list[int]:
    """A side's first row's change codes with the draft's kept tokens quiet: they stood before the run began, as
    pinned text does, so the first frame shows the draft rather than a burst of new tokens."""
    if not letters:
        return codes
    return [0 if i < len(letters) and letters[i] == KEPT else c for i, c in enumerate(codes)]


def counts(frames: list[Frame]) -> dict[str, int]:
    """The metrics a revising side adds, from its latest frame's letters: `draft_kept` (the draft's own tokens),
    `draft_edited` (tokens the draft did not have there) and `draft_positions` (the draft positions the answer
    covers); empty for a side without a draft."""
    letters = next((f.revision for f in reversed(frames) if f.revision is not None), None)
    if letters is None:
        return {}
    return {"draft_kept": letters.count(KEPT), "draft_edited": letters.count(EDITED),
            "draft_positions": len(letters) - letters.count(BEYOND)}


def _positions(value: Any) -> list[int]:
    if not isinstance(value, list):
        return []
    return sorted({p for p in value if isinstance(p, int) and not isinstance(p, bool) and p >= 0})


def plan(source: dict[str, Any]) -> dict[str, Any] | None:
    """A side's plan as the header's `sources[side].draft` holds it (app/engine/draft.py Plan.to_json), checked and
    trimmed to what the view draws: mode, renoised, length, tokens, kept_prefix, note; None without one (or a
    damaged one)."""
    value = source.get("draft") if isinstance(source, dict) else None
    if not isinstance(value, dict) or value.get("mode") not in MODES:
        return None
    tokens = value.get("tokens")
    tokens = [t for t in tokens if isinstance(t, str)] if isinstance(tokens, list) else []
    length = value.get("length")
    out: dict[str, Any] = {"mode": value["mode"], "renoised": _positions(value.get("renoised")),
                           "length": length if isinstance(length, int) and length >= 0 else len(tokens),
                           "tokens": tokens}
    kept = value.get("kept_prefix")
    if isinstance(kept, int) and not isinstance(kept, bool) and kept >= 0:
        out["kept_prefix"] = kept
    note = value.get("note")
    if isinstance(note, str) and note.strip():
        out["note"] = note.strip()[:MAX_NOTE]
    return out
