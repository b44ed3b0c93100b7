"""The page's door: every request's size capped before Gradio reads it, and on a served page fair queueing, the upload
policy and only the routes the page uses, applied to Gradio's own routes before Gradio sees them.

Gradio serves more POST routes than the queue (`/run/`, `/api/`, `/cancel`, `/upload`, `/process_recording`, ...),
and each parses its body whole before any handler's limit can apply, so these rules sit in front of all of them, as
an ASGI middleware (`launch_options()` installs it; `watch` tells it which page runs under which policy).

On every page, local or served, a request's body is held only up to its route's cap (UPLOAD_BYTES for an upload,
BODY_BYTES for anything else): a longer one is refused with one sentence, never echoed. On a served page also:

- POSTs reach only the routes the page itself uses (SERVED_POSTS); Gradio's others answer 404;
- a visitor (a session, and a client address: app/ui/address.py) holds at most one race or sweep at a time, running
  or waiting, and one address at most ADDRESS_EVENTS queued requests of any kind, so one client cannot fill the
  queue; a refused join gets one sentence (the browser shows it); an address may leave answers unread under at most
  UNREAD_SESSIONS sessions, and run at most OFF_QUEUE_AT_ONCE calls off the queue at once (OFF_QUEUE_HELD waiting);
- with the `upload` capability off, nothing is uploaded at all, whatever route or letter case a request tries; on,
  each upload is one .jsonl file (what the page's upload box takes) within a budget per address of UPLOAD_FILES files
  and UPLOAD_BUDGET bytes per UPLOAD_WINDOW seconds (the age at which Gradio's cache drops them); anything refused
  is deleted, half-received files included, and no stored upload is served back by its path;
- a reply that would repeat a malformed body (FastAPI's 422) says one sentence instead, and Gradio's deep link (a
  snapshot of any session named to it) answers 404.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
import weakref
from collections import OrderedDict, defaultdict, deque
from pathlib import Path
from typing import Any, Awaitable, Callable

from app.serving.policy import Policy
from app.trace.frames import MAX_RECORDING_BYTES
from app.ui.address import address_of, scope_address

HEAVY = ("race", "sweep")  # the concurrency ids of the work a visitor may hold only one of at a time
ADDRESS_EVENTS = 8  # requests one address may have queued or running at once, of any kind
UPLOAD_FILES = 8
UPLOAD_BUDGET = 128 * 2**20
UPLOAD_WINDOW = 3600.0
UPLOAD_SUFFIX = ".jsonl"
BODY_BYTES = 2 * 2**20  # any body but an upload's: every input of a handler within its declared limit fits (the
# largest, a race run in the browser to save, at 1.5 MB; the others many times)
UPLOAD_BYTES = MAX_RECORDING_BYTES + 2**20  # one recording at its cap, and the multipart framing around it
DRAIN_BYTES = 64 * 2**20  # past its cap, a body declared this long or less is read and dropped so its client gets
# the sentence rather than a reset connection; a longer one is refused without reading it
UPLOADS_KEPT = 65_536  # stored uploads remembered (to refuse serving them back), oldest forgotten first
UNREAD_SESSIONS = 8  # sessions of one address whose answers may wait unread at once: Gradio keeps every answer (a
# player's payload is up to tens of MB) until its session reads its event stream, which a browser does at once
SESSIONS_KEPT = 256  # an address's sessions the door remembers while Gradio holds messages for them
ADDRESSES_KEPT = 65_536  # addresses remembered with their sessions, least recently seen forgotten first
OFF_QUEUE_AT_ONCE = 4  # calls one address may have running off the queue at once (the page load, a lesson's text);
OFF_QUEUE_HELD = 64  # more wait their turn (a class behind one address opening the page), up to this many in all
OFF_QUEUE = ("/run/", "/api/")  # the routes that run a handler off the queue (the queued ones answer 404 there)
REFUSED_GETS = ("/deep_link",)  # Gradio's deep link writes any named session's components to disk for anyone
API = "/gradio_api"
JOIN_ROUTES = ("/queue/join", "/call/")
SERVED_POSTS = ("/queue/join", "/call/", "/run/", "/api/", "/cancel", "/reset", "/upload")  # what the page posts to
FILE_ROUTES = ("/file=", "/file/")

HELD = ("You already have a race or sweep running or waiting on this server; wait for it to end, or stop it, "
        "before starting another.")
BUSY = f"You already have {ADDRESS_EVENTS} requests waiting on this server; wait for them to finish."
BUSY_OFF_QUEUE = (f"You already have {OFF_QUEUE_HELD} requests running or waiting on this server; wait for them "
                  "to finish.")
UNREAD = (f"Answers to {UNREAD_SESSIONS} of your sessions are waiting unread on this server; read them (or close "
          "those tabs) before asking for more.")
UPLOAD_OFF = "Uploading files is off on this server."
UPLOAD_SPENT = (f"You have used this server's upload budget ({UPLOAD_FILES} files or {UPLOAD_BUDGET // 2**20} MB an "
                "hour); try again later.")
UPLOAD_ONE = f"Upload one {UPLOAD_SUFFIX} recording at a time."
UPLOAD_SIZE = "An upload must say its size (Content-Length)."
UPLOAD_TOO_BIG = f"This upload is larger than the server takes ({UPLOAD_BYTES // 2**20} MB)."
TOO_BIG = f"This request is larger than the server takes ({BODY_BYTES // 2**20} MB); shorten what you typed."
BAD_LENGTH = "This request's Content-Length is not a number."
NOT_HERE = "Not found."
MALFORMED = "This request could not be read; reload the page and try again."

_policies: "weakref.WeakKeyDictionary[Any, Policy]" = weakref.WeakKeyDictionary()

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


def watch(blocks: Any, policy: Policy) -> None:
    """Puts the page `blocks` behind the door under `policy`."""
    _policies[blocks] = policy


def route_of(path: str) -> str:
    """A request path as the route Gradio matches, without its API prefix or a trailing slash ('/upload')."""
    path = path.rstrip("/") or "/"
    return path[path.index(API) + len(API):] or "/" if API in path else path


def is_multipart(headers: list[tuple[str, str]]) -> bool:
    """Whether any Content-Type header names a multipart body, in any letter case or spacing (a parser may read the
    first header of several, and compares without case)."""
    return any(v.strip().lower().startswith("multipart") for k, v in headers if k == "content-type")


def _declared_length(headers: list[tuple[str, str]]) -> int | None:
    """The Content-Length the request declares (the largest, when several); None when it declares none. Raises
    ValueError for one that is not a number."""
    lengths = [int(v.strip()) for k, v in headers if k == "content-length"]
    if any(n < 0 for n in lengths):
        raise ValueError("negative Content-Length")
    return max(lengths) if lengths else None


def _held(blocks: Any) -> list[tuple[str, str, bool]]:
    """(address, session, heavy) of every request in the page's queue, waiting or running."""
    queue = blocks._queue
    events = [e for q in list(queue.event_queue_per_concurrency_id.values()) for e in list(q.queue)]
    events += [e for job in list(queue.active_jobs) if job for e in job]
    return [(address_of(e.request) or "", e.session_hash, e.concurrency_id in HEAVY) for e in events]


