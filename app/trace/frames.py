"""Frames, and the JSON Lines recording that keeps every one of them.

A recording is a header line then one line per event, each flushed as written, so that
Stop, an error or a killed process leaves every frame received so far on disk. Reading one back, under the caps
declared here, is app/trace/reading.py.
"""

from __future__ import annotations

import json
import math
import os
import re
import threading
import time
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Callable

from app import __version__

SCHEMA = 2  # 2 added per-position states and insertions/deletions; schema 1 recordings read as they always did
SCHEMAS_READ = (1, 2)
# A position's state, one letter each in Frame.states: what the model's canvas holds there at this frame.
STATES = {"m": "masked", "n": "noise", "d": "draft", "a": "accepted"}
# a revising side's `revision` letters (app/engine/draft.py letters): kept, edited, re-noised still open, past the draft
REVISION = {"k": "kept", "e": "edited", "r": "renoised", ".": "beyond"}
MAX_RECORDING_BYTES = 64 * 1024 * 1024
# What the player and the exports can take, chosen by measurement (`python -m app bench --only caps`, docs/figures.md):
MAX_FRAMES = 50_000  # frames in one recording, both sides together
MAX_TOKENS = 2_000_000  # display tokens summed over every frame (a text frame counts its words, spaces and symbols),
# each position a frame lists as committed, remasked or pinned counting as one more and each candidate it names as
# CANDIDATE_COST more: reading and holding one costs about as much as ten tokens (tests/test_security_bounds.py)
CANDIDATE_COST = 10
# What a recording costs to analyse and replay beyond its size: each side's frames times its longest frame, in display
# tokens (a text frame's words, spaces and symbols). The player's heatmap holds one cell per position of the longest
# frame for every frame, and aligning every frame against the final one once cost that much; a real race stays under
# 2 x its tokens (a typing side's frames each hold the answer so far), so 4 x MAX_TOKENS never refuses one the token
# cap accepts, while 49,990 one-token frames and one of 1.9 million tokens (95 billion cells) are refused at once.
MAX_CELLS = 4 * MAX_TOKENS
MAX_LINE_BYTES = 4 * 1024 * 1024  # one line; a longer one is skipped unread (a real frame line is under 1 MB)
SIDES = ("left", "right")
CHOOSERS = ("user", "model")  # who chose a frame's commits, in a run a learner stepped by hand (app/engine/stepper.py)
MAX_NOTE_CHARS = 200  # a frame's note is one short line (the forward process's "t = 0.35 (35% masked)")

_SURROGATE = re.compile("[\ud800-\udfff]")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
DISPLAY_TOKEN = re.compile(r"\w+|\s+|[^\w\s]")  # how analysis splits a text state into display tokens


def clean_text(text: str) -> str:
    """`text` with lone surrogates (undecodable bytes, half a UTF-16 pair) replaced by U+FFFD, so it encodes as
    UTF-8."""
    return _SURROGATE.sub("\ufffd", text) if _SURROGATE.search(text) else text


def clean_json(value: Any) -> Any:
    """A parsed JSON value with every string (keys too) passed through `clean_text`."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, list):
        return [clean_json(v) for v in value]
    if isinstance(value, dict):
        return {clean_text(k): clean_json(v) for k, v in value.items()}
    return value


def clean_usage(usage: Any) -> dict[str, Any] | None:
    """A source's token counts: finite numbers, and objects of finite numbers one level down; anything else dropped."""
    if not isinstance(usage, dict):
        return None
    number = lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)  # noqa: E731
    out: dict[str, Any] = {}
    for key, value in usage.items():
        if number(value):
            out[str(key)] = value
        elif isinstance(value, dict):
            out[str(key)] = {str(k): v for k, v in value.items() if number(v)}
    return out


