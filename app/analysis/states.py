"""Schema 2's per-position states between two frames: change codes, alignment across insertions and deletions, and
the chain that says from which frame each position holds its final token and keeps it.

A frame with `states` (app/trace/frames.py STATES: m masked, n noise, d draft, a accepted) or with `inserted` /
`deleted` lists is aligned with the side's frame before it by those lists alone: the previous frame's positions less
the deleted ones pair, in order, with this frame's positions less the inserted ones (never guessed); without the
lists, position i continues position i. Each position then gets a change code: the schema 1 codes (new, changed,
remasked) and three more, edited (an accepted token replaced by another), re-noised (an accepted or draft position
back to noise) and inserted (a position the frame before did not have). A frame without states reads its `masked`
flags as masked or accepted, so schema 1 frames mean what they always meant.
"""

from __future__ import annotations

from typing import Any, Iterator

from app.trace.cancel import checkpoint
from app.trace.frames import Frame

# The change codes, declared once: a code is its index here. The player reads these names (app/view/theme.py puts them
# in the theme as `codes`), the browser race's rows too (twins.json's `analysis`), and the video finds each one's
# style and heat colour by name in app/view/theme.json.
CODE_NAMES = ("unchanged", "new", "changed", "remasked", "edited", "renoised", "inserted")
UNCHANGED, NEW, CHANGED, REMASKED, EDITED, RENOISED, INSERTED = range(len(CODE_NAMES))
SHOWN = "da"  # states whose token is on screen as the model's (a draft or accepted); noise is random, masked is none


def has_edits(frame: Frame) -> bool:
    """Whether a token frame speaks schema 2: it carries states, or lists inserted or deleted positions."""
    return bool(frame.tokens) and (frame.states is not None or frame.inserted is not None
                                   or frame.deleted is not None)


def frame_states(frame: Frame) -> str:
    """One state letter per token: the frame's own, or for a schema 1 frame masked ("m") or accepted ("a")."""
    if frame.states is not None:
        return frame.states
    masked = frame.masked or [False] * len(frame.tokens)
    return "".join("m" if m else "a" for m in masked)


def previous_positions(before: int, now: int, inserted: list[int] | None, deleted: list[int] | None) -> list[int]:
    """For each of `now` positions, the position of the previous frame (of `before`) it continues, or -1 (inserted).

    With either list the positions that are neither inserted nor deleted pair in order; a list naming positions out
    of range is read for the ones in range. Without lists, position i continues position i. A frame's checkpoint:
    cancelled work stops here (app/trace/cancel.py)."""
    checkpoint()
    if inserted is None and deleted is None:
        return [i if i < before else -1 for i in range(now)]
    added, dropped = set(inserted or ()), set(deleted or ())
    kept = iter([j for j in range(before) if j not in dropped])
    return [-1 if i in added else next(kept, -1) for i in range(now)]


def transition(before: str, token_before: str, now: str, token: str) -> int:
    """The change code of one position from (state, token) in the frame before to (state, token) now."""
    if now == "m":
        return REMASKED if before != "m" else UNCHANGED
    if now == "n":
        return RENOISED if before in SHOWN else UNCHANGED
    if before in "mn" or (now == "a" and before == "d"):
        return NEW
    if token == token_before:
        return UNCHANGED
    return EDITED if before == now == "a" else CHANGED


def codes(prev: list[str], prev_states: str, tok: list[str], states: str, back: list[int],
          inserted: list[int] | None) -> list[int]:
    """Change codes of a schema 2 frame against the one before, its positions paired by `back`
    (previous_positions)."""
    added = set(inserted or ())
    out = []
    for i, (j, s) in enumerate(zip(back, states)):
        if i in added:
            out.append(INSERTED)
        elif j < 0:
            out.append(NEW if s in SHOWN else UNCHANGED)
        else:
            out.append(transition(prev_states[j], prev[j], s, tok[i]))
    return out


