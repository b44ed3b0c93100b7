"""A recording read back: every intact frame kept, a bad line skipped and named, and the file refused in one sentence
when it is not a recording or passes the caps frames.py declares (bytes, lines, frames, tokens, cells).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Iterator

from app.trace.cancel import checkpoint
from app.trace.frames import (
    _SURROGATE_ESCAPE,
    CANDIDATE_COST,
    DISPLAY_TOKEN,
    MAX_CELLS,
    MAX_FRAMES,
    MAX_LINE_BYTES,
    MAX_RECORDING_BYTES,
    MAX_TOKENS,
    SCHEMAS_READ,
    SIDES,
    Frame,
    Recording,
    clean_json,
)
from app.trace.read_notes import read_warnings


class RecordingError(ValueError):
    """A file that cannot be read as a recording at all; the message says why, for the user."""


def iter_lines(path: str | Path, max_bytes: int = MAX_LINE_BYTES) -> Iterator[tuple[int, str | None, bool]]:
    """(line number, text, whether it was valid UTF-8) for each line; bytes that are not UTF-8 become U+FFFD.

    A line over `max_bytes` comes as None, read past in pieces and never held whole, so a 60 MB line costs nothing.
    """
    with open(path, "rb") as f:
        number = 0
        while raw := f.readline(max_bytes + 1):
            number += 1
            if len(raw) > max_bytes:
                while raw and not raw.endswith(b"\n"):
                    checkpoint()
                    raw = f.readline(1 << 20)
                yield number, None, True
                continue
            try:
                yield number, raw.decode("utf-8"), True
            except UnicodeDecodeError:
                yield number, raw.decode("utf-8", "replace"), False


def count_lines(path: str | Path) -> int:
    """How many lines a file has (a last line without a newline counts), read in 1 MB pieces."""
    count, last = 0, b"\n"
    with open(path, "rb") as f:
        while piece := f.read(1 << 20):
            checkpoint()
            count += piece.count(b"\n")
            last = piece[-1:]
    return count + (last != b"\n")


def _not_a_number(name: str) -> Any:
    raise ValueError(f"{name} is not a number a recording can hold")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text[:20]} is too large a number")
    return value


_DECODER = json.JSONDecoder(parse_constant=_not_a_number, parse_float=_finite_float)


def _parse(line: str) -> Any:
    """One line as JSON, lone surrogates cleaned; raises ValueError on NaN, an infinity or a number too large for a
    float anywhere in it (nesting too deep counts as invalid)."""
    try:
        value = _DECODER.decode(line)
    except RecursionError:
        raise ValueError("nested too deeply") from None
    return clean_json(value) if _SURROGATE_ESCAPE.search(line) else value


def shown_tokens(frame: Frame) -> int:
    """A frame's display tokens: its tokens, or its text's words, spaces and symbols (markers such as <|im_end|>
    counted as the symbols they are made of, so never fewer than analysis draws)."""
    return len(frame.tokens) if frame.tokens else DISPLAY_TOKEN.subn("", frame.text)[1] if frame.text else 0


def frame_size(frame: Frame, shown: int | None = None) -> int:
    """What a frame costs the player, counted against MAX_TOKENS: its display tokens (`shown`, when already counted),
    plus every position it lists as committed, remasked, pinned, inserted or deleted, and CANDIDATE_COST per
    candidate."""
    shown = shown_tokens(frame) if shown is None else shown
    listed = sum(len(getattr(frame, key) or ()) for key in ("committed", "remasked", "pinned", "inserted", "deleted"))
    return shown + listed + CANDIDATE_COST * sum(len(names) for _, names in frame.candidates or ())


def _reason(e: Exception) -> str:
    """Why a line was skipped, in a few words: a ValueError's own message, else the kind of failure."""
    if isinstance(e, ValueError):
        return str(e)[:200]
    if isinstance(e, RecursionError):
        return "nested too deeply"
    if isinstance(e, OverflowError):
        return "a number too large to use"
    return f"it could not be read ({type(e).__name__})"


