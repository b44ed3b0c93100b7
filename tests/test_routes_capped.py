"""Issue 38's attacks on the routes outside the queue, replayed on a served page on loopback (`python -m app --host`'s
policy, in its own process, or in this one where the test needs the page's handlers): every POST route Gradio and the
app serve gets an oversized body, every route gets a multipart body in every letter case, every queued handler is
called around the queue, and an upload is asked for back by its path.

Before this change (app/ui/door.py capped only the queue's routes): a 30 MB body to /run/predict took the server from
281 MB to 1.83 GB, /cancel echoed it back, `Multipart/form-data` to /process_recording stored each body for good,
and /run/predict ran queued handlers past the door's limits."""

from __future__ import annotations

import json
import socket
import time
import urllib.parse
from pathlib import Path
from typing import Iterable, Iterator

import pytest

from app.errors import UserError
from app.trace.store import check_name
from app.ui import door
from app.ui.budgets import UNREAD_SESSIONS
from app.ui.visitor import owner_of
from tests.loopback_client import Visitor
from tests.reliability import tally
from tests.served import config, peak_mb, served_process
from tests.test_security_access import fn_index, inputs, page, served

MARKER = b'"ECHO-ME",'  # what the oversized bodies are made of: a reply that repeats the body repeats it
OVERSIZED = 30 * 2**20  # the body
UNSENT = 100 * 2**20  # a body declared past the door's drain limit, never sent: only a refusal unread can answer it
MEMORY_BOUND_MB = 96  # the served process's peak may grow by this much: no request holds over 2 MB, the rest is Python
MULTIPART_TYPES = ("multipart/form-data", "Multipart/form-data", "MULTIPART/FORM-DATA", " multipart/Form-Data",
                   "mUlTiPaRt/mixed")
OTHER = "127.0.0.2"


def post_routes(url: str) -> list[str]:
    """Every POST route the running server answers, from its own OpenAPI schema, with its parameters filled."""
    status, schema = Visitor(url).get("/openapi.json")
    assert status == 200
    paths = json.loads(schema)["paths"]
    fill = {"{api_name}": "race", "{event_id}": "no-event"}
    routes = []
    for path, methods in paths.items():
        if "post" in methods:
            for name, value in fill.items():
                path = path.replace(name, value)
            routes.append(path)
    assert any("/run/race" in r for r in routes) and any("/process_recording" in r for r in routes), routes
    return routes


def raw(url: str, method: str, path: str, headers: dict[str, str] | list[tuple[str, str]],
        body: Iterable[bytes] = (), source: str = "127.0.0.1", leave: bool = False) -> tuple[int | None, bytes]:
    """Sends one request by hand (headers as given, the body a chunk at a time) and reads the answer: (status, body);
    (None, b"") when the server closed the connection instead (it refused the rest of a body it would not read), or
    at once when `leave` says the client goes away after sending what it sent."""
    parts = urllib.parse.urlparse(url)
    pairs = headers.items() if isinstance(headers, dict) else headers
    head = f"{method} {path} HTTP/1.1\r\nHost: {parts.hostname}:{parts.port}\r\nConnection: close\r\n"
    head += "".join(f"{k}: {v}\r\n" for k, v in pairs) + "\r\n"
    with socket.create_connection((parts.hostname, parts.port), timeout=60, source_address=(source, 0)) as sock:
        try:
            sock.sendall(head.encode("latin-1"))
            for chunk in body:
                sock.sendall(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server answered and closed before the whole body went: read what it said
        if leave:
            return None, b""
        try:
            reader = sock.makefile("rb")
            status_line = reader.readline()
            if not status_line:
                return None, b""
            length = 0
            while (line := reader.readline()) not in (b"\r\n", b""):
                name, _, value = line.decode("latin-1").partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value)
            return int(status_line.split()[1]), reader.read(length)
        except ConnectionResetError:
            return None, b""