def finite_json(value: Any) -> Any:
    """A JSON value with NaN and infinities replaced by None, so it can be written as strict JSON."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, list):
        return [finite_json(v) for v in value]
    if isinstance(value, dict):
        return {k: finite_json(v) for k, v in value.items()}
    return value


@dataclass
class Frame:
    """The full state of one model's output at one moment.

    `tokens` holds display strings (a masked position is "" with `masked[i]` true); text
    sources may leave `tokens` empty and set `text`, which analysis tokenizes for display.
    `t` is seconds since the request was sent, on the source's own monotonic clock. `pinned` lists the answer
    positions given before the run (pinned text, app/engine/pins.py), on a side's first frame only, so a recording
    stays small; `note` is a short line the player shows with the frame.
    """

    t: float
    step: int
    tokens: list[str] = field(default_factory=list)
    masked: list[bool] | None = None
    confidence: list[float] | None = None
    text: str | None = None
    final: bool = False
    nfe: int | None = None
    refreshes: int | None = None  # of nfe, the block-start passes that refreshed the cache
    committed: list[int] | None = None
    remasked: list[int] | None = None
    usage: dict[str, Any] | None = None
    candidates: list[list[Any]] | None = None  # [[position, [[token, probability], ...]], ...] best first
    pinned: list[int] | None = None
    note: str | None = None
    chosen_by: str | None = None  # one of CHOOSERS when a learner stepped the run; None when the sampler ran alone
    # Schema 2. `states`: one letter of STATES per token ("m" masked, "n" noise: a random token not yet accepted,
    # "d" draft: the model's current guess, shown, not accepted, "a" accepted); None reads as before (`masked`).
    # Edited (an accepted token replaced) and re-noised (an accepted or draft position back to noise) are what
    # changed between two frames, so analysis derives them. `inserted`: this frame's positions that the side's
    # previous frame did not have; `deleted`: the previous frame's positions this one dropped. With either, the
    # positions between the two frames are aligned by them, never guessed. `entropy`: one entry per token, the
    # entropy (nats) of the model's prediction there this step, None where it predicted nothing.
    states: str | None = None
    inserted: list[int] | None = None
    deleted: list[int] | None = None
    entropy: list[float | None] | None = None
    # Issue 53: on a side that started from a draft, one letter of REVISION per token (k the draft's own token, e one
    # the draft did not have there, r a re-noised position still open, . past the draft's end); None: no draft.
    revision: str | None = None
    # builds the display fields later (a local source decoding off its clock); never recorded
    pending: Callable[[], dict[str, Any]] | None = field(default=None, repr=False, compare=False)

    def ready(self) -> "Frame":
        """Fills in the fields a source deferred (token strings, text...) and returns the frame; idempotent."""
        build, self.pending = self.pending, None
        if build is not None:
            for key, value in build().items():
                setattr(self, key, value)
        return self

    def to_json(self) -> dict[str, Any]:
        """A dict with the unset optional fields left out, so lines stay short."""
        self.ready()
        return {f.name: v for f in fields(self) if f.name != "pending"
                and (v := getattr(self, f.name)) is not None and v != []}

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
        nfe, refreshes = d.get("nfe"), d.get("refreshes")
        for key, value in (("nfe", nfe), ("refreshes", refreshes)):
            if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
                raise ValueError(f"'{key}' must be an integer")
        usage = d.get("usage")
        if usage is not None and not isinstance(usage, dict):
            raise ValueError("'usage' must be an object")
        usage = clean_usage(usage)
        pinned = _opt_list(d, "pinned", int, None)
        if pinned is not None and any(isinstance(p, bool) or p < 0 for p in pinned):
            raise ValueError("'pinned' must be a list of answer positions (integers from 0)")
        note = d.get("note")
        if note is not None and (not isinstance(note, str) or len(note) > MAX_NOTE_CHARS):
            raise ValueError(f"'note' must be a string of at most {MAX_NOTE_CHARS} characters")
        chosen_by = d.get("chosen_by")
        if chosen_by is not None and chosen_by not in CHOOSERS:
            raise ValueError(f"'chosen_by' must be one of {', '.join(CHOOSERS)}")
        states = d.get("states")
        if states is not None and (not isinstance(states, str) or len(states) != len(tokens)
                                   or not set(states) <= STATES.keys()):
            raise ValueError(f"'states' must be a string of one letter ({''.join(STATES)}) per token")
        revision = d.get("revision")
        if revision is not None and (not isinstance(revision, str) or len(revision) != len(tokens)
                                     or not set(revision) <= REVISION.keys()):
            raise ValueError(f"'revision' must be a string of one letter ({''.join(REVISION)}) per token")
        inserted, deleted = _opt_list(d, "inserted", int, None), _opt_list(d, "deleted", int, None)
        for key, value in (("inserted", inserted), ("deleted", deleted)):
            if value is not None and any(isinstance(p, bool) or p < 0 for p in value):
                raise ValueError(f"'{key}' must be a list of positions (integers from 0)")
        return cls(t=float(t), step=step, tokens=tokens, masked=masked,
                   confidence=[float(c) for c in confidence] if confidence is not None else None,
                   text=text, final=bool(d.get("final", False)), nfe=nfe, refreshes=refreshes, committed=committed,
                   remasked=remasked, usage=usage, candidates=_candidates(d.get("candidates")), pinned=pinned,
                   note=note, chosen_by=chosen_by, states=states, inserted=inserted, deleted=deleted,
                   entropy=_entropy(d.get("entropy"), len(tokens)), revision=revision)


def _entropy(value: Any, length: int) -> list[float | None] | None:
    """Checks a frame's `entropy`: one finite, non-negative number or null per token; raises ValueError."""
    if value is None:
        return None
    if not isinstance(value, list) or len(value) != length or not all(
            e is None or (isinstance(e, (int, float)) and not isinstance(e, bool) and math.isfinite(e) and e >= 0)
            for e in value):
        raise ValueError("'entropy' must have one non-negative number (or null) per token")
    return [None if e is None else float(e) for e in value]


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
    """Seconds since start on a monotonic clock: one per source, so neither side's work counts in the other's time.
    `spent`: seconds of the side's own work done before it (a draft's choosing passes), counted from the start."""

    def __init__(self, spent: float = 0.0) -> None:
        self.start = time.monotonic() - spent

    def __call__(self) -> float:
        return time.monotonic() - self.start