def _header_sources(sources: dict[str, Any]) -> dict[str, Any]:
    """The header's sources, keeping each side's entry only when it is an object, its name a string and its
    settings an object."""
    out: dict[str, Any] = {}
    for side, entry in sources.items():
        if side in SIDES and isinstance(entry, dict):
            settings = entry.get("settings")
            out[side] = {**entry, "name": str(entry.get("name", side)),
                         "settings": settings if isinstance(settings, dict) else {}}
            if not isinstance(entry.get("draft", {}), dict):  # a side's plan (issue 53): an object or nothing
                del out[side]["draft"]
    return out


def _header_draft(header: dict[str, Any]) -> None:
    """Keeps the header's `draft` (what a race started from, issue 53) only when it is an object with a text."""
    draft = header.get("draft")
    if draft is not None and not (isinstance(draft, dict) and isinstance(draft.get("text"), str)):
        del header["draft"]


def _check_file(p: Path, max_bytes: int) -> None:
    """Refuses, before reading a line, a path that is not a file, a file over `max_bytes` or one of too many lines."""
    if not p.is_file():
        raise RecordingError(f"No recording at {p.name}.")
    size = p.stat().st_size
    if size > max_bytes:
        raise RecordingError(f"{p.name} is {size / 1e6:.1f} MB; recordings over {max_bytes / 1e6:.0f} MB are refused.")
    lines_in_file = count_lines(p)
    if lines_in_file > MAX_FRAMES + 16:
        raise RecordingError(f"{p.name} has {lines_in_file:,} lines; recordings over {MAX_FRAMES:,} frames are "
                             "refused, as the player and the exports cannot show them.")


def read_recording(path: str | Path, max_bytes: int = MAX_RECORDING_BYTES) -> Recording:
    """Reads and validates a recording.

    A bad line (truncated, corrupt, of the wrong shape) is skipped and the read goes on, so every intact
    frame loads; `warnings` names the skipped lines, and the lines whose bytes were not UTF-8 (kept, with
    U+FFFD in place of those bytes). A file that is not a recording, too large, or of an unknown schema
    raises RecordingError.
    """
    p = Path(path)
    _check_file(p, max_bytes)
    lines = iter_lines(p)
    header = _read_header(p.name, lines)
    frames: dict[str, list[Frame]] = {s: [] for s in SIDES}
    ends: dict[str, dict[str, Any]] = {}
    bad: list[tuple[int, str]] = []
    repaired: list[int] = []
    count = tokens = 0
    widest = dict.fromkeys(SIDES, 0)  # each side's longest frame so far, in display tokens
    last = dict.fromkeys(SIDES, 0)  # each side's latest frame, in display tokens
    for number, line, utf8 in lines:
        checkpoint()  # a cancelled load or export stops here (app/trace/cancel.py)
        overrun = None
        if line is None:
            bad.append((number, f"over {MAX_LINE_BYTES / 1e6:.0f} MB"))
            continue
        if not line.strip():
            continue
        try:
            side, kind, entry = _entry(line)
            if kind == "frame":
                frame = Frame.from_json(entry)
                shown = shown_tokens(frame)
                count, tokens = count + 1, tokens + frame_size(frame, shown)
                frames[side].append(frame)
                overrun = list_overrun(frame, shown, last[side])
                widest[side], last[side] = max(widest[side], shown), shown
            else:
                message = entry.get("message")
                ends[side] = {"status": str(entry.get("status", "")),
                              "message": "" if message is None else str(message)}
        except Exception as e:  # any failure of any type skips the line and names it
            bad.append((number, _reason(e)))
            continue
        if not utf8:
            repaired.append(number)
        _refuse_past_caps(p.name, number, count, tokens, sum(len(frames[s]) * widest[s] for s in SIDES), overrun)
    warnings = read_warnings(p.name, bad, repaired, sum(map(len, frames.values())))
    return Recording(header=header, frames=frames, ends=ends, warnings=warnings)


