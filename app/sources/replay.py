"""`replay:PATH` plays one side of a saved recording (`replay:PATH#right` for the right side) with its original timing."""

from __future__ import annotations

import threading
import time
from typing import Any, Iterator

from app.sources.base import SourceError, SourceKind, register
from app.trace import SIDES, Frame, RecordingError, read_recording


class ReplaySource:
    """Yields a recorded side's frames at their recorded times, scaled by `speed`."""

    def __init__(self, arg: str, speed: float = 1.0) -> None:
        path, _, side = arg.partition("#")
        side = side or "left"
        if not path:
            raise SourceError("Name a recording: replay:PATH.")
        if side not in SIDES:
            raise SourceError(f"Side must be left or right, not {side!r}.")
        if not 0.1 <= float(speed) <= 4.0:
            raise SourceError("Replay speed must be between 0.1 and 4.")
        try:
            self.recording = read_recording(path)
        except RecordingError as e:
            raise SourceError(str(e)) from None
        self.name = f"replay:{arg}"
        self.side = side
        self.speed = float(speed)
        self.original = self.recording.header.get("sources", {}).get(side, {}).get("name", "?")

    def settings(self) -> dict[str, Any]:
        return {"speed": self.speed, "original": self.original}

    def stream(self, prompt: str, cancel: threading.Event) -> Iterator[Frame]:
        start = time.monotonic()
        for frame in self.recording.frames[self.side]:
            delay = frame.t / self.speed - (time.monotonic() - start)
            if delay > 0 and cancel.wait(delay):
                return
            if cancel.is_set():
                return
            yield frame
        end = self.recording.ends.get(self.side, {})
        if self.recording.warnings:
            raise SourceError(self.recording.warnings[0])
        if end.get("status") == "error":
            raise SourceError(f"The recorded run ended with an error: {end.get('message', '')}")


register(SourceKind(prefix="replay", make=ReplaySource, label="Recording", takes_arg=True,
                    settings={"speed": {"default": 1.0, "label": "Speed", "min": 0.1, "max": 4.0, "step": 0.1}}))