async def _respond(send: Send, status: int, sentence: str) -> None:
    body = json.dumps({"detail": sentence, "error": sentence}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body})


async def _read_body(receive: Receive, limit: int) -> bytes | None:
    """The request's body, or None as soon as it passes `limit` bytes (what came is dropped, the rest is not read)."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return b"".join(chunks)
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
        if not message.get("more_body"):
            return b"".join(chunks)


async def _refuse(send: Send, receive: Receive, status: int, sentence: str, declared: int | None) -> None:
    """Answers with `sentence`; a body declared within DRAIN_BYTES is first read and dropped, a chunk at a time, so
    an ordinary client reads the answer instead of a reset connection. Nothing of it is kept."""
    if declared is not None and 0 < declared <= DRAIN_BYTES:
        while True:
            message = await receive()
            if message["type"] == "http.disconnect" or not message.get("more_body"):
                break
    await _respond(send, status, sentence)


def _quiet(send: Send) -> Send:
    """`send` for a served page's requests: a 422 reply (FastAPI's, which repeats the malformed input) says one
    sentence instead."""
    quiet = False

    async def quieted(message: dict[str, Any]) -> None:
        nonlocal quiet
        if message["type"] == "http.response.start" and message.get("status") == 422:
            quiet = True
            return
        if not quiet:
            return await send(message)
        if not message.get("more_body"):
            await _respond(send, 422, MALFORMED)
    return quieted


def _replayed(body: bytes, receive: Receive) -> Receive:
    """A receive that hands the app the body already read, then the connection's own messages (a disconnect)."""
    sent = False

    async def replay() -> dict[str, Any]:
        nonlocal sent
        if sent:
            return await receive()
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}
    return replay


def _capped(receive: Receive, limit: int) -> Receive:
    """A receive that ends the request as a disconnect once its body passes `limit` bytes (a body sent without a
    Content-Length, which the HTTP parser cannot hold to one)."""
    size = 0

    async def capped() -> dict[str, Any]:
        nonlocal size
        message = await receive()
        size += len(message.get("body", b""))
        return {"type": "http.disconnect"} if size > limit else message
    return capped


