"""The page's door: every request held to its route's budget (app/ui/budgets.py) before Gradio reads it, and on a
served page fair queueing and the upload policy, applied to Gradio's own routes before Gradio sees them.

Gradio serves more routes than the queue (`/run/`, `/api/`, `/cancel`, `/upload`, `/process_recording`, ...), and
each parses its body whole before any handler's limit can apply, so these rules sit in front of all of them, as an
ASGI middleware (`launch_options()` installs it; `watch` tells it which page runs under which policy).

On every page, local or served, a request's body is held only up to its cap (UPLOAD_BYTES for an upload,
BODY_BYTES for anything else; a longer one is refused with one sentence, never echoed), and every reply leaves a
chunk at a time (`Paced`). On a served page also:

- each request runs in its address's turn at its route's budget (`Turns`): so many at once, so many more waiting,
  the rest refused with 429; a route the table refuses, or one it does not name, answers 404; a client that takes
  no chunk of a reply for SEND_TIMEOUT seconds has its connection closed, which frees its turn;
- a visitor (a session, and a client address: app/ui/address.py) holds at most one heavy call (a race or sweep) at
  a time, running or waiting, an address at most its handler group's share of the queue (HANDLERS' per_address)
  and QUEUED_PER_ADDRESS queued requests of any kind, so one client cannot fill the queue; a refused join gets one
  sentence (the browser shows it); an address may leave answers unread under at most UNREAD_SESSIONS sessions;
- with the `upload` capability off, nothing is uploaded at all, whatever route or letter case a request tries; on,
  each upload is one .jsonl file (what the page's upload box takes) within a budget per address of UPLOAD_FILES files
  and UPLOAD_BUDGET bytes per UPLOAD_WINDOW seconds (the age at which Gradio's cache drops them); anything refused
  is deleted, half-received files included, and no stored upload is served back by its path;
- a reply that would repeat a malformed body (FastAPI's 422) says one sentence instead.
"""

from __future__ import annotations

import json
import os
import time
import weakref
from collections import OrderedDict
from pathlib import Path
from typing import Any, Awaitable, Callable

from app.serving.policy import Policy
from app.trace.usage import Window
from app.ui.address import address_of, scope_address
from app.ui.budgets import (
    BODY_BYTES,
    HANDLERS,
    QUEUED_PER_ADDRESS,
    SEND_TIMEOUT,
    UNREAD_SESSIONS,
    UPLOAD_BUDGET,
    UPLOAD_BYTES,
    UPLOAD_FILES,
    UPLOAD_WINDOW,
    Route,
    route_budget,
)
from app.ui.turns import Paced, Turns

HEAVY = tuple(name for name, h in HANDLERS.items() if h.heavy)  # a visitor holds one call of these at a time
DRAIN_BYTES = 64 * 2**20  # past its cap, a body declared this long or less is read and dropped so its client gets
# the sentence rather than a reset connection; a longer one is refused without reading it
UPLOADS_KEPT = 65_536  # stored uploads remembered (to refuse serving them back), oldest forgotten first
SESSIONS_KEPT = 256  # an address's sessions the door remembers while Gradio holds messages for them
ADDRESSES_KEPT = 65_536  # addresses remembered with their sessions, least recently seen forgotten first
API = "/gradio_api"
UPLOAD_SUFFIX = ".jsonl"
FILE_ROUTES = ("/file=", "/file/")

HELD = ("You already have a race or sweep running or waiting on this server; wait for it to end, or stop it, "
        "before starting another.")
BUSY = f"You already have {QUEUED_PER_ADDRESS} requests waiting on this server; wait for them to finish."
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


def page_of(scope: Scope) -> tuple[Any, Policy | None]:
    """The page a request reaches (Gradio's Blocks) and the policy it is watched under (None: not watched)."""
    get_blocks = getattr(scope.get("app"), "get_blocks", None)
    blocks = get_blocks() if get_blocks else None
    return blocks, _policies.get(blocks) if blocks is not None else None


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


def _headers(scope: Scope) -> list[tuple[str, str]]:
    """A request's headers, names in lower case."""
    return [(k.decode("latin-1").lower(), v.decode("latin-1")) for k, v in scope.get("headers", [])]


def _drain(headers: list[tuple[str, str]], declared: int | None) -> int | None:
    """How much of a refused body to read and drop (see _refuse): none for a client that waits to be told to send
    (`Expect`), which is refused before it does."""
    return None if any(k == "expect" for k, _ in headers) else declared


def _held(blocks: Any) -> list[tuple[str, str, str]]:
    """(address, session, handler group) of every request in the page's queue, waiting or running."""
    queue = blocks._queue
    events = [e for q in list(queue.event_queue_per_concurrency_id.values()) for e in list(q.queue)]
    events += [e for job in list(queue.active_jobs) if job for e in job]
    return [(address_of(e.request) or "", e.session_hash, str(e.concurrency_id)) for e in events]


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


def held_too_many(group: str) -> str:
    """The sentence that refuses a join past the address's share of a handler group."""
    handler = HANDLERS[group]
    return (f"You already have {handler.per_address} {handler.what} running or waiting on this server; wait for "
            "them to finish.")


