"""Bounded work and a reader that cannot be broken (issue 16): the attacks of an adversarial visitor, replayed.

Races that never end (a replay with a frame at t = 1e9, an SSE server that sends keep-alive comments forever) stop at
the wall-clock limit and free their slot; a race whose API client goes away ends; memory bombs are refused cheaply,
with a measured peak below PEAK_BOUND_MB; lines that crash a JSON reader are skipped and named; one damaged file never
empties the library; a video export of a long recording is refused at once and an export can be cancelled.
"""

from __future__ import annotations

import http.client
import json
import math
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import pytest

from app.race import limits
from app.race.run import GRACE, Race
from app.trace.frames import MAX_FRAMES, MAX_LINE_BYTES, MAX_TOKENS, SIDES, Frame, RecordingWriter, make_header
from app.trace.reading import RecordingError, read_recording
from app.ui.live import live_updates
from tests.fixtures import api_client, drain, run_async
from tests.reliability import tally
from tests.test_load import app_url, payload_of, race_args  # noqa: F401  (app_url is a fixture)

LIMIT = 3.0  # seconds: the race limit these tests set, small so that they run quickly
SLOT_LIMIT = 4.0  # the limit while eight hostile races are started one after another
PEAK_BOUND_MB = 150  # the most a process may reach while refusing a memory bomb (it starts at about 20 MB)
ROOT = Path(__file__).resolve().parent.parent


def write_recording(path: Path, frames: list[tuple[str, Frame]], ends: bool = True) -> Path:
    writer = RecordingWriter(path, make_header("hostile", {s: {"name": "local-ar", "settings": {}} for s in SIDES}))
    for side, frame in frames:
        writer.frame(side, frame)
    if ends:
        for side in SIDES:
            writer.end(side, "done")
    writer.close()
    return path


def long_gap(path: Path, last: float) -> Path:
    """Two frames a side, the second at `last` seconds."""
    return write_recording(path, [(s, Frame(t=t, step=k, tokens=["a", "b"][: k + 1], final=bool(k)))
                                  for s in SIDES for k, t in enumerate((0.0, last))])


def finish(race: Race, within: float) -> dict[str, Any]:
    """Runs the race to its end in a thread and returns the final update; fails if it is still running after
    `within`."""
    updates: list[dict[str, Any]] = []
    thread = threading.Thread(target=lambda: updates.extend(live_updates(race, interval=0.05)), daemon=True)
    thread.start()
    thread.join(within)
    if thread.is_alive():
        race.stop()
        pytest.fail(f"the race was still running after {within:g} s")
    return updates[-1]


def test_a_race_stops_at_its_wall_clock_limit_says_why_and_keeps_every_frame(fast_env: str, recordings: Path) -> None:
    replay = long_gap(recordings / "gap.jsonl", 1e9)
    race = Race("ECHO: one two three", "openai:keepalive-after-2", f"replay:{replay}", limit=LIMIT)
    final = finish(race, LIMIT + GRACE + 30)
    said = limits.stopped_at_limit(LIMIT)
    assert "after the 3 s limit" in said
    rec = read_recording(race.path)
    for side in SIDES:
        entry = final["sides"][side]
        assert (entry["status"], entry["message"]) == ("stopped", said)
        assert rec.ends[side] == {"status": "stopped", "message": said}
        assert len(rec.frames[side]) == (entry["metrics"] or {}).get("frames", 0)  # every frame received is on disk
    assert [f.t for f in rec.frames["right"]] == [0.0]  # the replay's frame at t = 1e9 never came
    tally("bounded_races", 1)


