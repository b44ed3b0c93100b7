"""Fault injection against the loopback wire server, in whole races: a dropped connection, a stall (the timeout fires
and
says so), 429 and 503 with and without Retry-After (hostile values too), every other fault in the server's catalogue, a
server that is down, and a recording process killed mid-race. The faulty side ends with one clear sentence and keeps
its frames; the other side of the race finishes every time."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from app.race.run import Race
from app.trace.reading import read_recording
from app.ui.live import live_updates
from tests.fixtures import HAVE_TWINS
from tests.reliability import tally
from tests.wire_server import DEFAULT_KEY, script, serve

ROOT = Path(__file__).resolve().parent.parent
OTHER = ["openai:gpt-test", "local-ar"] if HAVE_TWINS else ["openai:gpt-test"]

FAULTS = [  # (model on the faulty side, frames it keeps, what its message says)
    ("cut-after-4", 4, "dropped after 4 frames"),
    ("eof-after-3", 3, "ended after 3 frames without finishing"),
    ("malformed-after-2", 2, "malformed chunk after 2 frames"),
    ("badshape-after-2", 2, "malformed chunk after 2 frames"),
    ("error-after-2", 2, "reported an error after 2 frames"),
    ("stall-after-3", 3, "sent nothing for 1 s after 3 frames, so the request timed out"),
    ("stall-headers", 0, "sent nothing for 1 s, so the request timed out"),
    ("fail-401", 0, "rejected the API key (401 Unauthorized)"),
    ("fail-402", 0, "refused the request (402"),
    ("fail-404", 0, "has no model 'fail-404' (404)"),
    ("fail-429", 0, "rate limiting requests (429): try again shortly"),
    ("fail-429-retry", 0, "rate limiting requests (429): try again in 7 s"),
    ("fail-500", 0, "server error (500)"),
    ("fail-503", 0, "overloaded (503: Engine Overloaded): try again shortly"),
    ("fail-503-retry", 0, "overloaded (503: Engine Overloaded): try again in 5 s"),
]
RETRY_AFTER = [  # hostile Retry-After values: the message stays one sane sentence
    ("nan", "try again shortly"), ("-5", "try again shortly"), ("1e309", "try again shortly"),
    ("soon<script>", "try again shortly"), ("99999999999", "try again in over an hour"),
    ("0.2", "try again in 1 s"), ("Wed, 21 Oct 2015 07:28:00 GMT", "try again in 1 s"),
]


@pytest.fixture
def env(fast_env: str) -> str:
    return fast_env


def race(left: str, right: str, out: Path, left_settings: dict[str, Any] | None = None) -> dict[str, Any]:
    """Runs a race to its end and returns the final update; the local twin answers in 32 tokens."""
    settings = {"left": left_settings or {}, "right": {"gen_length": 32} if right.startswith("local") else {}}
    final: dict[str, Any] = {}
    race = Race("ECHO:Faults are injected on the left while the right side races on.", left, right,
                settings=settings, out=out)
    for update in live_updates(race, interval=0.02):
        final = update
    return final


def check_other_side(final: dict[str, Any], out: Path) -> None:
    right = final["sides"]["right"]
    assert right["status"] == "done", right
    rec = read_recording(out)
    assert rec.frames["right"] and rec.frames["right"][-1].final and rec.ends["right"]["status"] == "done"
    tally("other_side_finished")


@pytest.mark.parametrize("model, kept, words", FAULTS, ids=[f[0] for f in FAULTS])
def test_a_fault_on_one_side_is_one_clear_sentence_and_the_other_side_finishes(
        env: str, tmp_path: Path, model: str, kept: int, words: str) -> None:
    other = OTHER[FAULTS.index((model, kept, words)) % len(OTHER)]
    out = tmp_path / "race.jsonl"
    final = race(f"mercury:{model}", other, out, {"timeout": 1})
    tally("faults_injected")
    left = final["sides"]["left"]
    assert left["status"] == "error" and words in left["message"], left["message"]
    assert DEFAULT_KEY not in left["message"]
    rec = read_recording(out)
    assert len(rec.frames["left"]) == kept and rec.ends["left"] == {"status": "error", "message": left["message"]}
    check_other_side(final, out)


@pytest.mark.parametrize("value, words", RETRY_AFTER, ids=[v for v, _ in RETRY_AFTER])
def test_a_hostile_retry_after_still_gives_a_sane_sentence(env: str, tmp_path: Path, value: str, words: str) -> None:
    for status in (429, 503):
        model = script([b'{"error": {"message": "slow down", "type": "rate_limit_error"}}'], status=status,
                       headers={"Retry-After": value, "Content-Type": "application/json"})
        out = tmp_path / f"{status}.jsonl"
        final = race(f"openai:{model}", "openai:gpt-test", out)
        tally("faults_injected")
        message = final["sides"]["left"]["message"]
        assert f"({status}" in message and message.endswith(words + "."), message
        check_other_side(final, out)


def test_a_server_that_is_down_is_named_and_the_other_side_finishes(env: str, tmp_path: Path) -> None:
    with serve(fps=0) as gone:
        pass  # started and stopped: nothing listens on its port any more
    out = tmp_path / "race.jsonl"
    final = race("mercury", "openai:gpt-test", out, {"base_url": gone})
    tally("faults_injected")
    assert "Could not connect to 127.0.0.1" in final["sides"]["left"]["message"]
    check_other_side(final, out)


def frames_on_disk(path: Path) -> dict[str, int]:
    """How many frame lines each side has on disk so far (a partial last line is not counted)."""
    counts = {"left": 0, "right": 0}
    if path.exists():
        for line in path.read_bytes().split(b"\n")[:-1]:
            for side in counts:
                if line.startswith(b'{"type": "frame", "side": "%s"' % side.encode()):
                    counts[side] += 1
    return counts


def test_a_process_killed_mid_race_leaves_a_recording_that_reads_to_its_last_frame(env: str, tmp_path: Path) -> None:
    out = tmp_path / "killed.jsonl"
    proc = subprocess.Popen([sys.executable, "-m", "app", "record", "--left", "mercury:stall-after-6",
                             "--right", "openai:stall-after-4", "--prompt", "ECHO:" + "a long answer " * 40,
                             "--out", str(out)], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        deadline = time.monotonic() + 120
        while frames_on_disk(out) != {"left": 6, "right": 4}:  # both sides are now stalled mid-answer
            assert proc.poll() is None and time.monotonic() < deadline, frames_on_disk(out)
            time.sleep(0.05)  # polling the file for the condition above
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    tally("faults_injected")
    rec = read_recording(out)
    assert [len(rec.frames[s]) for s in ("left", "right")] == [6, 4]
    assert rec.ends == {} and rec.warnings == []
    assert all(not f.final for s in ("left", "right") for f in rec.frames[s])


def test_a_drop_after_the_answer_finished_keeps_the_answer_as_done(env: str, tmp_path: Path) -> None:
    """Only [DONE] is lost (the connection closes mid-body after finish_reason): the answer is complete."""
    chunk = {"choices": [{"index": 0, "delta": {"content": "All of it."}, "finish_reason": None}]}
    last = {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
    model = script([b"data: " + json.dumps(chunk).encode() + b"\n\n", b"data: " + json.dumps(last).encode() + b"\n\n"],
                   complete=False)
    out = tmp_path / "race.jsonl"
    final = race(f"openai:{model}", "openai:gpt-test", out)
    tally("faults_injected")
    left = final["sides"]["left"]
    assert left["status"] == "done", left["message"]
    rec = read_recording(out)
    assert rec.frames["left"][-1].final and rec.frames["left"][-1].text == "All of it."
    check_other_side(final, out)
