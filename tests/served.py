"""A served page in its own process, as an attacker meets it: the policy of `python -m app --host 0.0.0.0`, bound on
loopback, with its log in a file; and Gradio's queue API spoken by hand against it (join, then the event stream)."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from typing import Any, Iterator

from tests.pages import free_port

ROOT = Path(__file__).resolve().parent.parent
# as pages.serve_page
# with CONVERGE_TEST_SITE set, the static site's folder built there is served for the browser race, as the CLI does
SERVE = ("import os, sys; from app.serving.policy import from_launch; from app.ui.layout import launch; "
         "launch('127.0.0.1', int(sys.argv[1]), policy=from_launch('0.0.0.0', allow=sys.argv[2:], env={}), quiet=True, "
         "_frontend=False, site=os.environ.get('CONVERGE_TEST_SITE') or None)")


@contextlib.contextmanager
def served_process(log: Path, recordings: Path, allow: tuple[str, ...] = (), temp: Path | None = None,
                   site: Path | None = None) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """The whole app under the served policy (with the capabilities in `allow` turned back on) in a fresh process on
    127.0.0.1, with every temporary file it makes (Gradio's and the system's) under `temp` when given; yields (url,
    process) once it answers. Its stdout and stderr (Gradio's tracebacks included) go to `log`. With `site` (a built
    static site's folder) the page offers the browser race and serves that folder's files."""
    port = free_port()
    env = {**os.environ, "CONVERGE_RECORDINGS": str(recordings), "PYTHONPATH": str(ROOT),
           "CONVERGE_TEST_SITE": str(site or "")}
    if temp is not None:
        (temp / "system").mkdir(parents=True, exist_ok=True)
        env.update(GRADIO_TEMP_DIR=str(temp / "gradio"), TMPDIR=str(temp / "system"))
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-c", SERVE, str(port), *allow], cwd=ROOT, env=env, stdout=out,
                                stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/"
    deadline = time.monotonic() + 120
    try:
        while True:
            try:
                with urllib.request.urlopen(url + "config", timeout=5):
                    break
            except OSError:
                assert proc.poll() is None, log.read_text(errors="replace")[-2000:]
                assert time.monotonic() < deadline, "the served page did not start"
                time.sleep(0.2)  # polling interval while the server starts, not synchronisation
        yield url, proc
    finally:
        proc.terminate()
        proc.wait(30)


def config(url: str) -> dict[str, Any]:
    """The page's config as a browser (or an attacker) reads it: components and every event's dependency."""
    with urllib.request.urlopen(url + "config", timeout=30) as r:
        return json.loads(r.read())


def call(url: str, fn_index: int, data: list[Any], session: str | None = None,
         timeout: float = 60.0) -> tuple[dict[str, Any], float]:
    """Joins the queue for one handler by fn_index and reads its event stream to process_completed; returns that
    message and the seconds from the join to it. A join the door refuses for good (a request over its size cap) comes
    back as a failed message carrying the door's sentence; one it refuses while this client's previous event is still
    leaving the queue is sent again."""
    session = session or uuid.uuid4().hex
    body = json.dumps({"data": data, "fn_index": fn_index, "session_hash": session, "event_data": None,
                       "trigger_id": None}).encode()
    deadline = time.monotonic() + timeout
    while True:  # the door refuses a join while this client's previous event is still leaving the queue: wait for that
        start = time.monotonic()
        request = urllib.request.Request(url + "gradio_api/queue/join", data=body,
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=timeout) as r:
                event_id = json.loads(r.read())["event_id"]
            break
        except urllib.error.HTTPError as e:
            if e.code == 429 and time.monotonic() < deadline:
                time.sleep(0.02)
                continue
            if e.code in (403, 413, 429):  # the door (app/ui/door.py) refused the join with one sentence
                return {"success": False, "output": {"error": json.loads(e.read())["detail"]}, "door": e.code}, \
                    time.monotonic() - start
            raise
    with urllib.request.urlopen(f"{url}gradio_api/queue/data?session_hash={session}", timeout=timeout) as stream:
        for raw in stream:
            line = raw.decode("utf-8").strip()
            if not line.startswith("data:"):
                continue
            message = json.loads(line[5:])
            if message.get("msg") == "process_completed" and message.get("event_id") == event_id:
                return message, time.monotonic() - start
    raise AssertionError("the event stream ended without process_completed")


def peak_mb(proc: subprocess.Popen[bytes], field: str = "VmHWM") -> float:
    """The process's peak resident memory so far (VmHWM), or another /proc status figure such as VmRSS, in MB."""
    for line in Path(f"/proc/{proc.pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no {field} in /proc")