@pytest.mark.browser
def test_the_page_says_the_race_stopped_at_the_limit(browser: Any, fast_env: str,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.pages import browser_tab, serve_page
    from tests.test_ui import ROOT, choose, side_text, start, wait_status

    monkeypatch.setenv(limits.ENV, str(LIMIT))
    with serve_page() as url, browser_tab(browser, url) as page:
        page.wait_for_selector(f"{ROOT}[data-mode=replay], {ROOT}[data-status=idle]")
        choose(page, "left", "openai", "keepalive-after-2")
        choose(page, "right", "mercury", "keepalive-after-1")
        start(page, "ECHO: a race that would never end")
        wait_status(page, "stopped")
        for side in SIDES:
            assert side_text(page, side, "cv-message") == limits.stopped_at_limit(LIMIT)
    tally("bounded_races")


def test_the_race_limit_comes_from_the_flag_then_the_environment_then_the_local_or_served_default(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from app.cli.launch import launch_parser
    from app.serving.policy import from_launch

    def served(host: str, share: bool) -> bool:
        return from_launch(host, share, [], [], []).served

    monkeypatch.delenv(limits.ENV, raising=False)
    try:
        assert limits.configure(None, served=False) == limits.LOCAL_RACE_LIMIT
        assert limits.configure(None, served=True) == limits.SERVED_RACE_LIMIT <= 300  # a few minutes when served
        monkeypatch.setenv(limits.ENV, "42")
        assert limits.race_limit() == 42
        monkeypatch.setenv(limits.ENV, "not a number")
        assert limits.race_limit() == limits.SERVED_RACE_LIMIT
        assert limits.configure(7, served=True) == 7  # the flag wins over the environment and the default
        with pytest.raises(ValueError, match="from 1 to 86400 seconds"):
            limits.configure(0)
    finally:
        limits.configure(None, served=False)
    assert launch_parser().parse_args(["--race-limit", "30"]).race_limit == 30
    assert not served("127.0.0.1", False) and served("0.0.0.0", False) and served("127.0.0.1", True)


def test_hostile_races_fill_every_slot_yet_another_sessions_race_completes_within_the_limit(
        app_url: str, fast_env: str, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    from app.ui.budgets import HANDLERS

    monkeypatch.setenv(limits.ENV, str(SLOT_LIMIT))
    clients = [api_client(app_url) for _ in range(HANDLERS["race"].at_once + 1)]
    api = clients[0].view_api(return_format="dict", print_info=False)["named_endpoints"]["/race"]
    forever = {"left": ("mercury", "keepalive-after-1", {}), "right": ("openai", "keepalive-after-1", {})}
    hostile = [c.submit(*race_args(api, "ECHO: hold the slot", forever), api_name="/race") for c in clients[:-1]]
    deadline = time.monotonic() + 60
    while not all(job.outputs() for job in hostile):  # every slot is taken by a race that would never end
        assert time.monotonic() < deadline, [len(job.outputs()) for job in hostile]
        time.sleep(0.05)  # polling the clients for the condition above
    fair = {"left": ("mercury", "", {}), "right": ("openai", "gpt-test", {})}
    job = clients[-1].submit(*race_args(api, "ECHO: my turn now", fair), api_name="/race")
    final = payload_of(job.result(timeout=SLOT_LIMIT + GRACE + 60))
    assert final["done"] and [final["sides"][s]["status"] for s in SIDES] == ["done", "done"], final["sides"]
    said = limits.stopped_at_limit(SLOT_LIMIT)
    for held in hostile:
        ended = payload_of(held.result(timeout=GRACE + 30))
        assert all((ended["sides"][s]["status"], ended["sides"][s]["message"]) == ("stopped", said) for s in SIDES)
    for client in clients:
        client.close()
    tally("bounded_races", len(hostile))
    tally("slot_recoveries")


def test_a_race_ends_when_its_api_client_goes_away(app_url: str, fast_env: str,  # noqa: F811
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from app.ui import sessions

    monkeypatch.setenv(limits.ENV, "600")  # far away: only the departure can end this race
    client = api_client(app_url)
    api = client.view_api(return_format="dict", print_info=False)["named_endpoints"]["/race"]
    client.close()
    with urllib.request.urlopen(app_url + "config") as r:
        fn_index = next(d["id"] for d in json.load(r)["dependencies"] if d.get("api_name") == "race")
    session = f"leaver-{uuid.uuid4().hex[:8]}"
    forever = {"left": ("mercury", "keepalive-after-1", {}), "right": ("openai", "keepalive-after-1", {})}
    # a raw queue call sends every input, the page's owner State first (None: an API caller that never opened the page)
    body = {"data": [None, *race_args(api, "ECHO: then I leave", forever)], "fn_index": fn_index,
            "session_hash": session, "event_data": None, "trigger_id": None}
    request = urllib.request.Request(app_url + "gradio_api/queue/join", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    urllib.request.urlopen(request).close()
    host = urllib.parse.urlparse(app_url)
    conn = http.client.HTTPConnection(host.hostname, host.port, timeout=60)
    conn.request("GET", f"/gradio_api/queue/data?session_hash={session}")
    stream = conn.getresponse()
    while b"process_generating" not in (line := stream.readline()):  # the race is running and streaming to it
        assert line and b"process_completed" not in line, f"the race did not start: {line!r}"
    race = sessions._sessions[session]["race"]
    while not all(race.sides[s].frames for s in SIDES):  # both sides have sent all they ever will: from now on
        assert stream.readline(), "the race's stream ended before both sides sent a frame"  # after that nothing
        # changes, so only the race's heartbeat can tell that the client went away
    conn.sock.close()  # the client goes away without a word
    conn.close()
    assert race.cancel.wait(60), "the race kept running after its client left"
    for thread in race._threads:
        thread.join(30)
        assert not thread.is_alive()
    rec = read_recording(race.path)
    assert [rec.ends[s]["status"] for s in SIDES] == ["stopped", "stopped"]
    assert all(len(rec.frames[s]) >= 1 for s in SIDES)
    deadline = time.monotonic() + 30
    while sessions._sessions[session]["race"] is not None:  # the handler itself returned, so its slot is free
        assert time.monotonic() < deadline, "the race handler never returned"
        time.sleep(0.05)  # polling for the condition above
    tally("disconnects_ended")


BOMB = """
import json, sys, time
from app.bench.caps import peak_mb
from app.view.payload import load_payload
started = time.perf_counter()
payload = load_payload(sys.argv[1])
message = json.dumps(payload, ensure_ascii=False, allow_nan=False)
print(json.dumps({"peak_mb": peak_mb(), "message": len(message), "seconds": round(time.perf_counter() - started, 2),
                  "text": payload.get("message") or " ".join(payload.get("warnings") or []),
                  "frames": sum(len(s["rows"]) for s in payload["sides"].values())}))
"""

HEADER = json.dumps({"type": "header", "schema": 1, "prompt": "bomb",
                     "sources": {"left": {"name": "local-ar", "settings": {}}}}) + "\n"


def bombs(folder: Path) -> dict[str, Path]:
    """The issue's memory bombs, each under the 64 MB upload cap."""
    tiny = '{"type":"frame","side":"left","t":0,"step":0,"tokens":["a"]}\n'
    huge = json.dumps({"type": "frame", "side": "left", "t": 0, "step": 0, "tokens": ["a"] * 3_000_000}) + "\n"
    candidates = json.dumps({"type": "frame", "side": "left", "t": 0, "step": 0, "tokens": ["a"],
                             "committed": [0] * 50_000, "candidates": [[0, [["a", 0.5]]]] * 50_000}) + "\n"
    near_caps = json.dumps({"type": "frame", "side": "left", "t": 0, "step": 0, "tokens": ["a"] * 200_000}) + "\n"
    files = {"million_tiny_frames": HEADER + tiny * 1_000_000,
             "two_frames_six_million_tokens": HEADER + huge * 2,
             "one_60_mb_line": HEADER + '{"type":"frame","side":"left","t":0,"step":0,"text":"' + "x" * 60_000_000
             + '"}\n',
             "over_the_token_cap": HEADER + near_caps * (MAX_TOKENS // 200_000 + 1),
             "candidates_beyond_the_cap": HEADER + candidates * (MAX_TOKENS // 100_000 + 1)}
    out = {}
    for name, text in files.items():
        out[name] = folder / f"{name}.jsonl"
        out[name].write_text(text)
    return out


def test_memory_bombs_are_refused_cheaply_with_one_sentence(tmp_path: Path) -> None:
    expected = {"million_tiny_frames": f"recordings over {MAX_FRAMES:,} frames are refused",
                "two_frames_six_million_tokens": "are not valid (line 2: over 4 MB)",
                "one_60_mb_line": "Line 2 of one_60_mb_line.jsonl is not valid (over 4 MB)",
                "over_the_token_cap": f"holds more than {MAX_TOKENS:,} tokens",
                "candidates_beyond_the_cap": f"holds more than {MAX_TOKENS:,} tokens"}
    for name, path in bombs(tmp_path).items():
        assert path.stat().st_size < 64 * 1024 * 1024
        done = subprocess.run([sys.executable, "-c", BOMB, str(path)], capture_output=True, text=True, cwd=ROOT,
                              check=True)
        result = json.loads(done.stdout)
        assert expected[name] in result["text"], (name, result["text"])
        assert result["frames"] == 0 and result["message"] < 10_000, (name, result)  # nothing big reaches the browser
        assert result["peak_mb"] < PEAK_BOUND_MB, (name, result["peak_mb"])
        tally("memory_bombs")
    assert MAX_LINE_BYTES == 4 * 1024 * 1024


HOSTILE_LINES = {
    "deep nesting with a lone surrogate": "[" * 600 + '"\\ud800"' + "]" * 600,
    "deep object nesting": '{"type":"frame","side":"left","t":0,"step":1,"usage":' + '{"a":' * 5000 + "1" + "}" * 5001,
    "a usage count of 10**400": json.dumps({"type": "frame", "side": "left", "t": 0.1, "step": 1,
                                           "usage": {"completion_tokens": 10 ** 400}}),
    "a step of 10**400 as t": json.dumps({"type": "frame", "side": "left", "t": 10 ** 400, "step": 1}),
    "NaN in confidence": '{"type":"frame","side":"left","t":0.2,"step":1,"tokens":["a"],"confidence":[NaN]}',
    "Infinity as t": '{"type":"frame","side":"left","t":Infinity,"step":1}',
    "1e999 in a header-like field": '{"type":"frame","side":"left","t":0.3,"step":1,"extra":{"x":1e999}}',
    "a status of 10**5000": '{"type":"end","side":"left","status":' + "9" * 5000 + "}",
}


def test_any_line_that_breaks_a_json_reader_is_skipped_and_named_and_the_rest_load(tmp_path: Path) -> None:
    good = [json.dumps({"type": "frame", "side": "left", "t": 0.5 + k, "step": k, "tokens": ["ok"]}) for k in range(2)]
    for name, line in HOSTILE_LINES.items():
        path = tmp_path / "hostile.jsonl"
        path.write_text(HEADER + good[0] + "\n" + line + "\n" + good[1] + "\n")
        rec = read_recording(path)
        assert [f.step for f in rec.frames["left"]] == [0, 1], name
        assert rec.warnings and rec.warnings[0].startswith("Line 3 of hostile.jsonl is not valid"), (name, rec.warnings)
        tally("parser_crashes")


def test_a_bad_header_of_any_kind_is_one_sentence(tmp_path: Path) -> None:
    for _name, line in HOSTILE_LINES.items():
        path = tmp_path / "head.jsonl"
        path.write_text(line + "\n")
        with pytest.raises(RecordingError, match="head.jsonl is not a Converge recording"):
            read_recording(path)


def test_one_damaged_file_is_listed_as_damaged_and_the_rest_of_the_library_loads(recordings: Path) -> None:
    from app.trace import library
    from app.ui.library_ui import library_view, upload_entry
    from app.ui.visitor import Visitor

    write_recording(recordings / "fine.jsonl", [("left", Frame(t=0.1, step=0, tokens=["hi"], final=True))])
    (recordings / "nested.jsonl").write_text(HOSTILE_LINES["deep nesting with a lone surrogate"] + "\n")
    (recordings / "bomb.jsonl").write_text(HEADER
                                           + '{"type":"frame","side":"left","t":0,"step":0}\n' * (MAX_FRAMES + 20))
    (recordings / "loop.jsonl").symlink_to(recordings / "loop.jsonl")
    entries = {e["name"]: e for e in library.list_recordings()}
    assert entries["fine.jsonl"]["problem"] is None and entries["fine.jsonl"]["frames"] == 1
    assert "is not a Converge recording" in entries["nested.jsonl"]["problem"]
    assert f"over {MAX_FRAMES:,} frames are refused" in entries["bomb.jsonl"]["problem"]
    rows = library_view(Visitor())[0]["value"]
    assert {r[0] for r in rows} >= {"fine.jsonl", "nested.jsonl", "bomb.jsonl"}
    upload = recordings.parent / "upload.jsonl"
    good = json.dumps({"type": "frame", "side": "left", "t": 0.5, "step": 0, "tokens": ["ok"]})
    upload.write_text(HEADER + good + "\n" + HOSTILE_LINES["a usage count of 10**400"] + "\n")
    message = upload_entry(Visitor(), str(upload))[5]
    assert "Line 3 of upload.jsonl is not valid (a number too large to use)" in message, message


def test_a_video_of_a_long_gap_recording_is_refused_at_once_and_html_still_exports(recordings: Path,
                                                                                   tmp_path: Path) -> None:
    from app.export.video import MAX_VIDEO_SECONDS
    from app.ui.export_ui import export_current
    from app.view.pace import HOLD

    path = long_gap(recordings / "gap.jsonl", 6600.0)
    speed = math.ceil(6600 / (MAX_VIDEO_SECONDS - HOLD))  # the slowest speed whose video and held end fit the cap
    for fmt in ("mp4", "gif"):
        *_, (_, message) = drain(export_current(fmt)(str(path)))
        assert f"videos are capped at {MAX_VIDEO_SECONDS} s" in message and f"--speed {speed} " in message, message
    *_, (file, message) = drain(export_current("html")(str(path)))
    assert Path(file).read_text().startswith("<!doctype html>"), message
    tally("capped_exports")


def test_closing_an_export_stops_its_worker_and_leaves_no_file(recordings: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    from app.ui import export_job
    from app.ui.export_ui import export_current

    monkeypatch.setattr(export_job, "PROGRESS_EVERY", 0.0)  # report at once, while the worker has frames to go
    path = long_gap(recordings / "minute.jsonl", 290.0)

    async def start_then_close() -> str:
        export = export_current("gif")(str(path))
        _, note = await anext(export)
        await export.aclose()  # what Cancel export (or a visitor who left) does to the handler: it returns at once
        return note

    assert "Cancel export stops it" in run_async(start_then_close())
    assert export_job.wait_idle(60), "the export kept running after it was closed"
    leftovers = list(Path(tempfile.gettempdir()).glob("converge-export-*/*minute*"))
    assert not leftovers, leftovers
    tally("cancelled_exports")


@pytest.mark.browser
def test_cancel_export_on_the_page_stops_the_export_and_says_so(browser: Any, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.pages import browser_tab, serve_page
    from tests.test_ui import ROOT, wait_message

    examples = tmp_path / "examples"
    examples.mkdir()
    long_gap(examples / "long.jsonl", 290.0)  # the page opens with it in the player
    monkeypatch.setenv("CONVERGE_EXAMPLES", str(examples))
    with serve_page() as url, browser_tab(browser, url) as page:
        page.wait_for_selector(f"{ROOT}[data-mode=replay]")
        page.click("#export-box button.label-wrap")
        page.click("#export-mp4")
        wait_message(page, "Cancel export stops it")
        page.click("#export-cancel")
        wait_message(page, "Any export in progress was cancelled")
        from app.ui.export_job import wait_idle

        assert wait_idle(30), "the export kept running after Cancel export"
    assert not list(Path(tempfile.gettempdir()).glob("converge-export-*/*long*"))
    tally("cancelled_exports")


def test_sweeps_and_races_wait_in_separate_queues_and_every_long_handler_has_a_limit() -> None:
    from app.ui.budgets import HANDLERS
    from app.ui.layout import build
    from app.ui.library_ui import load_entry, upload_entry
    from app.ui.sessions import after_stop

    demo = build()
    fns = list(demo.fns.values())
    by_id = {}
    for fn in fns:
        by_id.setdefault(fn.concurrency_id, set()).add(getattr(fn.fn, "__name__", ""))
    assert "run" in by_id["race"] and not by_id["race"] - {"run"}  # only races wait for race slots
    assert by_id["sweep"] == {"run"} and HANDLERS["sweep"].at_once >= 1
    assert {after_stop.__name__, load_entry.__name__, upload_entry.__name__} <= by_id["recording"]
    assert by_id["export"] == {"export"}
    long_running = [fn for fn in fns if getattr(fn.fn, "__name__", "") in ("run", "export", "after_stop", "load_entry",
                                                                          "upload_entry")]
    assert long_running and all(fn.concurrency_limit is not None for fn in long_running)
    assert HANDLERS["recording"].at_once >= 1
