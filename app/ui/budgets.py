"""What one client address may take of every route and handler of the page: the one table the door enforces
(app/ui/door.py), Gradio's queue runs by (`queued`), and docs/security.md prints (`markdown`, checked by
tests/test_budgets.py, which also enumerates the running served page's routes and handlers and fails on one this
table does not name).

Why one table: four rounds of attacks each found the next surface without a limit (the routes outside the queue,
then the site's files and the save box). Here every route a server answers and every handler it runs has a budget
per client address (app/ui/address.py), and a new one without a budget fails the page's build (`budgeted`) or the
suite. On a local page (the trusted user on 127.0.0.1) only the body caps apply.

A route's budget: requests of it one address has running at once (its connections doing work), how many more wait
their turn (past that, 429 with one sentence), how many it may start a second past that burst (app/ui/turns.py),
the most body one request may send, what bounds the work one request does, and what it may write to disk an hour.
Every reply leaves SEND_CHUNK bytes at a time, and on a served page each chunk must be taken by the client within
SEND_TIMEOUT seconds or the connection is closed, so a client that never reads holds one chunk, not the whole reply,
and gives its turn back. A handler's budget: how many run at once across the page (Gradio's concurrency limit), how
many one address may have queued or running, what bounds one call, and the disk it may write per address an hour
(app/trace/store.py's hourly budget, one for all that an address saves: races, uploads, Be the sampler runs and
browser races).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from app.trace.frames import MAX_RECORDING_BYTES
from app.trace.store import ADDRESS_HOUR_BYTES

SEND_CHUNK = 32 * 2**10  # bytes of a reply handed to a connection at once: what a reader that stops reading holds
SEND_TIMEOUT = 30.0  # seconds a served page waits for a client to take one chunk before it closes the connection
BODY_BYTES = 2 * 2**20  # any body but an upload's: every input of a handler within its declared limit fits (the
# largest, a race run in the browser to save, at 1.5 MB; the others many times)
UPLOAD_BYTES = MAX_RECORDING_BYTES + 2**20  # one recording at its cap, and the multipart framing around it
UPLOAD_FILES = 8  # uploads an address may store an hour
UPLOAD_BUDGET = 128 * 2**20  # bytes an address may upload an hour (counted by each upload's declared length)
UPLOAD_WINDOW = 3600.0  # the hour (the age at which Gradio's cache drops uploads)
QUEUED_PER_ADDRESS = 8  # requests one address may have queued or running at once, of any handler
UNREAD_SESSIONS = 8  # sessions of one address whose answers may wait unread at once: Gradio keeps every answer (a
# player's payload is up to tens of MB) until its session reads its event stream, which a browser does at once


@dataclass(frozen=True)
class Route:
    """What one client address may take of a kind of route."""

    what: str  # how a refusal names it: "downloads of the page's files"
    connections: int  # requests of it one address has running at once; 0: a served page answers 404
    waiting: int  # more that wait their turn; past that, refused with 429
    body: int  # the most bytes one request's body may hold
    cost: str  # what bounds the work one request does
    disk_per_hour: int = 0  # bytes one address may make it write to disk an hour
    per_second: float = 0.0  # requests of it one address may start a second past a burst of connections + waiting
    # (0: no rate): each request costs the server's one event loop its parsing, so a flood of cheap ones is held to
    # a rate as well as a count


@dataclass(frozen=True)
class Handler:
    """What one client address may take of a group of the page's handlers (a Gradio concurrency id)."""

    what: str
    at_once: int  # calls of the group running at once across the page (Gradio's concurrency limit)
    per_address: int  # calls one address may have queued or running at once
    cost: str  # what bounds the work of one call
    disk_per_hour: int = 0  # bytes one address may make the group write to disk an hour
    heavy: bool = False  # a visitor (a session, and an address) holds one heavy call at a time, of all heavy groups


REFUSED = Route("routes the page does not use", 0, 0, 0, "none: a served page answers 404")
PAGE = Route("page loads", 4, 60, 0, "one reply made once and kept (app/ui/page_cache.py), or one small reply",
             per_second=30)
FILES = Route("downloads of the page's files", 6, 58, 0, "one file read from disk, sent a chunk at a time",
              per_second=100)
SITE = Route("downloads of the browser race's files", 6, 58, 0,
             "one file of the built site, compressed once at start, sent a chunk at a time")
STREAMS = Route("open event streams", 256, 0, 0,
                "messages of the address's own queued calls (QUEUED_PER_ADDRESS, UNREAD_SESSIONS) and heartbeats")
JOINS = Route("requests to join the queue", 8, 56, BODY_BYTES, "checks against the handlers' budgets below",
              per_second=20)
OFF_QUEUE = Route("calls that run off the queue", 4, 60, BODY_BYTES,
                  "handlers that change only what the page shows, and the page-load handler", per_second=20)
CONTROL = Route("cancels and resets", 4, 60, BODY_BYTES, "one event of the caller's own session", per_second=20)
UPLOADS = Route("uploads", 2, 6, UPLOAD_BYTES, "one .jsonl file, stored, then read under the recording caps",
                UPLOAD_BUDGET)

