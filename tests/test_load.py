"""Load: eight sessions race at once on the page as `python -m app` serves it (its queue and concurrency settings): four
race the built-in twins through gradio_client, three race the wire server through gradio_client, one races in Chromium
and is stopped. Every session completes (the stopped one stops), each recording holds only its own frames, the local
models never run on more CPU slots than there are, and nothing of a race outlives it. The CPU slots themselves are
handed out first come, first served."""

from __future__ import annotations

import gc
import json
import threading
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

from app.race.compute import COMPUTE, ComputeGate
from app.race.run import Race
from app.sources.base import load_plugins
from app.trace.frames import SIDES, Frame
from app.trace.reading import read_recording
from app.ui.draft_ui import DraftBox
from tests.fixtures import api_client, needs_twins
from tests.pages import free_port, wait_for_page, watch_errors
from tests.reliability import tally
from tests.test_ui import ROOT, choose, start, wait_status
from tests.wire_server import script

LOCAL, WIRE = 4, 3


@pytest.fixture(scope="module")
def app_url() -> Iterator[str]:
    """The page launched exactly as `python -m app` launches it (bounded queue, safe options), once it answers."""
    from app.ui.layout import launch

    port = free_port()
    # _frontend=False: Gradio's own 3 s probe of the page fails under load; wait_for_page waits as long as it takes
    demo = launch(port=port, prevent_thread_lock=True, quiet=True, _frontend=False)
    url = f"http://127.0.0.1:{port}/"
    wait_for_page(url)
    yield url
    demo.close()


def race_args(api: dict[str, Any], prompt: str, sides: dict[str, tuple[str, str, dict[str, Any]]]) -> list[Any]:
    """The /race endpoint's arguments: the prompt, the pins (none), then per side its kind, argument and key, then
    both sides' settings in one box (app/ui/packed.py: each widget's value by its elem_id; defaults, except those
    given), then "Start from" (its defaults: nothing)."""
    load_plugins()
    args = [p["parameter_default"] if p.get("parameter_has_default") else None if p.get("component") == "Number" else ""
            for p in api["parameters"]]  # a number left empty (the model's own value) is sent as null, as a page does
    assert len(args) == 9 + len(DraftBox.__dataclass_fields__), "the race endpoint's inputs changed shape"
    args[0], args[1] = prompt, ""
    packed = json.loads(args[8])
    for n, side in enumerate(SIDES):
        kind, arg, settings = sides[side]
        args[2 + 3 * n:5 + 3 * n] = [kind, arg, ""]
        for name, value in settings.items():
            assert f"{side}-{kind}-{name}" in packed, "the race's settings box changed shape"
            packed[f"{side}-{kind}-{name}"] = value
    args[8] = json.dumps(packed)
    return args


def held_stream(marker: str, gate: threading.Event, replace: bool) -> str:
    """A scripted model that sends one frame naming the session, waits for `gate`, then finishes its answer."""
    meta = ', "diffusion_meta": {"diffusion_content": true}' if replace else ""
    def chunk(text: str, finish: str = "null") -> bytes:
        return (b'data: {"choices": [{"index": 0, "delta": {"content": "%s"}, "finish_reason": %s}]%s}\n\n'
                % (text.encode(), finish.encode(), meta.encode()))
    words = [f"{marker} ", f"{marker} says ", f"{marker} says hello"] if replace else [f"{marker} ", "says ", "hello"]
    return script([chunk(words[0]), gate, chunk(words[1]), chunk(words[2]),
                   chunk("" if not replace else words[2], '"stop"'), b"data: [DONE]\n\n"])


def first_update(job: Any) -> bool:
    return len(job.outputs()) > 0


def payload_of(output: Any) -> dict[str, Any]:
    return json.loads(output["props"]["payload"])


def test_cpu_slots_go_first_come_first_served_and_a_cancelled_waiter_leaves() -> None:
    gate = ComputeGate(2)
    order: list[str] = []
    cancel = threading.Event()
    assert gate.acquire(2, threading.Event()) == 2
    threads = []
    for name, n in (("first", 2), ("second", 1), ("cancelled", 1), ("third", 1)):
        ev = cancel if name == "cancelled" else threading.Event()
        t = threading.Thread(target=lambda name=name, n=n, ev=ev: gate.acquire(n, ev) and order.append(name))
        threads.append(t)
        t.start()
        while gate.waiting() < len(threads):  # each waiter is queued before the next arrives
            time.sleep(0.001)
    cancel.set()
    gate.wake()
    threads[2].join()
    gate.release(2)
    threads[0].join()
    assert order == ["first"] and gate.in_use == 2  # the head of the queue is served whole before anyone behind it
    gate.release(2)
    for t in threads:
        t.join()
    assert order == ["first", "second", "third"] and gate.peak == 2 and gate.in_use == 2


