"""The served page's door: fair queueing and the upload policy, applied to Gradio's own routes before Gradio sees them.

Every handler can be called through Gradio's queue API, and Gradio's upload route stores whatever it is sent, so
these rules sit in front of both, as an ASGI middleware (`launch_options()` installs it; `watch` tells it which
page runs under which policy). On a local page it lets everything through. On a served page:

- a visitor (a session, and a client address: app/ui/address.py) holds at most one race or sweep at a time, running
  or waiting, and one address at most ADDRESS_EVENTS queued requests of any kind, so one client cannot fill the
  queue; a refused join gets one sentence (the browser shows it);
- with the `upload` capability off, nothing is uploaded at all; on, each upload is one .jsonl file (what the page's
  upload box takes) within a budget per address of UPLOAD_FILES files and UPLOAD_BYTES per UPLOAD_WINDOW seconds
  (the age at which Gradio's cache drops them), and every other multipart request is refused.
"""

from __future__ import annotations

import json
import time
import weakref
from collections import defaultdict, deque
from pathlib import Path
from typing import Any, Awaitable, Callable

from app.serving.policy import Policy
from app.ui.address import address_of, client_address

HEAVY = ("race", "sweep")  # the concurrency ids of the work a visitor may hold only one of at a time
ADDRESS_EVENTS = 8  # requests one address may have queued or running at once, of any kind
UPLOAD_FILES = 8
UPLOAD_BYTES = 128 * 2**20
UPLOAD_WINDOW = 3600.0
UPLOAD_SUFFIX = ".jsonl"
JOIN_ROUTES = ("/queue/join", "/call/")
JOIN_BYTES = 2 * 2**20  # a join's body: every input of a handler within its declared limit fits many times over

HELD = ("You already have a race or sweep running or waiting on this server; wait for it to end, or stop it, "
        "before starting another.")
BUSY = f"You already have {ADDRESS_EVENTS} requests waiting on this server; wait for them to finish."
UPLOAD_OFF = "Uploading files is off on this server."
UPLOAD_SPENT = (f"You have used this server's upload budget ({UPLOAD_FILES} files or {UPLOAD_BYTES // 2**20} MB an "
                "hour); try again later.")
UPLOAD_ONE = f"Upload one {UPLOAD_SUFFIX} recording at a time."
UPLOAD_SIZE = "An upload must say its size (Content-Length)."
TOO_BIG = f"This request is larger than the server takes ({JOIN_BYTES // 2**20} MB); shorten what you typed."

_policies: "weakref.WeakKeyDictionary[Any, Policy]" = weakref.WeakKeyDictionary()

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


def watch(blocks: Any, policy: Policy) -> None:
    """Puts the page `blocks` behind the door under `policy`."""
    _policies[blocks] = policy


def _held(blocks: Any) -> list[tuple[str, str, bool]]:
    """(address, session, heavy) of every request in the page's queue, waiting or running."""
    queue = blocks._queue
    events = [e for q in list(queue.event_queue_per_concurrency_id.values()) for e in list(q.queue)]
    events += [e for job in list(queue.active_jobs) if job for e in job]
    return [(address_of(e.request) or "", e.session_hash, e.concurrency_id in HEAVY) for e in events]


