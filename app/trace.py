"""Frames, and the JSON Lines recording that keeps every one of them.

A recording is a header line then one line per event, each flushed as written, so that
Stop, an error or a killed process leaves every frame received so far on disk.
"""

from __future__ import annotations

import json
import math
import os
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterator

from app import __version__

SCHEMA = 1
MAX_RECORDING_BYTES = 64 * 1024 * 1024
SIDES = ("left", "right")


@dataclass
class Frame:
    """The full state of one model's output at one moment.

    `tokens` holds display strings (a masked position is "" with `masked[i]` true); text
    sources may leave `tokens` empty and set `text`, which analysis tokenizes for display.
    `t` is seconds since the request was sent, on the source's own monotonic clock.
    """

    t: float
    step: int
    tokens: list[str] = field(default_factory=list)
    masked: list[bool] | None = None
    confidence: list[float] | None = None
    text: str | None = None
    final: bool = False
    nfe: int | None = None
    committed: list[int] | None = None
    remasked: list[int] | None = None
    usage: dict[str, Any] | None = None
    candidates: list[list[Any]] | None = None  # [[position, [[token, probability], ...]], ...] best first

    def to_json(self) -> dict[str, Any]:
        """A dict with the unset optional fields left out, so lines stay short."""
        return {k: v for k, v in asdict(self).items() if v is not None and v != []}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "Frame":
        """Build a Frame from a recording line, checking types; raises ValueError."""
        t = d.get("t")
        step = d.get("step")
        if not isinstance(t, (int, float)) or isinstance(t, bool) or not math.isfinite(t) or t < 0:
            raise ValueError("frame needs a finite, non-negative number 't'")
        if not isinstance(step, int) or isinstance(step, bool) or step < 0:
            raise ValueError("frame needs a non-negative integer 'step'")
        tokens = d.get("tokens", [])
        if not isinstance(tokens, list) or not all(isinstance(x, str) for x in tokens):
            raise ValueError("'tokens' must be a list of strings")
        text = d.get("text")
        if text is not None and not isinstance(text, str):
            raise ValueError("'text' must be a string")
        masked = _opt_list(d, "masked", bool, len(tokens))
        confidence = _opt_list(d, "confidence", (int, float), len(tokens))
        committed = _opt_list(d, "committed", int, None)
        remasked = _opt_list(d, "remasked", int, None)
        nfe = d.get("nfe")
        if nfe is not None and (not isinstance(nfe, int) or isinstance(nfe, bool)):
            raise ValueError("'nfe' must be an integer")
        usage = d.get("usage")
        if usage is not None and not isinstance(usage, dict):
            raise ValueError("'usage' must be an object")
        return cls(t=float(t), step=step, tokens=tokens, masked=masked,
                   confidence=[float(c) for c in confidence] if confidence is not None else None,
                   text=text, final=bool(d.get("final", False)), nfe=nfe, committed=committed,
                   remasked=remasked, usage=usage, candidates=_candidates(d.get("candidates")))


def _candidates(value: Any) -> list[list[Any]] | None:
    """Checks a frame's `candidates`: [[position, [[token, probability], ...]], ...]; raises ValueError."""
    if value is None:
        return None
    def ok_pair(c: Any) -> bool:
        return (isinstance(c, list) and len(c) == 2 and isinstance(c[0], str) and isinstance(c[1], (int, float))
                and not isinstance(c[1], bool) and math.isfinite(c[1]))
    if not isinstance(value, list) or not all(
            isinstance(e, list) and len(e) == 2 and isinstance(e[0], int) and not isinstance(e[0], bool) and e[0] >= 0
            and isinstance(e[1], list) and all(ok_pair(c) for c in e[1]) for e in value):
        raise ValueError("'candidates' must be a list of [position, [[token, probability], ...]]")
    return [[e[0], [[c[0], float(c[1])] for c in e[1]]] for e in value]


def _opt_list(d: dict[str, Any], key: str, kind: Any, length: int | None) -> list | None:
    value = d.get(key)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(x, kind) for x in value):
        raise ValueError(f"'{key}' must be a list")
    if length is not None and len(value) != length:
        raise ValueError(f"'{key}' must have one entry per token")
    return value


class Clock:
    """Seconds since start on a monotonic clock: one per source, so neither side's work counts in the other's time."""

    def __init__(self) -> None:
        self.start = time.monotonic()

    def __call__(self) -> float:
        return time.monotonic() - self.start