def dropped(prev: list[str], back: list[int], deleted: list[int] | None, now: int) -> list[list[Any]]:
    """The previous frame's deleted positions as [previous position, position of this frame it stands before (`now`
    past the end), token], so a deleted token can be drawn, struck through, where it was. One pass over the two
    frames (a scan from the end finds each position's next kept one), so a frame deleting D of N positions costs
    D + N, not D x N."""
    if not deleted:
        return []
    before = len(prev)
    kept_at = [-1] * before  # each previous position's place in this frame (-1: not kept)
    for i, j in enumerate(back):
        if 0 <= j < before:
            kept_at[j] = i
    stands = [now] * before  # one pass from the end: the place of the first kept position after each one
    ahead = now
    for j in range(before - 1, -1, -1):
        stands[j] = ahead
        if kept_at[j] >= 0:
            ahead = kept_at[j]
    return [[j, stands[j], prev[j]] for j in sorted(p for p in set(deleted) if p < before)]


def columns(rows: list[dict[str, Any]]) -> tuple[list[list[int]], int]:
    """Per row, the heatmap column of each position, and the number of columns: a position keeps its column across
    insertions and deletions (a deleted one's column stays, empty, after it), so the heatmap's columns stay aligned
    when an answer's length changes. The player (common.js lineColumns) draws by the same rule."""
    following: dict[int, int] = {}  # the columns in order, as a linked list of lines (one line per position's life)
    head = -1
    lines: list[int] = []
    count = 0
    per_row = []
    for row in rows:
        checkpoint()
        back = row.get("back")
        now = len(row["tok"])
        back = back if back is not None else [i if i < len(lines) else -1 for i in range(now)]
        mine = []
        for i in range(now):
            j = back[i]
            if j >= 0 and j < len(lines):
                mine.append(lines[j])
                continue
            line, count = count, count + 1
            after = mine[-1] if mine else -1
            if after < 0:
                following[line], head = head, line
            else:
                following[line], following[after] = following.get(after, -1), line
            mine.append(line)
        lines = mine
        per_row.append(mine)
    order: dict[int, int] = {}
    at = head
    while at >= 0:
        order[at] = len(order)
        at = following.get(at, -1)
    return [[order[x] for x in mine] for mine in per_row], count


def settled_chain(toks: list[list[str]], states: list[str], backs: list[list[int]]) -> list[list[bool]]:
    """Per frame, per position: is it accepted (a schema 1 frame: shown) with its final token, and does it stay so to
    the last frame? Frame k's display tokens, states (frame_states) and previous_positions against frame k - 1."""
    if not toks:
        return []
    last = len(toks) - 1
    out: list[list[bool]] = [[] for _ in toks]
    out[last] = [s == "a" for s in states[last]]
    for k in range(last - 1, -1, -1):
        checkpoint()
        ahead = [-1] * len(toks[k])
        for i, j in enumerate(backs[k + 1]):
            if 0 <= j < len(ahead):
                ahead[j] = i
        nxt = out[k + 1]
        out[k] = [s == "a" and j >= 0 and nxt[j] and toks[k + 1][j] == t
                  for t, s, j in zip(toks[k], states[k], ahead)]
    return out


def final_positions(lengths: list[int], backs: list[list[int]]) -> list[list[int]]:
    """Per frame (of `lengths` positions), per position: the final frame's position it becomes, through every frame
    between (-1: none)."""
    if not lengths:
        return []
    last = len(lengths) - 1
    out: list[list[int]] = [[] for _ in lengths]
    out[last] = list(range(lengths[last]))
    for k in range(last - 1, -1, -1):
        checkpoint()
        ahead = [-1] * lengths[k]
        for i, j in enumerate(backs[k + 1]):
            if 0 <= j < len(ahead):
                ahead[j] = out[k + 1][i]
        out[k] = ahead
    return out


def against_final(frames: list[Frame], toks: list[list[str]]) -> Iterator[tuple[Frame, list[int], list[bool]]]:
    """changes._against_final for a side with schema 2 frames (`toks`: their display tokens): positions follow their
    insertions and deletions to the final frame, and one counts from the frame where it is accepted with its final
    token and stays so (never as noise or a draft)."""
    backs = [[-1] * len(toks[0])] + [
        previous_positions(len(toks[k - 1]), len(toks[k]), f.inserted, f.deleted) if has_edits(f)
        else previous_positions(len(toks[k - 1]), len(toks[k]), None, None)
        for k, f in enumerate(frames[1:], start=1)]
    states = [frame_states(f) if f.tokens else "a" * len(t) for f, t in zip(frames, toks)]
    yield from zip(frames, final_positions([len(t) for t in toks], backs), settled_chain(toks, states, backs))
