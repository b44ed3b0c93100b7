"""Cancellation that reaches into reading and analysis: work that a visitor cancelled stops at its next frame.

Reading a recording and analysing it are pure functions that a page's handler runs on a worker thread; when the
handler is closed (Cancel export, a visitor who left, a cancelled Load), the thread would otherwise run to the end of
work nobody waits for, holding one of the few threads that exports and loads share. The handler runs that work
`within(event)`, and the reader and the analysis call `checkpoint()` once a line or a frame: once the event is set it
raises Cancelled there. Outside `within` (the command line, the bench, tests) a checkpoint costs one lookup and never
raises. The event travels in a context variable, so it follows `asyncio.to_thread` and never leaks to another thread.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Iterator

from app.errors import UserError

_current: ContextVar[threading.Event | None] = ContextVar("converge_cancel", default=None)


class Cancelled(UserError):
    """The work was cancelled before it ended; what it made is dropped."""


def checkpoint() -> None:
    """Raises Cancelled when the work this thread runs `within` was cancelled; else nothing (a cheap call)."""
    event = _current.get()
    if event is not None and event.is_set():
        raise Cancelled("Cancelled.")


@contextmanager
def within(event: threading.Event) -> Iterator[threading.Event]:
    """Runs the block's reading and analysis under `event`: once it is set, their next checkpoint raises Cancelled."""
    token = _current.set(event)
    try:
        yield event
    finally:
        _current.reset(token)