def oversized(n: int = OVERSIZED) -> list[bytes]:
    """About `n` bytes of a JSON list of strings, as one 64 KB chunk repeated (the client holds one copy of it)."""
    chunk = MARKER * (2**16 // len(MARKER))
    return [b"[", *[chunk] * (n // len(chunk)), b'"end"]']


def chunked(parts: Iterable[bytes]) -> Iterator[bytes]:
    """`parts` in HTTP's chunked framing (a body with no Content-Length)."""
    for part in parts:
        yield f"{len(part):x}\r\n".encode() + part + b"\r\n"
    yield b"0\r\n\r\n"


def refused_cleanly(status: int | None, reply: bytes) -> bool:
    """A refusal in one short sentence that repeats nothing of the body, or a connection closed unread."""
    return (status is None or status in (403, 404, 411, 413)) and MARKER not in reply and len(reply) < 1_000


def page_load(url: str, source: str) -> int:
    """Opens the page as a browser from `source` does: GET /, GET /config, then the page-load handler off the queue;
    the last status."""
    visitor = Visitor(url, source)
    assert visitor.get("/")[0] == 200
    cfg = config(url)
    load = next(d for d in cfg["dependencies"] if d.get("backend_fn") and any(t[1] == "load" for t in d["targets"]))
    assert load.get("queue") is False
    status, _ = visitor.post("/gradio_api/run/predict", {"data": [None], "fn_index": load["id"], "session_hash":
                                                         "other-visitor", "event_data": None, "trigger_id": None})
    return status


# --- item 1: every POST route capped before it is parsed --------------------------------------------------------------

def test_every_post_route_refuses_an_oversized_body_and_other_visitors_pages_still_answer(tmp_path: Path) -> None:
    """Each POST route the server lists gets three oversized bodies: one declared past the drain limit and never
    sent (answered at once, so it was refused unread), 30 MB with its length (read and dropped a chunk at a time),
    and 30 MB chunked with no length (refused once it passes the cap). The server's peak memory stays bounded, no
    reply repeats the body, and another visitor's page still opens."""
    with served_process(tmp_path / "server.log", tmp_path / "recordings") as (url, proc):
        routes = post_routes(url)
        assert page_load(url, OTHER) == 200
        before = peak_mb(proc)
        misses = []
        body = oversized()
        for route in routes:
            attempts = {
                "unsent": raw(url, "POST", route, {"Content-Type": "application/json",
                                                   "Content-Length": str(UNSENT)}),
                "declared": raw(url, "POST", route, {"Content-Type": "application/json",
                                                     "Content-Length": str(sum(map(len, body)))}, body),
                "chunked": raw(url, "POST", route, {"Content-Type": "application/json",
                                                    "Transfer-Encoding": "chunked"}, chunked(body)),
            }
            misses += [f"{route} {how}: {status} {reply[:120]!r}" for how, (status, reply) in attempts.items()
                       if not refused_cleanly(status, reply) or (how == "unsent" and status is None)]
        peak = peak_mb(proc)
        assert page_load(url, OTHER) == 200 and Visitor(url, OTHER).get("/config")[0] == 200
    tally("route_attacks", 3 * len(routes))
    tally("route_breaches", len(misses) + (peak - before > MEMORY_BOUND_MB))
    print(f"{len(routes)} POST routes x 3 oversized bodies refused; server peak {before:.0f} MB before, "
          f"{peak:.0f} MB after")
    assert not misses, misses
    assert peak - before <= MEMORY_BOUND_MB, (before, peak)


def test_a_body_within_the_cap_still_reaches_its_route() -> None:
    """The cap refuses only what is over it: the page's own calls (a queue join, a call off the queue) go through on
    a served page, and a malformed body's reply is one sentence that repeats nothing."""
    with page(served()) as (demo, url):
        visitor = Visitor(url)
        load = next(i for i, fn in demo.fns.items() if not fn.queue and fn.fn and fn.name == "on_load")
        status, answer = visitor.post("/gradio_api/run/predict", {"data": inputs(demo, load), "fn_index": load,
                                                                  "session_hash": "within", "event_data": None,
                                                                  "trigger_id": None})
        assert status == 200 and "error" not in answer
        bad = b'{"ECHO-ME": "not a cancel"}'
        status, reply = raw(url, "POST", "/gradio_api/cancel", {"Content-Type": "application/json",
                                                               "Content-Length": str(len(bad))}, [bad])
        assert status == 422 and b"ECHO-ME" not in reply and door.MALFORMED in reply.decode()


# --- item 2: nothing stored while upload is off ----------------------------------------------------------------------

def multipart(boundary: str, name: str = "run.jsonl", data: bytes = b'{"kind": "header"}\n') -> bytes:
    return (f"--{boundary}\r\nContent-Disposition: form-data; name=\"files\"; filename=\"{name}\"\r\n"
            "Content-Type: application/octet-stream\r\n\r\n").encode() + data + f"\r\n--{boundary}--\r\n".encode()


def stored_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file())


def test_a_multipart_body_in_any_letter_case_stores_nothing_on_any_route_while_upload_is_off(tmp_path: Path) -> None:
    """Every POST route, every spelling of a multipart Content-Type (and a JSON one followed by a multipart one, for
    a parser that reads the first): refused, and no new file in Gradio's folder or the system's temporary one (where
    /process_recording kept each body for good)."""
    temp = tmp_path / "temp"
    with served_process(tmp_path / "server.log", tmp_path / "recordings", temp=temp) as (url, _):
        routes = post_routes(url)
        before = stored_files(temp)
        answers = []
        for route in routes:
            for kind in MULTIPART_TYPES:
                body = multipart("b0undary")
                answers.append((route, kind, *raw(url, "POST", route, {"Content-Type": f"{kind}; boundary=b0undary",
                                                                      "Content-Length": str(len(body))}, [body])))
            body = multipart("b0undary")
            answers.append((route, "two", *raw(url, "POST", route, [
                ("Content-Type", "multipart/form-data; boundary=b0undary"), ("Content-Type", "application/json"),
                ("Content-Length", str(len(body)))], [body])))
        after = stored_files(temp)
    taken = [(r, k, s) for r, k, s, _ in answers if s is None or s < 400]
    tally("route_attacks", len(answers))
    tally("route_breaches", len(taken) + len(set(after) - set(before)))
    assert not taken, taken
    assert after == before, sorted(set(after) - set(before))


def test_with_upload_on_a_refused_or_abandoned_upload_leaves_no_file(tmp_path: Path) -> None:
    """Upload on: two files at once and a file of the wrong kind are refused and deleted; a client that leaves
    mid-upload leaves no half-written file; a taken upload is not served back by its path."""
    temp = tmp_path / "temp"
    with served_process(tmp_path / "server.log", tmp_path / "recordings", allow=("upload",),
                        temp=temp) as (url, _):
        before = stored_files(temp)
        visitor = Visitor(url)
        two = visitor.upload([("a.jsonl", b"{}\n"), ("b.jsonl", b"{}\n")])
        wrong = visitor.upload([("run.py", b"print('hi')\n")])
        assert two[0] == 400 and wrong[0] == 400 and door.UPLOAD_ONE in two[1]
        body = multipart("b0undary", "left.jsonl", b"x" * 2**20)
        head = {"Content-Type": "multipart/form-data; boundary=b0undary", "Content-Length": str(len(body))}
        status, _ = raw(url, "POST", "/gradio_api/upload", head, [body[: 2**19]], leave=True)
        assert status is None  # the client went away mid-body; the server had nothing to answer yet
        taken = visitor.upload([("kept.jsonl", b'{"kind": "header"}\n')])
        assert taken[0] == 200, taken
        stored = json.loads(taken[1])[0]
        assert Path(stored).is_relative_to(temp)
        assert Visitor(url, OTHER).get(f"/gradio_api/file={stored}")[0] == 404
        assert visitor.get(f"/gradio_api/file={urllib.parse.quote(stored)}")[0] == 404
        deadline_polls = 0
        while stored_files(temp) != sorted([*before, Path(stored)]):  # the abandoned upload is swept when it ends
            deadline_polls += 1
            assert deadline_polls < 10_000, sorted(set(stored_files(temp)) - set(before))
            visitor.get("/config")  # each request gives the server a turn to notice the closed connection
    tally("route_attacks", 5)


# --- item 3: no call around the queue --------------------------------------------------------------------------------

def test_no_queued_handler_runs_through_run_predict_on_a_served_page(recordings: Path) -> None:
    """Every queued handler, called by fn_index through /run/predict and by name through /run/ and /api/: refused,
    nothing recorded; the page-load handler, which is off the queue, still answers."""
    with page(served()) as (demo, url):
        visitor = Visitor(url)
        queued = [i for i, fn in demo.fns.items() if fn.queue and fn.fn]
        answers = []
        for index in queued:
            body = {"data": inputs(demo, index), "fn_index": index, "session_hash": f"around-{index}",
                    "event_data": None, "trigger_id": None}
            answers.append((index, *visitor.post("/gradio_api/run/predict", body)))
            name = demo.fns[index].api_name
            if name:
                answers += [(name, *visitor.post(f"/gradio_api/{how}/{name}", body)) for how in ("run", "api")]
        load = next(i for i, fn in demo.fns.items() if not fn.queue and fn.fn and fn.name == "on_load")
        status, _ = visitor.post("/gradio_api/run/predict", {"data": inputs(demo, load), "fn_index": load,
                                                             "session_hash": "page", "event_data": None,
                                                             "trigger_id": None})
    ran = [(what, status) for what, status, _ in answers if status != 404]
    tally("route_attacks", len(answers))
    tally("route_breaches", len(ran))
    assert len(queued) > 10 and not ran, ran
    assert status == 200 and not list(recordings.rglob("*.jsonl"))


# --- item 5: no answers piled up unread -------------------------------------------------------------------------------

def test_one_address_cannot_pile_up_unread_answers_under_fresh_sessions() -> None:
    """Gradio keeps each answer (a player's payload can be tens of MB) until its session reads its event stream. A
    client that joins under fresh sessions and never reads is refused once UNREAD_SESSIONS of its sessions hold
    answers, with one sentence; reading one frees a place, and another address is not affected."""
    with page(served()) as (demo, url):
        attacker, other = Visitor(url), Visitor(url, OTHER)
        index = fn_index(demo, elem_id="library-load", event="click")
        pending = demo._queue.pending_messages_per_session
        answers, events = [], {}
        for n in range(UNREAD_SESSIONS + 4):
            status, answer, session = attacker.join(index, inputs(demo, index), f"unread-{n}")
            answers.append((status, answer))
            if status == 200:
                events[session] = answer["event_id"]
                deadline = time.monotonic() + 60
                while session not in pending or pending[session].empty():  # until its answer waits, unread
                    assert time.monotonic() < deadline, "the handler never answered"
                    time.sleep(0.01)  # polling interval, not synchronisation
        assert [s for s, _ in answers] == [200] * UNREAD_SESSIONS + [429] * 4, answers
        assert all(door.UNREAD in json.dumps(a) for s, a in answers if s == 429)
        assert other.join(index, inputs(demo, index), "elsewhere")[0] == 200
        first = next(iter(events))
        attacker.result(first, events[first])  # read one: its place is free again
        assert attacker.join(index, inputs(demo, index), "after-reading")[0] == 200
    tally("route_attacks", len(answers))
    tally("route_breaches", sum(s == 200 for s, _ in answers[UNREAD_SESSIONS:]))


def test_the_deep_link_route_is_off_on_a_served_page() -> None:
    """Gradio's deep link writes the components of any session named to it to disk and hands their snapshot to whoever
    opens the link; the page offers none, and a served page refuses it."""
    with page(served()) as (demo, url):
        visitor = Visitor(url)
        load = next(i for i, fn in demo.fns.items() if not fn.queue and fn.fn and fn.name == "on_load")
        visitor.post("/gradio_api/run/predict", {"data": inputs(demo, load), "fn_index": load,
                                                 "session_hash": "victim", "event_data": None, "trigger_id": None})
        status, reply = visitor.get("/gradio_api/deep_link?session_hash=victim")
    tally("route_attacks")
    tally("route_breaches", status == 200)
    assert status == 404, reply[:200]


# --- item 6: the low items --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["run\u202egpj.jsonl", "zero\u200bwidth.jsonl", "\ufeffbom.jsonl",
                                  "mark\u200e.jsonl", "isolate\u2066.jsonl", "word\u2060joiner.jsonl"])
def test_recording_names_refuse_direction_marks_zero_width_characters_and_byte_order_marks(name: str) -> None:
    with pytest.raises(UserError, match="invisible characters"):
        check_name(name)
    assert check_name("Ünïcode names stay, 日本.jsonl")


def test_a_library_opens_by_its_owners_secret_not_by_a_session_hash() -> None:
    """An API caller that never opened the page acts for a fresh owner on every call, so knowing its session hash
    reaches nothing; the owner id the page-load handler gave a browser is what opens its library."""
    policy = served()
    assert owner_of(policy, None) != owner_of(policy, None)
    assert owner_of(policy, "a-browser-secret-0123456789") == "a-browser-secret-0123456789"
    assert owner_of(policy, "session-abc") != "session-abc"  # too short to be an id: never a library by a guess