ROUTE_BUDGETS: dict[str, Route] = {"refused": REFUSED, "page": PAGE, "files": FILES, "site": SITE,
                                   "streams": STREAMS, "joins": JOINS, "off-queue": OFF_QUEUE, "control": CONTROL,
                                   "uploads": UPLOADS}

SITE_TEMPLATE = "/converge-site/{path:path}"  # the browser race's files (app/ui/site_files.py)
_G = "/gradio_api"
# every route the page's server answers, by method and path template as Gradio (and the site's files) declare it,
# a trailing slash aside; HEAD goes as GET
ROUTES: dict[tuple[str, str], str] = {
    **{("GET", path): "page" for path in (
        "/", "/config", "/theme.css", "/robots.txt", "/manifest.json", "/openapi.json", f"{_G}/openapi.json",
        f"{_G}/info", f"{_G}/theme.css", f"{_G}/user", f"{_G}/login_check", f"{_G}/token", f"{_G}/app_id",
        f"{_G}/startup-events", f"{_G}/queue/status")},
    **{("GET", path): "files" for path in (
        "/assets/{path:path}", "/static/{path:path}", "/svelte/{path:path}", "/favicon.ico", "/pwa_icon",
        "/pwa_icon/{size}", f"{_G}/file={{path_or_url:path}}", f"{_G}/file/{{path:path}}")},
    ("GET", SITE_TEMPLATE): "site",
    **{("GET", path): "streams" for path in (
        f"{_G}/queue/data", f"{_G}/heartbeat/{{session_hash}}", f"{_G}/call/{{api_name}}/{{event_id}}",
        f"{_G}/call/v2/{{api_name}}/{{event_id}}", f"{_G}/upload_progress")},
    **{("POST", path): "joins" for path in (
        f"{_G}/queue/join", f"{_G}/call/{{api_name}}", f"{_G}/call/v2/{{api_name}}")},
    **{("POST", path): "off-queue" for path in (f"{_G}/run/{{api_name}}", f"{_G}/api/{{api_name}}")},
    **{("POST", path): "control" for path in (f"{_G}/cancel", f"{_G}/reset")},
    ("POST", f"{_G}/upload"): "uploads",
    # Gradio's routes the page never uses: a deep link writes any named session to disk; the others log in, monitor,
    # proxy, stream media, process recordings, edit the app ("vibe") or reload it
    **{("GET", path): "refused" for path in (
        f"{_G}/deep_link", "/logout", "/monitoring", "/monitoring/summary", "/monitoring/{key}", f"{_G}/runs",
        f"{_G}/dev/reload", f"{_G}/vibe-code", f"{_G}/proxy={{url_path:path}}",
        f"{_G}/custom_component/{{id}}/{{environment}}/{{type}}/{{file_name}}",
        f"{_G}/stream/{{session_hash}}/{{run}}/{{component_id}}/playlist.m3u8",
        f"{_G}/stream/{{session_hash}}/{{run}}/{{component_id}}/{{segment_id}}.{{ext}}",
        f"{_G}/stream/{{session_hash}}/{{run}}/{{component_id}}/playlist-file")},
    **{("POST", path): "refused" for path in (
        "/login", f"{_G}/stream/{{event_id}}", f"{_G}/stream/{{event_id}}/close", f"{_G}/component_server",
        f"{_G}/process_recording", f"{_G}/vibe-edit", f"{_G}/undo-vibe-edit", f"{_G}/vibe-code",
        f"{_G}/vibe-starter-queries")},
}

UNLOAD = "unload"  # the group of the handler Gradio runs when a session's page closes (it takes no options)
VIEW = "view"  # the group of the handlers that run off the queue (their budget is the off-queue route's)
HANDLERS: dict[str, Handler] = {
    "race": Handler("races", 8, 1, "two sides, each at most its source's answer length (the twins: 320 tokens) and "
                    "one CPU slot (app/race/compute.py); its recording at most 64 MB; ends at Stop", ADDRESS_HOUR_BYTES,
                    heavy=True),
    "sweep": Handler("sweeps", 1, 1, "a fixed grid of twin runs on one CPU slot; ends at Stop", heavy=True),
    "board": Handler("the twins' board", 1, 1, "both twins at their defaults (a board lesson's: at its "
                     "settings) over 6 held-out openings, one race at a time, each bounded and saved as a race is (a "
                     "CPU slot a side, the race time limit, its recording at most 64 MB)", ADDRESS_HOUR_BYTES,
                     heavy=True),
    "recording": Handler("reads of a whole recording (Load, Upload, Download, after Stop, a browser race's save)", 2,
                         QUEUED_PER_ADDRESS, "one recording within the caps (64 MB, 8,000,000 cells)",
                         ADDRESS_HOUR_BYTES),
    "export": Handler("exports", 1, 2, "one recording within the caps, on one of two export threads; stops when "
                      "cancelled"),
    "models": Handler("model lists and settings panels", 8, QUEUED_PER_ADDRESS,
                      "one listing request to an endpoint the host allows, or a panel's settings"),
    "sampler": Handler("Be the sampler steps", 4, QUEUED_PER_ADDRESS,
                       "one forward pass of the twin; at most 2 runs kept an address (app/ui/hand_runs.py)",
                       ADDRESS_HOUR_BYTES),
    "library": Handler("library views, renames and deletes", 4, QUEUED_PER_ADDRESS,
                       "one listing of the visitor's own folder (at most 100 runs)"),
    UNLOAD: Handler("the end of a session (its page closed)", 4, QUEUED_PER_ADDRESS,
                    "forgets the session's hand-stepped runs; Gradio runs it, no visitor calls it"),
    VIEW: Handler("handlers that change only what the page shows, and Stop", OFF_QUEUE.connections,
                  OFF_QUEUE.connections + OFF_QUEUE.waiting, "the page-load handler, an example prompt, a lesson's "
                  "text and settings; Stop sets the stop of the session's own race"),
}