def _entry(line: str) -> tuple[str, str, dict[str, Any]]:
    """A recording line's side, type (frame or end) and object; raises ValueError for any other line."""
    entry = _parse(line)
    if not isinstance(entry, dict):
        raise ValueError("not an object")
    side, kind = entry.get("side"), entry.get("type")
    if side not in SIDES:
        raise ValueError("'side' must be left or right")
    if kind not in ("frame", "end"):
        raise ValueError(f"unknown entry type {repr(kind)[:40]}")
    return side, kind, entry


def _refuse_past_caps(name: str, number: int, count: int, tokens: int, cells: int, overrun: str | None) -> None:
    """Refuses the recording, with one sentence naming `number`, the line that took it past a cap: too many frames,
    tokens or cells, or a list of more positions than its frames have (`overrun`, list_overrun)."""
    if overrun is not None:
        raise RecordingError(f"{name} lists more {overrun} (line {number}); such recordings are refused, as the "
                             "player and the exports cannot show them in bounded time.")
    if count > MAX_FRAMES or tokens > MAX_TOKENS:
        what = f"{MAX_FRAMES:,} frames" if count > MAX_FRAMES else f"{MAX_TOKENS:,} tokens"
        raise RecordingError(f"{name} holds more than {what} (line {number}); longer recordings are refused, "
                             "as the player and the exports cannot show them.")
    if cells > MAX_CELLS:
        raise RecordingError(cost_refusal(name, cells, number))


def list_overrun(frame: Frame, shown: int, before: int) -> str | None:
    """What a frame's `inserted` or `deleted` list names beyond the frames it refers to, or None: a frame inserts at
    most its own positions (`shown`) and deletes at most its side's previous frame's (`before`), so aligning and
    drawing them stays linear in the frames' lengths."""
    if frame.inserted is not None and len(frame.inserted) > shown:
        return f"inserted positions ({len(frame.inserted):,}) than its frame has ({shown:,})"
    if frame.deleted is not None and len(frame.deleted) > before:
        return f"deleted positions ({len(frame.deleted):,}) than the frame before it had ({before:,})"
    return None


def cost_refusal(name: str, cells: int, line: int) -> str:
    """The one sentence that refuses a recording whose frames times longest frame passes MAX_CELLS by `line`."""
    return (f"{name} costs more than {MAX_CELLS:,} cells to analyse and replay by line {line} (each side's frames "
            f"times its longest frame: {cells:,}); such recordings are refused, as the player and the exports cannot "
            "show them in bounded time.")


def _read_header(name: str, lines: Iterator[tuple[int, str | None, bool]]) -> dict[str, Any]:
    """The header on a recording's first line, checked (a header of this schema, a prompt, sources), or why not."""
    try:
        number, first, _ = next(lines)
        if first is None:
            raise ValueError("too long")
        header = _parse(first)
    except StopIteration:
        raise RecordingError(f"{name} is empty: it is not a Converge recording.") from None
    except Exception:  # any failure to read line 1, of any type
        raise RecordingError(f"{name} is not a Converge recording (line 1 is not a JSON header).") from None
    if not isinstance(header, dict) or header.get("type") != "header":
        raise RecordingError(f"{name} is not a Converge recording (line 1 is not a header).")
    if header.get("schema") not in SCHEMAS_READ or isinstance(header.get("schema"), bool):
        raise RecordingError(f"{name} has recording schema {repr(header.get('schema'))[:20]}; "
                             f"this Converge reads schemas {' and '.join(map(str, SCHEMAS_READ))}.")
    if not isinstance(header.get("prompt", ""), str) or not isinstance(header.get("sources", {}), dict):
        raise RecordingError(f"{name} has a malformed header.")
    header["sources"] = _header_sources(header.get("sources", {}))
    _header_draft(header)
    return header
