"""The `served` section of `python -m app bench`: a served page with 30 visitors racing the twins, on the server and in
their browsers (issue 42 item 6).

It builds the static site, starts the whole app in a process of its own under the served policy (as `python -m app
--host 0.0.0.0` runs it, bound to 127.0.0.1) with the site's folder, and simulates the visitors, each from its own
loopback address (127.0.0.2, 127.0.0.3, ...: one visitor an address, as a class on their own devices):

- on the server: all 30 join the queue at once for the page's race of the twins at the page's defaults (Gradio's queue
  API, as tests/test_load.py), and each waits for its answer;
- in the browser: all 30 fetch at once what a visitor's browser fetches to race there (the page, its config, and the
  site's runtime, samplers and graphs under /converge-site/, gzip-compressed where the page compresses them), then
  each hands the server its finished race to save, as browser_race.js does (a race of the Python twins at the page's
  defaults, whose frames the browser's equal: packed once, sent by all 30 through the queue to the page's save
  handler), then one real headless Chromium opens the page and races with "Run on: your browser" (its click to the
  race's end: a visitor's own race time, on its own device; it saves its races too).

For each way and each run: the server's CPU seconds (user and system, from /proc/PID/stat) and the slowest visitor's
wait (server: join to answer; browser: the slowest fetch of everything plus the Chromium race). What is simulated: the
30 visitors are threads on this machine speaking HTTP, not 30 browsers; the browser race is timed in one Chromium on
the same machine as the server, after the fetches.
"""

from __future__ import annotations

import base64
import contextlib
import gzip
import http.client
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Iterator

from app.bench.browser import site_browser

VISITORS = 30
ROOT = Path(__file__).resolve().parents[2]
SERVE = ("import sys; from app.serving.policy import from_launch; from app.ui.layout import launch; "
         "launch('127.0.0.1', int(sys.argv[1]), policy=from_launch('0.0.0.0', env={}), site=sys.argv[2], quiet=True, "
         "_frontend=False)")
SITE = "/converge-site/"
SITE_FILES = ("ort/ort.wasm.min.js", "race.js", "twins.json", "ort/ort-wasm-simd-threaded.mjs",
              "ort/ort-wasm-simd-threaded.wasm", "diffusion.onnx", "ar.onnx")