def make_header(prompt: str, sources: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The recording's first line: schema, app version, prompt, each side's source name and settings (never a key)."""
    return {"type": "header", "schema": SCHEMA, "app_version": __version__,
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "prompt": prompt, "sources": sources}


class RecordingWriter:
    """Appends one flushed JSON line per event; safe to call from both race threads."""

    def __init__(self, path: str | Path, header: dict[str, Any]) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._file = open(self.path, "w", encoding="utf-8")
        self._write(header)

    def _write(self, obj: dict[str, Any]) -> None:
        line = json.dumps(obj, ensure_ascii=False, allow_nan=False)
        with self._lock:
            if self._file.closed:
                return
            self._file.write(line + "\n")
            self._file.flush()

    def frame(self, side: str, frame: Frame) -> None:
        self._write({"type": "frame", "side": side, **frame.to_json()})

    def end(self, side: str, status: str, message: str | None = None, t: float | None = None) -> None:
        """Marks how a side ended: done, stopped or error (with the message the user saw)."""
        entry: dict[str, Any] = {"type": "end", "side": side, "status": status}
        if message:
            entry["message"] = message
        if t is not None:
            entry["t"] = t
        self._write(entry)

    def close(self) -> None:
        with self._lock:
            if not self._file.closed:
                self._file.flush()
                os.fsync(self._file.fileno())
                self._file.close()


@dataclass
class Recording:
    """A recording read back: header, each side's frames and end entry, and warnings about skipped lines."""

    header: dict[str, Any]
    frames: dict[str, list[Frame]]
    ends: dict[str, dict[str, Any]]
    warnings: list[str]


class RecordingError(ValueError):
    """A file that cannot be read as a recording at all; the message says why, for the user."""


def iter_lines(path: str | Path) -> Iterator[tuple[int, str]]:
    with open(path, "rb") as f:
        for number, raw in enumerate(f, start=1):
            try:
                yield number, raw.decode("utf-8")
            except UnicodeDecodeError:
                yield number, "\ufffd"  # undecodable: reported as a bad line by the reader


def read_recording(path: str | Path, max_bytes: int = MAX_RECORDING_BYTES) -> Recording:
    """Reads and validates a recording.

    A bad line does not stop the read: the first one is named in `warnings` and reading stops there
    (a truncated or corrupt file loads up to its last good frame). A file that is not a recording,
    too large, or of an unknown schema raises RecordingError.
    """
    p = Path(path)
    if not p.is_file():
        raise RecordingError(f"No recording at {p.name}.")
    size = p.stat().st_size
    if size > max_bytes:
        raise RecordingError(f"{p.name} is {size / 1e6:.1f} MB; recordings over {max_bytes / 1e6:.0f} MB are refused.")
    lines = iter_lines(p)
    try:
        number, first = next(lines)
        header = json.loads(first)
    except StopIteration:
        raise RecordingError(f"{p.name} is empty: it is not a Converge recording.") from None
    except ValueError:
        raise RecordingError(f"{p.name} is not a Converge recording (line 1 is not a JSON header).") from None
    if not isinstance(header, dict) or header.get("type") != "header":
        raise RecordingError(f"{p.name} is not a Converge recording (line 1 is not a header).")
    if header.get("schema") != SCHEMA:
        raise RecordingError(f"{p.name} has recording schema {header.get('schema')!r}; this Converge reads schema {SCHEMA}.")
    if not isinstance(header.get("prompt", ""), str) or not isinstance(header.get("sources", {}), dict):
        raise RecordingError(f"{p.name} has a malformed header.")
    frames: dict[str, list[Frame]] = {s: [] for s in SIDES}
    ends: dict[str, dict[str, Any]] = {}
    warnings: list[str] = []
    for number, line in lines:
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
            if not isinstance(entry, dict):
                raise ValueError("not an object")
            side = entry.get("side")
            if side not in SIDES:
                raise ValueError("'side' must be left or right")
            kind = entry.get("type")
            if kind == "frame":
                frames[side].append(Frame.from_json(entry))
            elif kind == "end":
                ends[side] = {"status": str(entry.get("status", "")), "message": str(entry.get("message", ""))}
            else:
                raise ValueError(f"unknown entry type {kind!r}")
        except ValueError as e:
            warnings.append(f"Line {number} of {p.name} is not valid ({e}); loaded the {sum(map(len, frames.values()))} frames before it.")
            break
    return Recording(header=header, frames=frames, ends=ends, warnings=warnings)