async def _respond(send: Send, status: int, sentence: str) -> None:
    body = json.dumps({"detail": sentence, "error": sentence}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


async def _read_body(receive: Receive, limit: int = JOIN_BYTES) -> bytes | None:
    """The request's body, or None when it passes `limit` bytes: the rest is read and dropped as it comes (never
    held in memory), so the client gets the refusal rather than a closed connection."""
    chunks: list[bytes] | None = []
    size = 0
    while True:
        message = await receive()
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            chunks = None
        elif chunks is not None:
            chunks.append(chunk)
        if not message.get("more_body"):
            return None if chunks is None else b"".join(chunks)


class Door:
    """The ASGI middleware: lets a served page's joins and uploads through only within the rules above."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self._joining: list[tuple[str, str, bool]] = []  # joins that passed the door and are not yet in the queue
        self._uploads: dict[str, deque[tuple[float, int]]] = defaultdict(deque)  # address -> (when, bytes)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") != "POST":
            return await self.app(scope, receive, send)
        get_blocks = getattr(scope.get("app"), "get_blocks", None)
        blocks = get_blocks() if get_blocks else None
        policy = _policies.get(blocks) if blocks is not None else None
        if policy is None or not policy.served:
            return await self.app(scope, receive, send)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        address = client_address((scope.get("client") or (None,))[0], headers.get("x-forwarded-for"))
        path = scope.get("path", "").rstrip("/")
        if path.endswith("/upload"):
            return await self._upload(policy, address, headers, scope, receive, send)
        if headers.get("content-type", "").startswith("multipart/"):
            return await _respond(send, 403, UPLOAD_OFF if not policy.can("upload") else UPLOAD_ONE)
        if any(route in path for route in JOIN_ROUTES):
            return await self._join(blocks, address, path, scope, receive, send)
        return await self.app(scope, receive, send)

    async def _join(self, blocks: Any, address: str, path: str, scope: Scope, receive: Receive, send: Send) -> None:
        """A queue join: refused when the visitor holds a race or sweep already, or the address its queue share."""
        body = await _read_body(receive)
        if body is None:
            return await _respond(send, 413, TOO_BIG)
        try:
            data = json.loads(body or b"{}")
        except ValueError:
            data = {}
        data = data if isinstance(data, dict) else {}
        fn = None
        if "/call/" in path:
            name = path.rsplit("/", 1)[-1]
            fn = next((f for f in blocks.fns.values() if f.api_name == name), None)
        elif isinstance(data.get("fn_index"), int):
            fn = blocks.fns.get(data["fn_index"])
        session = str(data.get("session_hash") or "")
        heavy = fn is not None and fn.concurrency_id in HEAVY
        held = _held(blocks) + self._joining
        if heavy and any(h and (a == address or (session and s == session)) for a, s, h in held):
            return await _respond(send, 429, HELD)
        if sum(a == address for a, _, _ in held) >= ADDRESS_EVENTS:
            return await _respond(send, 429, BUSY)
        mark = (address, session, heavy)
        self._joining.append(mark)
        sent = False

        async def replay() -> dict[str, Any]:
            nonlocal sent
            if sent:
                return await receive()
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}

        try:
            await self.app(scope, replay, send)
        finally:
            self._joining.remove(mark)

    async def _upload(self, policy: Policy, address: str, headers: dict[str, str], scope: Scope, receive: Receive,
                      send: Send) -> None:
        """Gradio's upload route: off unless the policy allows it; then one .jsonl within the address's budget."""
        if not policy.can("upload"):
            return await _respond(send, 403, UPLOAD_OFF)
        try:
            size = int(headers.get("content-length", ""))
        except ValueError:
            return await _respond(send, 411, UPLOAD_SIZE)
        now = time.monotonic()
        for known in [a for a, d in self._uploads.items() if not d or now - d[-1][0] > UPLOAD_WINDOW]:
            del self._uploads[known]  # addresses whose last upload is older than the window are forgotten
        spent = self._uploads[address]
        while spent and now - spent[0][0] > UPLOAD_WINDOW:
            spent.popleft()
        if len(spent) >= UPLOAD_FILES or sum(b for _, b in spent) + size > UPLOAD_BYTES:
            return await _respond(send, 429, UPLOAD_SPENT)
        spent.append((now, size))
        start: dict[str, Any] = {}
        chunks: list[bytes] = []

        async def keep(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                start.update(message)
            else:
                chunks.append(message.get("body", b""))

        await self.app(scope, receive, keep)
        body = b"".join(chunks)
        try:
            stored = json.loads(body) if start.get("status") == 200 else None
        except ValueError:
            stored = None
        if isinstance(stored, list) and (len(stored) != 1 or not str(stored[0]).endswith(UPLOAD_SUFFIX)):
            for path in stored:
                Path(str(path)).unlink(missing_ok=True)
            return await _respond(send, 400, UPLOAD_ONE)
        await send(start)
        await send({"type": "http.response.body", "body": body})