def busy(budget: Route) -> str:
    """The sentence that refuses a request past its address's share of `budget`."""
    return (f"You already have {budget.connections + budget.waiting} {budget.what} running or waiting on this server; "
            "try again when they finish.")


class Door:
    """The ASGI middleware: holds every request to its route's budget (app/ui/budgets.py), and lets a served page's
    joins and uploads through only within the rules above. `policy` is for a door tested alone; a page's door finds
    the policy of the page it is in front of (`watch`)."""

    def __init__(self, app: Any, policy: Policy | None = None) -> None:
        self.app = app
        self.policy = policy
        self._joining: list[tuple[str, str, str]] = []  # joins that passed the door and are not yet in the queue
        self._uploads = Window(UPLOAD_WINDOW)  # what each address uploaded within the window
        self._stored: OrderedDict[str, float] = OrderedDict()  # real path of each stored upload -> when
        self._sessions: OrderedDict[str, OrderedDict[str, None]] = OrderedDict()  # address -> its latest sessions
        self._uploading = 0  # uploads being received now
        self.turns = Turns()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        blocks, policy = page_of(scope)
        policy = self.policy or policy
        served = policy is not None and policy.served
        name, budget = route_budget(scope.get("method", ""), scope.get("path", ""))
        out = Paced(send, SEND_TIMEOUT if served else None)

        async def work() -> None:
            await self._handle(blocks, policy, name, budget, scope, receive, out)

        try:
            if not served:
                return await work()
            if not budget.connections:
                return await self._refuse_route(scope, receive, out)
            await self.turns.run(scope_address(scope), name, budget, work,
                                 lambda: _respond(out, 429, busy(budget)))
        except BaseException:
            if out.stuck:
                return  # the client stopped reading: the server closes its connection
            raise

    async def _refuse_route(self, scope: Scope, receive: Receive, send: Send) -> None:
        """A route a served page does not use: 404, the body (if any) drained as _refuse does."""
        headers = _headers(scope)
        try:
            declared = _declared_length(headers)
        except ValueError:
            declared = None
        await _refuse(_quiet(send), receive, 404, NOT_HERE, _drain(headers, declared))

    async def _handle(self, blocks: Any, policy: Policy | None, name: str, budget: Route, scope: Scope,
                      receive: Receive, send: Send) -> None:
        """One request within its turn: its body held to its cap, then a join, an upload or any other request."""
        served = policy is not None and policy.served
        headers = _headers(scope)
        route, method = route_of(scope.get("path", "")), scope.get("method", "")
        if method in ("GET", "HEAD"):
            if served and route.startswith(FILE_ROUTES) and self._is_stored(route):
                return await _respond(send, 404, NOT_HERE)
            return await self.app(scope, receive, send)
        try:
            declared = _declared_length(headers)
        except ValueError:
            return await _respond(send, 400, BAD_LENGTH)
        drain = _drain(headers, declared)
        if served:
            send = _quiet(send)
        if name == "uploads":
            return await self._upload(policy, headers, declared, drain, scope, receive, send)
        if policy is not None and served and is_multipart(headers):
            return await _refuse(send, receive, 403, UPLOAD_OFF if not policy.can("upload") else UPLOAD_ONE, drain)
        cap = budget.body if served else BODY_BYTES
        if declared is not None and declared > cap:
            return await _refuse(send, receive, 413, TOO_BIG, drain)
        body = await _read_body(receive, cap)
        if body is None:
            return await _respond(send, 413, TOO_BIG)
        if served and name == "joins":
            return await self._join(blocks, scope_address(scope), route, body, scope, receive, send)
        return await self.app(scope, _replayed(body, receive), send)

    async def _join(self, blocks: Any, address: str, route: str, body: bytes, scope: Scope, receive: Receive,
                    send: Send) -> None:
        """A queue join: refused when the visitor holds a heavy call already, the address its share of the handler's
        group (app/ui/budgets.py HANDLERS) or of the queue, or answers unread under too many sessions."""
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
        group = str(fn.concurrency_id) if fn is not None else ""
        held = _held(blocks) + self._joining
        mine = [g for a, s, g in held if a == address or (session and s == session)]
        if group in HEAVY and any(g in HEAVY for g in mine):
            return await _respond(send, 429, HELD)
        if group in HANDLERS and sum(g == group for a, _, g in held if a == address) >= HANDLERS[group].per_address:
            return await _respond(send, 429, held_too_many(group))
        if sum(a == address for a, _, _ in held) >= QUEUED_PER_ADDRESS:
            return await _respond(send, 429, BUSY)
        if self._unread(blocks, address, session) >= UNREAD_SESSIONS:
            return await _respond(send, 429, UNREAD)
        mark = (address, session, group)
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
        self._uploads.forget_old(now)  # addresses that uploaded nothing within the window are forgotten
        if (self._uploads.charges(address, now) >= UPLOAD_FILES
                or self._uploads.spent(address, now) + size > UPLOAD_BUDGET):
            return False
        self._uploads.charge(address, size, now)
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
