"""A library's own generate loop run on a worker thread, its steps handed to the reader as they happen.

LLaDA2's pipeline and DiffusionGemma's generate() each call back once a pass on their own thread; the reader is a
generator on the race's thread. Both use this one relay: the worker puts steps on a queue, then None when done, or
the exception that ended it; a callback raises `Stopped` once the reader has gone, which ends the worker quietly.
"""

from __future__ import annotations

import queue
import threading
from typing import Any, Iterator

from app.errors import UserError


class Stopped(Exception):
    """Raised from a library's callback when the run is cancelled or its reader stopped."""


def relay(worker: threading.Thread, out: queue.Queue, cancel: threading.Event | None, what: str) -> Iterator[Any]:
    """Starts `worker` and yields what it puts on `out` until None; its exception is raised as a UserError naming
    `what` ("LLaDA2's pipeline"), and reading ends when it stopped or once `cancel` is set."""
    if cancel is not None and cancel.is_set():
        return
    worker.start()
    while (item := out.get()) is not None:
        if isinstance(item, Stopped):
            return
        if isinstance(item, BaseException):
            raise UserError(f"{what} failed: {type(item).__name__}: {item}") from None
        yield item
        if cancel is not None and cancel.is_set():
            return