@pytest.mark.browser
@needs_twins
def test_eight_sessions_race_at_once_each_keeps_its_own_frames_and_stop_works_under_load(
        app_url: str, api_env: str, browser: Any, recordings: Path) -> None:
    gate = threading.Event()
    clients = [api_client(app_url) for _ in range(LOCAL + WIRE)]
    api = clients[0].view_api(return_format="dict", print_info=False)["named_endpoints"]["/race"]
    prompts = [f"Once upon a time, in session {k}, there was" for k in range(LOCAL)]
    prompts += [f"wire session {k}" for k in range(WIRE)]
    busy = COMPUTE.acquire(COMPUTE.slots, threading.Event())  # the CPU is busy: local races must queue for it
    jobs = []
    try:
        for k, client in enumerate(clients):
            if k < LOCAL:
                sides = {"left": ("local-diffusion", "", {"gen_length": 32}),
                         "right": ("local-ar", "", {"gen_length": 32})}
            else:
                marker = f"S{k}X"
                sides = {"left": ("mercury", held_stream(marker, gate, True), {}),
                         "right": ("openai", held_stream(marker, gate, False), {})}
            jobs.append(client.submit(*race_args(api, prompts[k], sides), api_name="/race"))
        context = browser.new_context()
        page = context.new_page()
        page.set_default_timeout(120_000)
        errors = watch_errors(page)
        page.goto(app_url)
        page.wait_for_selector(f"{ROOT}[data-status='idle'], {ROOT}[data-mode='replay']")
        choose(page, "left", "mercury")
        choose(page, "right", "openai", "gpt-test")
        start(page, "ECHO:" + " ".join(f"word{i}" for i in range(600)))
        page.wait_for_function("+document.querySelector('#player .cv-side[data-side=left]').dataset.frames >= 3")
        deadline = time.monotonic() + 120
        while not all(first_update(job) for job in jobs):  # every session is in progress at the same time
            assert time.monotonic() < deadline, [len(j.outputs()) for j in jobs]
            time.sleep(0.05)  # polling the clients for the condition above
        waiting = [payload_of(jobs[k].outputs()[-1])["sides"]["left"] for k in range(LOCAL)]
        assert all(w["status"] == "waiting" and "Waiting for a free CPU" in w["message"] for w in waiting), waiting
        tally("concurrent_sessions", LOCAL + WIRE + 1)
    finally:
        COMPUTE.release(busy)
        gate.set()
    names = [check_session(recordings, payload_of(job.result(timeout=300)), prompts[k],
                           f"S{k}X" if k >= LOCAL else None)
             for k, job in enumerate(jobs)]
    assert len(set(names)) == len(names)
    assert COMPUTE.peak <= COMPUTE.slots

    page.click("#stop")
    wait_status(page, "stopped")
    for thread in [t for t in threading.enumerate() if t.name.startswith("race-")]:
        thread.join(timeout=30)
        assert not thread.is_alive(), f"{thread.name} kept running after the races ended"
    check_stopped([p for p in recordings.glob("*.jsonl") if p.name not in names])
    tally("stopped_under_load")
    context.close()
    assert errors == []
    for client in clients:
        client.close()
    check_nothing_outlives_its_session()


def check_session(recordings: Path, final: dict[str, Any], prompt: str, marker: str | None) -> str:
    """A finished session's last update against its recording: both sides done, every frame there, and (for a wire
    session) only frames that name this session. Returns the recording's name."""
    assert final["done"] and [final["sides"][s]["status"] for s in SIDES] == ["done", "done"], final["sides"]
    rec = read_recording(recordings / final["recording"])
    assert rec.header["prompt"] == prompt
    for side in SIDES:
        assert len(rec.frames[side]) == final["sides"][side]["metrics"]["frames"] and rec.frames[side][-1].final
        if marker:
            assert all(marker in f.text and f.text.count("S") == f.text.count(marker) for f in rec.frames[side])
    return final["recording"]


def check_stopped(paths: list[Path]) -> None:
    assert len(paths) == 1
    rec = read_recording(paths[0])
    assert rec.ends["left"]["status"] == "stopped" and len(rec.frames["left"]) >= 3


def check_nothing_outlives_its_session() -> None:
    """No race, and no frame, is left in memory once every session has ended (and the page forgot their races)."""
    from app.ui import sessions

    gc.collect()
    assert not [o for o in gc.get_objects() if isinstance(o, Race)], "a race outlived its session"
    assert not [o for o in gc.get_objects() if isinstance(o, Frame)], "frames outlived their sessions"
    assert all(entry["race"] is None for entry in sessions._sessions.values())