def queued(group: str) -> dict[str, Any]:
    """The event options that put a handler in `group` under its budget (Gradio's concurrency id and limit)."""
    return {"concurrency_id": group, "concurrency_limit": HANDLERS[group].at_once}


def _pattern(template: str) -> re.Pattern[str]:
    parts = re.split(r"(\{[^}]*\})", template.rstrip("/") or "/")
    return re.compile("".join((".*" if p.endswith(":path}") else "[^/]+") if p.startswith("{") else re.escape(p)
                              for p in parts))


# literal templates first, then those with parameters, the longest literal first: /call/{a}/{b} before /call/{a}
_MATCHERS = sorted(((method, _pattern(t), t, name) for (method, t), name in ROUTES.items()),
                   key=lambda m: ("{" in m[2], -len(re.sub(r"\{[^}]*\}", "", m[2]))))


def template_of(method: str, path: str) -> str | None:
    """The declared template a request's path matches (HEAD as GET, a trailing slash aside); None for none."""
    method = "GET" if method == "HEAD" else method
    path = path.rstrip("/") or "/"
    return next((t for m, pattern, t, _ in _MATCHERS if m == method and pattern.fullmatch(path)), None)


def route_budget(method: str, path: str) -> tuple[str, Route]:
    """(name, budget) of the route a request reaches; a path no route declares is refused on a served page."""
    template = template_of(method, path)
    name = ROUTES[("GET" if method == "HEAD" else method, template)] if template else "refused"
    return name, ROUTE_BUDGETS[name]


def handler_budget(block_fn: Any) -> Handler:
    """The budget of one of the page's handlers (a Gradio BlockFunction); LookupError for a queued one whose
    concurrency id names no group here, so a new handler without a budget fails the page's build."""
    if not block_fn.queue:
        return HANDLERS[VIEW]
    group = block_fn.concurrency_id
    if group not in HANDLERS or group == VIEW:
        name = getattr(block_fn.fn, "__qualname__", "a handler")
        raise LookupError(f"the queued handler {name} has no declared budget: give it **queued(GROUP) "
                          "(app/ui/budgets.py)")
    return HANDLERS[group]


def budgeted(demo: Any) -> dict[str, int]:
    """How many of the built page's handlers (those that run Python) fall in each group; raises LookupError for one
    without a budget. The handler of a session's end (`demo.unload`, which takes no options) is put in UNLOAD."""
    counts: dict[str, int] = {}
    for block_fn in demo.fns.values():
        if block_fn.fn is None:
            continue
        if [t[1] for t in block_fn.targets] == ["unload"] and block_fn.concurrency_id not in HANDLERS:
            block_fn.concurrency_id, block_fn.concurrency_limit = UNLOAD, HANDLERS[UNLOAD].at_once
        group = VIEW if not block_fn.queue else block_fn.concurrency_id
        handler_budget(block_fn)
        counts[group] = counts.get(group, 0) + 1
    return counts


def _mb(n: int) -> str:
    return "-" if not n else f"{n / 2**20:g} MB"


def markdown() -> str:
    """docs/security.md's tables of every budget, generated from this module (tests/test_budgets.py checks the doc
    holds them as they are)."""
    rows = ["| route budget | routes | at once | waiting | a second | body | in flight | what one request costs | "
            "disk an hour |", "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for name, r in ROUTE_BUDGETS.items():
        paths = ", ".join(f"{m} `{t}`" for (m, t), n in ROUTES.items() if n == name)
        flight = "-" if not r.connections else _mb(r.connections * (r.body + SEND_CHUNK))
        rate = f"{r.per_second:g}" if r.per_second else "-"
        rows.append(f"| {name} | {paths} | {r.connections} | {r.waiting} | {rate} | {_mb(r.body)} | {flight} | "
                    f"{r.cost} | {_mb(r.disk_per_hour)} |")
    rows += ["", "| handler group | what | at once (page) | per address | what one call costs | disk an hour |",
             "| --- | --- | --- | --- | --- | --- |"]
    for name, h in HANDLERS.items():
        heavy = " (one of these at a time a visitor)" if h.heavy else ""
        rows.append(f"| {name} | {h.what}{heavy} | {h.at_once} | {h.per_address} | {h.cost} | "
                    f"{_mb(h.disk_per_hour)} |")
    return "\n".join(rows) + "\n"