TIMEOUT = 600.0
KEPT = "browser-kept"  # the hidden box a browser race is saved through (app/ui/browser_race.py KEPT_ID)
PROMPT = "Once upon a time, a little fox"  # the race each simulated browser visitor saves (the static page's prompt)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def cpu_seconds(pid: int) -> float:
    """The process's user plus system CPU seconds so far (/proc/PID/stat fields 14 and 15), all its threads."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextlib.contextmanager
def app_process(folder: Path, script: str, *args: str, what: str = "the page"
                ) -> Iterator[tuple[int, subprocess.Popen[bytes]]]:
    """The app started by `script` (Python run with the port and `args`) in its own process on 127.0.0.1, its
    recordings in `folder`; yields (port, process) once its config answers, and stops it after."""
    port = _free_port()
    env = {**os.environ, "CONVERGE_RECORDINGS": str(folder / "recordings"), "PYTHONPATH": str(ROOT)}
    with open(folder / "server.log", "wb") as log:
        proc = subprocess.Popen([sys.executable, "-c", script, str(port), *args], cwd=ROOT, env=env, stdout=log,
                                stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 180
    try:
        while True:
            try:
                get(port, "127.0.0.1", "/config")
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"{what} did not start: "
                                       + (folder / "server.log").read_text(errors="replace")[-500:]) from None
                time.sleep(0.2)  # polling interval while the server starts
        yield port, proc
    finally:
        proc.terminate()
        proc.wait(30)


@contextlib.contextmanager
def served_app(site: Path, folder: Path) -> Iterator[tuple[int, subprocess.Popen[bytes]]]:
    """The whole app under the served policy with `site`, in its own process on 127.0.0.1 with its recordings in
    `folder`; yields (port, process) once its config answers."""
    with app_process(folder, SERVE, str(site), what="the served page") as started:
        yield started


def _connection(port: int, source: str) -> http.client.HTTPConnection:
    return http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT, source_address=(source, 0))


def get(port: int, source: str, path: str) -> int:
    """GETs `path` from 127.0.0.1:port as client address `source`, accepting gzip as a browser does; the bytes read
    off the wire (OSError on a failed status)."""
    conn = _connection(port, source)
    try:
        conn.request("GET", path, headers={"Accept-Encoding": "gzip, deflate, br"})
        reply = conn.getresponse()
        size = len(reply.read())
        if reply.status != 200:
            raise OSError(f"GET {path} answered {reply.status}")
        return size
    finally:
        conn.close()


def race_call(port: int) -> tuple[int, list[Any]]:
    """The page's race handler (fn_index) and its inputs at the page's defaults, from the served config."""
    conn = _connection(port, "127.0.0.1")
    conn.request("GET", "/config")
    cfg = json.loads(conn.getresponse().read())
    conn.close()
    dep = next(d for d in cfg["dependencies"] if d.get("api_name") == "race")
    by_id = {c["id"]: c for c in cfg["components"]}
    data = [None if by_id[i]["type"] == "state" else by_id[i].get("props", {}).get("value") for i in dep["inputs"]]
    return dep["id"], data


def server_visitor(port: int, source: str, index: int, data: list[Any]) -> float:
    """One visitor's race on the server through Gradio's queue: join, then read its event stream to the end; the
    seconds from the join to the answer (RuntimeError when it failed)."""
    session = uuid.uuid4().hex
    body = json.dumps({"data": data, "fn_index": index, "session_hash": session, "event_data": None,
                       "trigger_id": None})
    started = time.perf_counter()
    conn = _connection(port, source)
    conn.request("POST", "/gradio_api/queue/join", body=body, headers={"Content-Type": "application/json"})
    reply = conn.getresponse()
    answer = reply.read()
    conn.close()
    if reply.status != 200:
        raise RuntimeError(f"the queue refused a visitor: {answer[:200]!r}")
    event = json.loads(answer)["event_id"]
    conn = _connection(port, source)
    conn.request("GET", f"/gradio_api/queue/data?session_hash={session}")
    stream = conn.getresponse()
    try:
        for raw in stream:
            line = raw.decode("utf-8").strip()
            message = json.loads(line[5:]) if line.startswith("data:") else {}
            if message.get("msg") == "process_completed" and message.get("event_id") == event:
                if not message.get("success"):
                    raise RuntimeError(f"a visitor's race failed: {str(message)[:200]}")
                return time.perf_counter() - started
    finally:
        conn.close()
    raise RuntimeError("a visitor's event stream ended without its answer")


def keep_call(port: int) -> int:
    """The page's save handler for a race run in the browser (fn_index): the change of its hidden box."""
    conn = _connection(port, "127.0.0.1")
    conn.request("GET", "/config")
    cfg = json.loads(conn.getresponse().read())
    conn.close()
    kept = next(c["id"] for c in cfg["components"] if c.get("props", {}).get("elem_id") == KEPT)
    return next(d["id"] for d in cfg["dependencies"] if [kept, "change"] in [list(t) for t in d["targets"]])


def packed_race(prompt: str) -> str:
    """A race of the Python twins at the page's defaults, packed as browser_race.js packs the browser's (whose frames
    equal these): gzip-compressed JSON of the prompt and each side's settings, frames and end, in base64."""
    import threading

    from app.sources.local import make_local_ar, make_local_diffusion

    sides = {}
    for side, make in (("left", make_local_diffusion), ("right", make_local_ar)):
        source = make()
        frames = [f.ready().to_json() for f in source.stream(prompt, threading.Event())]
        sides[side] = {"settings": source.settings(), "frames": frames, "status": "done"}
    raw = json.dumps({"prompt": prompt, "sides": sides}).encode()
    return base64.b64encode(gzip.compress(raw)).decode()


def browser_visitor(port: int, source: str, keep: int, packed: str) -> tuple[float, int]:
    """One visitor's fetches for a race in the browser (the page, its config, the site's files), then the save of
    its finished race: seconds and bytes fetched."""
    started = time.perf_counter()
    size = sum(get(port, source, path) for path in ("/", "/config", *(SITE + f for f in SITE_FILES)))
    server_visitor(port, source, keep, [None, packed])
    return time.perf_counter() - started, size


def crowd(work: Any, visitors: int) -> list[Any]:
    """`work(source)` for each visitor at once, each from its own loopback address (127.0.0.2 on)."""
    with ThreadPoolExecutor(visitors) as pool:
        return list(pool.map(work, [f"127.0.0.{2 + k}" for k in range(visitors)]))


SAVED = "(document.querySelector('#library-status textarea')?.value || '')"  # the page's status line