def make_header(prompt: str, sources: dict[str, dict[str, Any]], lesson: str | None = None,
                draft: dict[str, Any] | None = None) -> dict[str, Any]:
    """The recording's first line: schema, app version, prompt, each side's source name and settings (never a key),
    for a race a guided lesson set up, `lesson`: the lesson it is (docs/recording.md), which names it in lists, and
    for a race that started from a draft, `draft`: what was asked (app/engine/draft.py `Revision.to_json`)."""
    header = {"type": "header", "schema": SCHEMA, "app_version": __version__,
              "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
              "prompt": prompt, "sources": sources}
    if draft:
        header["draft"] = draft
    return {**header, "lesson": lesson} if lesson else header


# A run this server did not make (a race run in a visitor's browser, app/ui/browser_race.py `keep`) says where it ran
# in its header's `ran_in`; whatever shows a run (the player, the library and the presenter's picker, every export)
# labels it with these words, whatever `ran_in` holds, so no one takes the visitor's frames for the server's.
RAN_ELSEWHERE = "ran in a visitor's browser"
RAN_ELSEWHERE_MEANS = ("Ran in a visitor's browser: its frames are as that browser sent them; this server did not run "
                       "it.")


def origin(header: dict[str, Any]) -> str:
    """RAN_ELSEWHERE_MEANS for a recording whose header says it ran elsewhere (`ran_in`), else ""."""
    return RAN_ELSEWHERE_MEANS if header.get("ran_in") else ""


class RecordingWriter:
    """Appends one flushed JSON line per event; safe to call from both race threads.

    With `max_bytes`, frames stop being written once the file would pass it (`full` says so; the ends are still
    written, so the file reads back as a finished run); `max_bytes=0` writes nothing and creates no file, for a run
    that is shown but may not be saved."""

    def __init__(self, path: str | Path, header: dict[str, Any], max_bytes: int | None = None) -> None:
        self.path = Path(path)
        self.max_bytes = max_bytes
        self.written = 0
        self.full = False
        self._lock = threading.Lock()
        self._file: Any = None
        if max_bytes == 0:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = open(self.path, "w", encoding="utf-8")
        self._write(header)

    def _write(self, obj: dict[str, Any], capped: bool = False) -> None:
        try:
            line = json.dumps(obj, ensure_ascii=False, allow_nan=False)
        except ValueError:  # a NaN or an infinity from a source: written as null rather than lost
            line = json.dumps(finite_json(obj), ensure_ascii=False, allow_nan=False)
        line = clean_text(line) + "\n"
        with self._lock:
            if self._file is None or self._file.closed:
                return
            size = len(line.encode("utf-8"))
            if capped and self.max_bytes is not None and (self.full or self.written + size > self.max_bytes):
                self.full = True
                return
            self._file.write(line)
            self._file.flush()
            self.written += size

    def frame(self, side: str, frame: Frame) -> None:
        self._write({"type": "frame", "side": side, **frame.to_json()}, capped=True)

    def end(self, side: str, status: str, message: str | None = None, t: float | None = None,
            stop_t: float | None = None) -> None:
        """Marks how a side ended: done, stopped or error (with the message the user saw), at `t` on its clock; a
        stopped side also says when it was told to stop (`stop_t`), so a reader sees how soon it did."""
        entry: dict[str, Any] = {"type": "end", "side": side, "status": status}
        if message:
            entry["message"] = message
        if t is not None:
            entry["t"] = t
        if stop_t is not None:
            entry["stop_t"] = stop_t
        self._write(entry)

    def close(self) -> None:
        with self._lock:
            if self._file is not None and not self._file.closed:
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

    @property
    def schema(self) -> int:
        """The schema it was written in (read_recording refuses any other than SCHEMAS_READ; a header built in memory
        without one is this version's)."""
        value = self.header.get("schema")
        return value if value in SCHEMAS_READ and not isinstance(value, bool) else SCHEMA


def write_recording(rec: Recording, path: str | Path) -> Path:
    """Writes a whole Recording (one read back, or one built in memory such as the forward process) to `path`."""
    writer = RecordingWriter(path, rec.header)
    try:
        for side in SIDES:
            for frame in rec.frames.get(side, []):
                writer.frame(side, frame)
            if side in rec.ends:
                end = rec.ends[side]
                writer.end(side, end["status"], end.get("message") or None, end.get("t"))
    finally:
        writer.close()
    return Path(path)
