"""`replay:NAME` plays one side of a saved recording (`replay:NAME#right` for the right side) with its original timing.

NAME is a library id ("example/01-confidence-blocks.jsonl", "user/my-run.jsonl"); the command line may also give a
file path. The page gives `paths=False` and the visitor's `owner`, so a visitor reaches only the bundled examples
and their own recordings, and learns nothing about other files on the server.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from app.engine.options import coerce, option
from app.errors import UserError
from app.sources.base import SourceBase, SourceKind, register
from app.trace.frames import SIDES, Frame
from app.trace.reading import RecordingError, read_recording
from app.trace.store import is_id, locate


@dataclass
class ReplaySettings:
    """How a recording plays back, declared once (app/engine/options.py)."""

    speed: float = option(1.0, "Speed", min=0.1, max=4.0, step=0.1)


class ReplaySource(SourceBase):
    """Yields a recorded side's frames at their recorded times, scaled by `speed`: each frame is stamped with the time
    it is replayed at, so a replay at half speed reports twice the seconds."""

    cannot_why = "it replays a recorded run"  # in app/sources/revise.py `cannot`

    def __init__(self, arg: str, *, paths: bool = True, owner: str | None = None, **settings: Any) -> None:
        """`paths`: whether a file path is accepted besides a library id; `owner`: whose "user/" recordings ids name."""
        name, _, side = arg.partition("#")
        side = side or "left"
        if not name:
            raise UserError("Name a recording: replay:NAME, with NAME from the recordings list "
                            "(like example/NAME.jsonl).")
        if side not in SIDES:
            raise UserError(f"Side must be left or right, not {side!r}.")
        speed = coerce(ReplaySettings, settings, "replay").speed
        if paths and not is_id(name):
            path: str | Path = name
        elif is_id(name):
            path = locate(name, owner)
        else:
            raise UserError("replay: takes a recording's name from the recordings list, like "
                            "example/01-confidence-blocks.jsonl or user/NAME.jsonl, not a file path.")
        try:
            self.recording = read_recording(path)
        except RecordingError as e:
            raise UserError(str(e)) from None
        self.name = f"replay:{arg}"
        self.side = side
        self.speed = speed
        self.original = self.recording.header.get("sources", {}).get(side, {}).get("name", "?")

    def settings(self) -> dict[str, Any]:
        return {"speed": self.speed, "original": self.original}

    def stream(self, prompt: str, cancel: threading.Event, defer: bool = False) -> Iterator[Frame]:
        """The recorded side's frames at their recorded times over `speed`, whatever the prompt.
        `defer` is never given (`defers` is False)."""
        start = time.monotonic()
        for frame in self.recording.frames[self.side]:
            delay = frame.t / self.speed - (time.monotonic() - start)
            if delay > 0 and cancel.wait(delay):
                return
            if cancel.is_set():
                return
            yield frame if self.speed == 1 else dataclasses.replace(frame, t=frame.t / self.speed)
        end = self.recording.ends.get(self.side, {})
        if self.recording.warnings:
            raise UserError(self.recording.warnings[0])
        if end.get("status") == "error":
            raise UserError(f"The recorded run ended with an error: {end.get('message', '')}")


register(SourceKind(prefix="replay", make=ReplaySource, label="Recording", takes_arg=True,
                    options=(ReplaySettings(),), passes=("paths", "owner")))
