"""Each client address's turns at a route's budget (app/ui/budgets.py), and replies handed out a chunk at a time: what
the door (app/ui/door.py) holds every request of a served page to.

`Turns`: an address runs `connections` requests of a budget at once and `waiting` more wait their turn (past both the
next is refused); and it starts at most `per_second` of them a second beyond a burst of `connections + waiting`
(a token bucket), so a flood of cheap requests from one address cannot keep the server's one event loop busy for
everyone else. `Paced`: a reply's body leaves SEND_CHUNK bytes at a time, each awaited, with a send timeout.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict, defaultdict
from typing import Any, Awaitable, Callable

from app.ui.budgets import SEND_CHUNK, Route

Send = Callable[[dict[str, Any]], Awaitable[None]]
BUCKETS_KEPT = 65_536  # (address, budget) token buckets remembered, the least recently used forgotten first


class SlowReader(Exception):
    """A client took no chunk of a reply for SEND_TIMEOUT seconds; its connection is closed."""


class Paced:
    """A `send` that hands a reply's body to the connection SEND_CHUNK bytes at a time, each awaited, so the server's
    flow control holds the rest until the client reads (a reply handed over whole sits in the transport's buffer:
    about 4.5 MB a never-reading connection for the runtime's WebAssembly); with `timeout`, a chunk the client has
    not taken by then raises SlowReader, as does every later send (`stuck`)."""

    def __init__(self, send: Send, timeout: float | None) -> None:
        self.send, self.timeout, self.stuck = send, timeout, False

    async def _one(self, message: dict[str, Any]) -> None:
        if self.stuck:
            raise SlowReader
        if self.timeout is None:
            return await self.send(message)
        try:
            async with asyncio.timeout(self.timeout):
                await self.send(message)
        except TimeoutError:
            self.stuck = True
            raise SlowReader from None

    async def __call__(self, message: dict[str, Any]) -> None:
        body = message.get("body", b"")
        if message["type"] != "http.response.body" or len(body) <= SEND_CHUNK:
            return await self._one(message)
        view, more = memoryview(body), message.get("more_body", False)
        for start in range(0, len(body), SEND_CHUNK):
            last = start + SEND_CHUNK >= len(body)
            await self._one({"type": "http.response.body", "body": bytes(view[start:start + SEND_CHUNK]),
                             "more_body": more or not last})


class Turns:
    """Each address's turns at each route budget: `connections` requests run at once, `waiting` more wait, and at
    most `per_second` start a second past a burst. `clock` is for tests."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._held: dict[tuple[str, str], int] = defaultdict(int)  # (address, budget) -> running or waiting
        self._turns: dict[tuple[str, str], asyncio.Semaphore] = {}
        self._buckets: OrderedDict[tuple[str, str], tuple[float, float]] = OrderedDict()  # -> (tokens, when)

    def delay(self, key: tuple[str, str], budget: Route) -> float:
        """Takes a token of the key's bucket: the seconds until it is there (0 while the burst lasts). Tokens may be
        owed, at most one a request held, so the delay is bounded by (connections + waiting) / per_second."""
        if not budget.per_second:
            return 0.0
        burst, now = float(budget.connections + budget.waiting), self.clock()
        tokens, when = self._buckets.pop(key, (burst, now))
        tokens = min(burst, tokens + (now - when) * budget.per_second) - 1
        self._buckets[key] = (tokens, now)
        while len(self._buckets) > BUCKETS_KEPT:
            self._buckets.popitem(last=False)
        return 0.0 if tokens >= 0 else -tokens / budget.per_second

    async def run(self, address: str, name: str, budget: Route, work: Callable[[], Awaitable[None]],
                  refuse: Callable[[], Awaitable[None]]) -> None:
        """Runs `work` in the address's turn, or `refuse` when the address holds all it may of this budget."""
        key = (address, name)
        if self._held[key] >= budget.connections + budget.waiting:
            return await refuse()
        self._held[key] += 1
        turn = self._turns.setdefault(key, asyncio.Semaphore(budget.connections))
        try:
            wait = self.delay(key, budget)
            if wait:
                await asyncio.sleep(wait)  # the address's rate: its turn begins when its token is there
            async with turn:
                await work()
        finally:
            self._held[key] -= 1
            if not self._held[key]:
                del self._held[key], self._turns[key]

    def held(self) -> int:
        """Requests running or waiting, all addresses together (for tests: nothing is left held)."""
        return sum(self._held.values())
