"""The CPU slots that races share: compute-bound sides (the built-in and Hugging Face models) take one each.

Local models are CPU-bound, so eight sessions each running two of them at once would thrash the cores and
distort every side's timing. A race asks for all the slots its compute-bound sides need at once (so its two
sides start together) and gets them strictly in arrival order; each side gives its slot back when it ends.
Sides that wait on the network (Mercury, OpenAI-compatible, replays) need no slot.
"""

from __future__ import annotations

import os
import threading
from collections import deque


def default_slots() -> int:
    """CONVERGE_COMPUTE_SLOTS, else one slot per CPU core (at least two, so one local-vs-local race can run)."""
    try:
        configured = int(os.environ.get("CONVERGE_COMPUTE_SLOTS", "0"))
    except ValueError:
        configured = 0
    return configured if configured > 0 else max(2, os.cpu_count() or 2)


class ComputeGate:
    """First come, first served slots; a waiter gives up when its cancel event is set."""

    def __init__(self, slots: int) -> None:
        self.slots = max(1, slots)
        self.in_use = 0
        self.peak = 0
        self._cond = threading.Condition()
        self._queue: deque[object] = deque()

    def acquire(self, n: int, cancel: threading.Event) -> int:
        """Waits for `n` slots (at most all of them) behind earlier callers; returns how many it got, 0 if cancelled."""
        n = min(max(n, 0), self.slots)
        if n == 0:
            return 0
        ticket = object()
        with self._cond:
            self._queue.append(ticket)
            try:
                while self._queue[0] is not ticket or self.in_use + n > self.slots:
                    if cancel.is_set():
                        return 0
                    self._cond.wait(timeout=0.5)  # woken by release() and wake(); the timeout is only a safety net
                if cancel.is_set():
                    return 0
                self.in_use += n
                self.peak = max(self.peak, self.in_use)
                return n
            finally:
                self._queue.remove(ticket)
                self._cond.notify_all()

    def release(self, n: int = 1) -> None:
        with self._cond:
            self.in_use = max(0, self.in_use - n)
            self._cond.notify_all()

    def wake(self) -> None:
        """Wakes every waiter so a cancelled one can leave at once."""
        with self._cond:
            self._cond.notify_all()

    def waiting(self) -> int:
        """How many races are queued for slots now."""
        with self._cond:
            return len(self._queue)

    def busy(self, n: int) -> bool:
        """Whether a request for `n` slots made now would have to wait."""
        with self._cond:
            return bool(self._queue) or self.in_use + min(n, self.slots) > self.slots


COMPUTE = ComputeGate(default_slots())
