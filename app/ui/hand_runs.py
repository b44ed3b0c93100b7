"""The hand-stepped runs ("Be the sampler") the server keeps between a learner's clicks, bounded per visitor and in
time.

A page keeps its runs in one HandRuns (they go with the page), and a session's gr.State holds only its run's ticket.
Gradio keeps a session's state for an hour after its tab closes, and the queue API opens sessions without end, so
runs kept in session state were bounded by nothing a visitor does. Here, on a served page, each visitor (client
address, else owner id) keeps at most PER_VISITOR runs: starting another ends the one they used longest ago. On any
page a run goes after IDLE seconds untouched, and a page keeps at most TOTAL runs, the least recently used going
first.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Callable

PER_VISITOR = 2  # runs one visitor of a served page keeps at once (two tabs side by side)
IDLE = 1800.0  # seconds a run is kept after its last step
TOTAL = 256  # runs one page keeps (a twin's run with its cache is a few MB)
ENDED = (f"This run has ended (it was left idle for {IDLE / 60:.0f} minutes, or newer runs were started in its place): "
         "press Start to begin again.")


@dataclass
class Kept:
    """One kept run: whose it is (None: nobody's cap applies), the run, and when it was last used."""

    who: str | None
    run: Any
    used: float


class HandRuns:
    """Tickets to runs, least recently used first, with the bounds above."""

    def __init__(self, per_visitor: int = PER_VISITOR, idle: float = IDLE, total: int = TOTAL,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.per_visitor, self.idle, self.total, self.clock = per_visitor, idle, total, clock
        self._runs: OrderedDict[str, Kept] = OrderedDict()
        self._lock = threading.Lock()

    def keep(self, who: str | None, run: Any) -> str:
        """Keeps a new run of `who` and returns its ticket, first ending what the bounds leave no room for."""
        with self._lock:
            now = self._expire()
            if who is not None:
                theirs = [t for t, k in self._runs.items() if k.who == who]
                for ticket in theirs[:max(0, len(theirs) - self.per_visitor + 1)]:
                    del self._runs[ticket]
            while len(self._runs) >= self.total:
                self._runs.popitem(last=False)
            ticket = secrets.token_urlsafe(18)
            self._runs[ticket] = Kept(who, run, now)
            return ticket

    def get(self, ticket: Any) -> Any | None:
        """The run a ticket names (None once it has ended), counted as used now."""
        with self._lock:
            self._expire()
            kept = self._runs.get(ticket) if isinstance(ticket, str) else None
            if kept is None:
                return None
            kept.used = self.clock()
            self._runs.move_to_end(ticket)
            return kept.run

    def put(self, ticket: Any, run: Any) -> None:
        """Replaces a kept run by its next state (a step's result); nothing when the run has ended meanwhile."""
        with self._lock:
            kept = self._runs.get(ticket) if isinstance(ticket, str) else None
            if kept is not None:
                kept.run, kept.used = run, self.clock()
                self._runs.move_to_end(ticket)

    def __len__(self) -> int:
        with self._lock:
            self._expire()
            return len(self._runs)

    def _expire(self) -> float:
        """Drops the runs idle too long (the oldest-used first); returns now."""
        now = self.clock()
        while self._runs:
            ticket, kept = next(iter(self._runs.items()))
            if now - kept.used < self.idle:
                break
            del self._runs[ticket]
        return now

