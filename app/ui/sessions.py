"""Who a request is and what their session runs: the visitor behind each handler call, and each session's latest
race, kept so Stop can show the saved run and a closed tab stops its race."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any, Callable

import gradio as gr

from app.race.run import Race
from app.serving.policy import Policy
from app.sources.base import setting_defaults
from app.trace.cancel import within
from app.ui.address import address_of
from app.ui.player_ui import to_player
from app.ui.visitor import Visitor, owner_of
from app.view.payload import load_payload

MAX_SESSIONS = 256  # finished sessions remembered (for Stop's "show the saved run") before the oldest go
OWNER_KEY = "converge-owner"  # where a browser keeps its owner id (localStorage)
OWNER_SECRET = "converge-owner-id"  # not a secret: Gradio sends it to the page; a fixed one keeps ids across restarts

_sessions: dict[str, dict[str, Any]] = {}  # session hash -> {"race", "path", "run", "shown"} of its latest race
_sessions_lock = threading.Lock()


def session_of(request: gr.Request | None) -> str:
    """The request's session hash ("no-session" for a call without one)."""
    return (request.session_hash if request is not None else None) or "no-session"


def visitor_of(policy: Policy, token: Any, request: gr.Request | None) -> Visitor:
    """The visitor behind a request: the page's policy, the owner id the page gave their browser, their address."""
    return Visitor(policy, owner_of(policy, token), address_of(request))


def as_visitor(policy: Policy, fn: Callable[..., Any]) -> Callable[..., Any]:
    """A Gradio handler for `fn(visitor, *values)` whose first input is the session's owner id (a gr.State, which
    the queue API cannot set: only the page-load handler does, from the browser's stored id)."""
    def handler(request: gr.Request, owner: Any, *values: Any) -> Any:
        return fn(visitor_of(policy, owner, request), *values)
    handler.__name__ = handler.__qualname__ = fn.__name__  # named for what it runs (not functools.wraps: Gradio
    return handler                                          # must see this signature, not fn's)


def cancellable(policy: Policy, fn: Callable[..., Any]) -> Callable[..., Any]:
    """as_visitor for a handler that reads and analyses a whole recording (Load, Upload): an async handler that runs
    `fn(visitor, *values)` on a worker thread and awaits it. When Gradio cancels the handler (a cancelled call, a
    visitor who left), the work is told to stop and does at its next line or frame (app/trace/cancel.py), so it frees
    its thread instead of running on for nobody."""
    async def handler(request: gr.Request, owner: Any, *values: Any) -> Any:
        return await off_loop(lambda: fn(visitor_of(policy, owner, request), *values))
    handler.__name__ = handler.__qualname__ = fn.__name__
    return handler


async def off_loop(work: Callable[[], Any], cancel: threading.Event | None = None) -> Any:
    """`work()` on a worker thread under a cancel event (`cancel`, or a fresh one), awaited; cancelling the await sets
    the event, so the work stops at its next checkpoint."""
    cancel = cancel or threading.Event()

    def run() -> Any:
        with within(cancel):
            return work()
    try:
        return await asyncio.to_thread(run)
    except asyncio.CancelledError:
        cancel.set()
        raise


def remember(session: str, entry: dict[str, Any]) -> None:
    """Keeps a session's latest race; of the sessions whose race has ended, only the latest MAX_SESSIONS stay
    (API clients never unload, so nothing else would ever drop them)."""
    with _sessions_lock:
        _sessions.pop(session, None)  # re-inserted last: the dict stays in order of last use
        _sessions[session] = entry
        finished = [k for k, e in _sessions.items() if e["race"] is None]
        for stale in finished[: max(0, len(finished) - MAX_SESSIONS)]:
            del _sessions[stale]


def last_race(session: str) -> Path | None:
    """The recording of the session's latest race (the last race's side a draft may start from), None before one."""
    with _sessions_lock:
        entry = _sessions.get(session)
    return Path(entry["path"]) if entry else None


def stop_session_race(session: str) -> None:
    """Stops the session's race on this server, if one is running: a visitor watches one race at a time."""
    with _sessions_lock:
        entry = _sessions.get(session)
    if entry and entry["race"] is not None:
        entry["race"].stop()


def stop_now(request: gr.Request) -> None:
    """Stop's first handler, off the queue (it waits behind nothing, a race included): the session's race is told to
    stop at once, so its sources end at their next step and both sides record "stopped". The entry notes it, so
    `after_stop` shows the saved run even when the race's own last update, made as it stopped, was cancelled on its
    way to the page."""
    with _sessions_lock:
        entry = _sessions.get(session_of(request))
    race = entry["race"] if entry else None
    if entry and race is not None and race.running():
        entry["stopped"] = True
        race.stop()


def after_stop(request: gr.Request) -> Any:
    """After Stop: ends the session's race, waits for both sides to record how they ended, shows the saved run; after
    a race that had ended on its own, nothing."""
    with _sessions_lock:
        entry = _sessions.get(session_of(request))
    if not entry:
        return gr.skip()
    stopped = entry.pop("stopped", False)  # this Stop stopped it (said once: a later Stop only pauses a replay)
    if entry.get("shown") and not stopped:  # it ended on its own and the player showed its end: the player keeps
        return gr.skip()  # what it shows now (a replay Stop paused, a recording loaded since)
    race: Race | None = entry["race"]
    if race is not None:
        race.stop()
        race.close()
    if not Path(entry["path"]).is_file():  # a race that was not saved: what it showed stays on screen
        return gr.skip()
    return to_player(load_payload(entry["path"], run=entry["run"], defaults=setting_defaults())), str(entry["path"])


def end_session(request: gr.Request) -> None:
    """When a tab closes: stop its race so no thread keeps running for nobody."""
    with _sessions_lock:
        entry = _sessions.pop(session_of(request), None)
    if entry and entry["race"] is not None:
        entry["race"].stop()