def chromium_race(port: int, chromium: str) -> dict[str, float]:
    """One real visitor in headless Chromium: page open to Run shown, Run (on your browser) to the race's end (its
    first, which loads the runtime and graphs), and a second race."""
    from playwright.sync_api import sync_playwright

    state = "document.querySelector('#player .cv-player').convergePlayer.state"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        try:
            tab = browser.new_context().new_page()
            tab.set_default_timeout(TIMEOUT * 1000)
            started = time.perf_counter()
            tab.goto(f"http://127.0.0.1:{port}/")
            tab.wait_for_selector("#run-browser", state="visible")
            tab.wait_for_function(f"() => {state}.run !== null")
            opened = time.perf_counter() - started
            started = time.perf_counter()
            tab.click("#run-browser")
            tab.wait_for_function(f"() => {state}.caption.startsWith('Ran in your browser')")
            raced = time.perf_counter() - started
            tab.wait_for_function(f"() => {SAVED}.startsWith('Saved')")  # then the server has it
            first, said = tab.evaluate(f"() => [{state}.run, {SAVED}]")
            started = time.perf_counter()
            tab.click("#run-browser")  # again: the runtime and graphs are loaded now
            done = f"(first) => {state}.run !== first && {state}.caption.startsWith('Ran in')"
            tab.wait_for_function(done, arg=first)
            again = time.perf_counter() - started
            tab.wait_for_function(f"(said) => {SAVED} !== said && {SAVED}.startsWith('Saved')", arg=said)
        finally:
            browser.close()
    return {"page_open_s": round(opened, 2), "race_s": round(raced, 2), "race_again_s": round(again, 2)}


def one_run(port: int, pid: int, chromium: str, visitors: int, recordings: Path) -> dict[str, Any]:
    """Both ways once: server CPU seconds and the slowest visitor's wait for each, and how many browser races the
    server saved (in `recordings`)."""
    index, data = race_call(port)
    cpu = cpu_seconds(pid)
    waits = crowd(lambda source: server_visitor(port, source, index, data), visitors)
    server = {"server_cpu_s": round(cpu_seconds(pid) - cpu, 2), "slowest_wait_s": round(max(waits), 2),
              "median_wait_s": round(sorted(waits)[len(waits) // 2], 2)}
    keep, packed = keep_call(port), packed_race(PROMPT)  # made here, in the bench's process, not the server's
    cpu, before = cpu_seconds(pid), set(recordings.rglob("*.jsonl"))
    fetched = crowd(lambda source: browser_visitor(port, source, keep, packed), visitors)
    fetch_save_cpu = cpu_seconds(pid) - cpu
    visit = chromium_race(port, chromium)
    slowest = max(s for s, _ in fetched)
    browser = {"server_cpu_s": round(cpu_seconds(pid) - cpu, 2), "fetch_save_cpu_s": round(fetch_save_cpu, 2),
               "slowest_fetch_save_s": round(slowest, 2), "saved_kb": round(len(packed) / 1e3, 1),
               "mb_per_visitor": round(fetched[0][1] / 1e6, 1),
               "chromium": visit, "slowest_wait_s": round(slowest + visit["race_s"], 2),
               "saved_runs": len(set(recordings.rglob("*.jsonl")) - before)}
    return {"server": server, "browser": browser}


def bench(visitors: int = VISITORS, runs: int = 2) -> dict[str, Any]:
    """`runs` runs of 30 visitors both ways on one served page; {"skipped": reason} where it cannot run."""
    found = site_browser()
    if isinstance(found, str):
        return {"skipped": found}
    chromium, PlaywrightError = found
    from app.errors import UserError
    from app.site.build import build_site

    out: dict[str, Any] = {"visitors": visitors, "runs": [], "cpus": os.cpu_count(),
                           "simulated": f"{visitors} visitors as threads from {visitors} loopback addresses speaking "
                                        "HTTP; one real Chromium times a browser race after the fetches"}
    with tempfile.TemporaryDirectory() as tmp:
        try:
            site = build_site(Path(tmp) / "site")
        except UserError as e:
            return {**out, "skipped": str(e)}
        try:
            with served_app(site, Path(tmp)) as (port, proc):
                for _ in range(runs):
                    out["runs"].append(one_run(port, proc.pid, chromium, visitors, Path(tmp) / "recordings"))
        except PlaywrightError as e:
            return {**out, "skipped": f"Chromium could not race on the page: {str(e).splitlines()[0]}"}
    for way in ("server", "browser"):
        out[f"worst_{way}"] = {k: max(r[way][k] for r in out["runs"]) for k in ("server_cpu_s", "slowest_wait_s")}
    return out