class Door:
    """The ASGI middleware: caps every request's body, and lets a served page's joins and uploads through only within
    the rules above."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self._joining: list[tuple[str, str, bool]] = []  # joins that passed the door and are not yet in the queue
        self._uploads: dict[str, deque[tuple[float, int]]] = defaultdict(deque)  # address -> (when, bytes)
        self._stored: OrderedDict[str, float] = OrderedDict()  # real path of each stored upload -> when
        self._sessions: OrderedDict[str, OrderedDict[str, None]] = OrderedDict()  # address -> its latest sessions
        self._uploading = 0  # uploads being received now
        self._running: dict[str, int] = defaultdict(int)  # address -> its calls running or waiting off the queue
        self._turns: dict[str, asyncio.Semaphore] = {}  # address -> its turns to run off the queue

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        get_blocks = getattr(scope.get("app"), "get_blocks", None)
        blocks = get_blocks() if get_blocks else None
        policy = _policies.get(blocks) if blocks is not None else None
        served = policy is not None and policy.served
        headers = [(k.decode("latin-1").lower(), v.decode("latin-1")) for k, v in scope.get("headers", [])]
        route, method = route_of(scope.get("path", "")), scope.get("method", "")
        if method in ("GET", "HEAD"):
            if served and (route in REFUSED_GETS or route.startswith(FILE_ROUTES) and self._is_stored(route)):
                return await _respond(send, 404, NOT_HERE)
            return await self.app(scope, receive, send)
        try:
            declared = _declared_length(headers)
        except ValueError:
            return await _respond(send, 400, BAD_LENGTH)
        drain = None if any(k == "expect" for k, _ in headers) else declared  # a client that waits to be told
        if served:                                                             # to send is refused before it does
            send = _quiet(send)
            if method != "POST" or not route.startswith(SERVED_POSTS):
                return await _refuse(send, receive, 404, NOT_HERE, drain)
        if route == "/upload":
            return await self._upload(policy, headers, declared, drain, scope, receive, send)
        if policy is not None and served and is_multipart(headers):
            return await _refuse(send, receive, 403, UPLOAD_OFF if not policy.can("upload") else UPLOAD_ONE, drain)
        if declared is not None and declared > BODY_BYTES:
            return await _refuse(send, receive, 413, TOO_BIG, drain)
        body = await _read_body(receive, BODY_BYTES)
        if body is None:
            return await _respond(send, 413, TOO_BIG)
        if served and route.startswith(JOIN_ROUTES):
            return await self._join(blocks, scope_address(scope), route, body, scope, receive, send)
        if served and route.startswith(OFF_QUEUE):
            return await self._off_queue(scope_address(scope), body, scope, receive, send)
        return await self.app(scope, _replayed(body, receive), send)

    async def _off_queue(self, address: str, body: bytes, scope: Scope, receive: Receive, send: Send) -> None:
        """A call of a handler that runs off the queue, which no queue limit reaches: at most OFF_QUEUE_AT_ONCE of an
        address's run at once and the rest wait their turn, up to OFF_QUEUE_HELD in all; beyond that one is refused."""
        if self._running[address] >= OFF_QUEUE_HELD:
            return await _respond(send, 429, BUSY_OFF_QUEUE)
        self._running[address] += 1
        turn = self._turns.setdefault(address, asyncio.Semaphore(OFF_QUEUE_AT_ONCE))
        try:
            async with turn:
                await self.app(scope, _replayed(body, receive), send)
        finally:
            self._running[address] -= 1
            if not self._running[address]:
                del self._running[address], self._turns[address]

    async def _join(self, blocks: Any, address: str, route: str, body: bytes, scope: Scope, receive: Receive,
                    send: Send) -> None:
        """A queue join: refused when the visitor holds a race or sweep already, or the address its queue share."""
        try:
            data = json.loads(body or b"{}")
        except ValueError:
            data = {}
        data = data if isinstance(data, dict) else {}
        fn = None
        if route.startswith("/call/"):
            name = route.rsplit("/", 1)[-1]
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
        if self._unread(blocks, address, session) >= UNREAD_SESSIONS:
            return await _respond(send, 429, UNREAD)
        mark = (address, session, heavy)
        self._joining.append(mark)
        try:
            await self.app(scope, _replayed(body, receive), send)
        finally:
            self._joining.remove(mark)

    async def _upload(self, policy: Policy | None, headers: list[tuple[str, str]], declared: int | None,
                      drain: int | None, scope: Scope, receive: Receive, send: Send) -> None:
        """Gradio's upload route, capped at UPLOAD_BYTES; on a served page off unless the policy allows it, then one
        .jsonl within the address's budget. A refused body is drained (see _refuse) when `drain` says how long."""
        served = policy is not None and policy.served
        if policy is not None and served and not policy.can("upload"):
            return await _refuse(send, receive, 403, UPLOAD_OFF, drain)
        if served and declared is None:
            return await _respond(send, 411, UPLOAD_SIZE)
        if declared is not None and declared > UPLOAD_BYTES:
            return await _refuse(send, receive, 413, UPLOAD_TOO_BIG, drain)
        if not served:
            return await self.app(scope, _capped(receive, UPLOAD_BYTES), send)
        if not self._spend(scope_address(scope), declared or 0):
            return await _respond(send, 429, UPLOAD_SPENT)
        start: dict[str, Any] = {}
        chunks: list[bytes] = []

        async def keep(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                start.update(message)
            else:
                chunks.append(message.get("body", b""))

        self._uploading += 1
        try:
            await self.app(scope, receive, keep)
        finally:
            self._uploading -= 1
            if not self._uploading:
                _sweep_partial(scope)
        body = b"".join(chunks)
        try:
            stored = json.loads(body) if start.get("status") == 200 else None
        except ValueError:
            stored = None
        if isinstance(stored, list) and (len(stored) != 1 or not str(stored[0]).endswith(UPLOAD_SUFFIX)):
            for path in stored:
                Path(str(path)).unlink(missing_ok=True)
            return await _respond(send, 400, UPLOAD_ONE)
        if isinstance(stored, list):
            self._remember(str(stored[0]))
        await send(start)
        await send({"type": "http.response.body", "body": body})

    def _unread(self, blocks: Any, address: str, session: str) -> int:
        """Notes that `address` joins under `session`; how many of its other sessions hold answers that no event
        stream has read (a client that joins under fresh sessions and never reads would pile them up in memory). A
        session is remembered while Gradio keeps a message queue for it, which it drops once its stream has ended."""
        sessions = self._sessions.pop(address, OrderedDict())
        self._sessions[address] = sessions
        while len(self._sessions) > ADDRESSES_KEPT:
            self._sessions.popitem(last=False)
        pending = blocks._queue.pending_messages_per_session
        for gone in [s for s in sessions if s not in pending]:
            del sessions[gone]
        waiting = sum(1 for s in sessions if s != session and not pending[s].empty())
        if session:
            sessions.pop(session, None)
            sessions[session] = None
            while len(sessions) > SESSIONS_KEPT:
                sessions.popitem(last=False)
        return waiting

    def _spend(self, address: str, size: int) -> bool:
        """Counts an upload of `size` bytes against the address's budget; False when the budget is spent."""
        now = time.monotonic()
        for known in [a for a, d in self._uploads.items() if not d or now - d[-1][0] > UPLOAD_WINDOW]:
            del self._uploads[known]  # addresses whose last upload is older than the window are forgotten
        spent = self._uploads[address]
        while spent and now - spent[0][0] > UPLOAD_WINDOW:
            spent.popleft()
        if len(spent) >= UPLOAD_FILES or sum(b for _, b in spent) + size > UPLOAD_BUDGET:
            return False
        spent.append((now, size))
        return True

    def _remember(self, path: str) -> None:
        """Notes a stored upload so it is never served back by its path (Gradio's cache serves any file in it)."""
        now = time.monotonic()
        self._stored[os.path.realpath(path)] = now
        while self._stored and (len(self._stored) > UPLOADS_KEPT
                                or now - next(iter(self._stored.values())) > UPLOAD_WINDOW * 2):
            self._stored.popitem(last=False)

    def _is_stored(self, route: str) -> bool:
        """Whether a file route names a stored upload."""
        target = route.split("=", 1)[1] if route.startswith("/file=") else route[len("/file/"):]
        return bool(target) and os.path.realpath(target) in self._stored


def _sweep_partial(scope: Scope) -> None:
    """Removes half-received uploads: Gradio writes each file into its upload folder as it arrives and moves it into
    a folder of its own once whole, so with no upload in flight a file left loose there is one whose client went
    away mid-way (Gradio removes those only when the body is malformed)."""
    folder = getattr(scope.get("app"), "uploaded_file_dir", None)
    if not folder or not os.path.isdir(folder):
        return
    for entry in os.scandir(folder):
        if entry.name.startswith("tmp") and entry.is_file(follow_symlinks=False):
            Path(entry.path).unlink(missing_ok=True)
