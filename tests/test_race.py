"""The race runs two sources at once, keeps every frame on disk, and one failing side never stops the other."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from app.cli.record import record
from app.race.run import Race
from app.trace.frames import Frame, RecordingWriter, make_header
from app.trace.reading import read_recording
from app.ui.live import live_updates
from tests.fixtures import needs_twins


def make_recording(path: Path, times: list[float], end: str = "done", message: str | None = None) -> Path:
    """A real recording whose left side types one more token per frame at the given times."""
    w = RecordingWriter(path, make_header("p", {"left": {"name": "local-ar", "settings": {}}}))
    for i, t in enumerate(times):
        w.frame("left", Frame(t=t, step=i, tokens=["w"] * (i + 1), final=i == len(times) - 1))
    w.end("left", end, message)
    w.close()
    return path


def test_record_writes_both_sides_and_each_last_frame_is_that_sides_final(tmp_path: Path) -> None:
    a = make_recording(tmp_path / "a.jsonl", [0.0, 0.01, 0.02])
    b = make_recording(tmp_path / "b.jsonl", [0.0, 0.005])
    out = tmp_path / "out.jsonl"
    final = record("p", f"replay:{a}", f"replay:{b}", out, settings={"left": {"speed": 4}, "right": {"speed": 4}})
    rec = read_recording(out)
    assert [len(rec.frames[s]) for s in ("left", "right")] == [3, 2]
    assert rec.frames["left"][-1].tokens == ["w", "w", "w"]
    assert rec.header["sources"]["left"] == {"name": f"replay:{a}", "settings": {"speed": 4.0, "original": "local-ar"}}
    assert {s: e["status"] for s, e in final["sides"].items()} == {"left": "done", "right": "done"}
    assert final["sides"]["left"]["metrics"]["frames"] == 3


def test_updates_carry_every_frame_exactly_once_in_order(tmp_path: Path) -> None:
    a = make_recording(tmp_path / "a.jsonl", [i * 0.001 for i in range(40)])
    rows: dict[str, list[int]] = {"left": [], "right": []}
    for update in live_updates(Race("p", f"replay:{a}", f"replay:{a}", out=tmp_path / "o.jsonl"), interval=0.01):
        for side, entry in update["sides"].items():
            assert entry["start"] == len(rows[side])
            rows[side] += [r["i"] for r in entry["rows"]]
    assert rows == {"left": list(range(40)), "right": list(range(40))}


def test_a_failing_side_reports_clearly_while_the_other_finishes(tmp_path: Path) -> None:
    good = make_recording(tmp_path / "good.jsonl", [0.0, 0.01])
    bad = make_recording(tmp_path / "bad.jsonl", [0.0], end="error", message="Rate limited.")
    out = tmp_path / "o.jsonl"
    final = record("p", f"replay:{bad}", f"replay:{good}", out)
    left, right = final["sides"]["left"], final["sides"]["right"]
    assert left["status"] == "error" and "Rate limited." in left["message"]
    assert right["status"] == "done"
    rec = read_recording(out)
    assert len(rec.frames["left"]) == 1 and rec.ends["left"]["status"] == "error"


def test_an_unknown_source_is_a_message_not_a_crash(tmp_path: Path) -> None:
    good = make_recording(tmp_path / "good.jsonl", [0.0])
    final = record("p", "no-such-source", f"replay:{good}", tmp_path / "o.jsonl")
    assert "Unknown source 'no-such-source'" in final["sides"]["left"]["message"]
    assert final["sides"]["right"]["status"] == "done"


def test_stop_ends_both_sides_and_keeps_the_frames_so_far(tmp_path: Path) -> None:
    slow = make_recording(tmp_path / "slow.jsonl", [0.0, 0.001, 3600.0])
    out = tmp_path / "o.jsonl"
    race = Race("p", f"replay:{slow}", f"replay:{slow}", out=out)
    seen = 0
    final = None
    for update in live_updates(race, interval=0.01):
        seen += sum(len(e["rows"]) for e in update["sides"].values())
        if seen >= 4 and not update["done"]:
            race.stop()
        final = update
    assert {e["status"] for e in final["sides"].values()} == {"stopped"}
    rec = read_recording(out)
    assert [len(rec.frames[s]) for s in ("left", "right")] == [2, 2]
    assert {rec.ends[s]["status"] for s in ("left", "right")} == {"stopped"}


def test_abandoning_the_update_stream_stops_the_race(tmp_path: Path) -> None:
    slow = make_recording(tmp_path / "slow.jsonl", [0.0, 3600.0])
    race = Race("p", f"replay:{slow}", f"replay:{slow}", out=tmp_path / "o.jsonl")
    updates = live_updates(race, interval=0.01)
    next(updates)
    updates.close()
    assert race.cancel.is_set()
    for t in race._threads:  # they end once they see the cancel; a race left running would hold them for an hour
        t.join(timeout=30)
    assert all(not t.is_alive() for t in race._threads)


def test_the_race_bench_reads_each_race_like_the_page_and_compares_each_twin_with_itself_alone() -> None:
    from app.bench.race import bench
    from app.view.payload import UPDATE_INTERVAL

    out = bench(prompt="Once upon a time", repeats=1)
    assert set(out["runs"]) == {"diffusion_in_race", "ar_in_race", "diffusion_alone", "ar_alone"}
    assert all(len(v) == 1 and v[0] > 0 for v in out["runs"].values())
    assert out["consumer"]["interval_s"] == UPDATE_INTERVAL
    assert out["consumer"]["updates_per_race"][0] > 1 and out["consumer"]["payload_bytes_per_race"][0] > 0
    med = out["seconds_median"]
    assert out["seconds_worst"] == med  # one run: the worst is the median
    assert out["ar_slowdown_in_race"] == round(med["ar_in_race"] / med["ar_alone"], 2)



@needs_twins
def test_token_strings_are_decoded_off_the_sides_threads_and_every_frame_is_on_disk_before_a_side_ends(
        tmp_path: Path) -> None:
    from app.sources.local import twin

    toks = {id(t): t for t in (twin("ar")[1], twin("diffusion")[1])}.values()
    threads: set[str] = set()

    def noting(decode):
        def wrapped(ids):
            threads.add(threading.current_thread().name)
            return decode(ids)
        return wrapped

    for tok in toks:
        tok.token_strings = noting(tok.token_strings)
    out = tmp_path / "o.jsonl"
    try:
        race = Race("Once upon a time", "local-ar", "local-diffusion", out=out,
                    settings={"left": {"gen_length": 16}, "right": {"gen_length": 16, "steps": 8}})
        ended_with: dict[str, int] = {}
        for update in live_updates(race, interval=0.01):
            for side, entry in update["sides"].items():
                if entry["status"] == "done" and side not in ended_with:
                    ended_with[side] = len(read_recording(out).frames[side])
    finally:
        for tok in toks:
            del tok.token_strings
    assert threads == {"race-recorder"}
    rec = read_recording(out)
    assert ended_with == {s: len(rec.frames[s]) for s in ("left", "right")}
    assert rec.frames["left"][-1].tokens and rec.frames["right"][-1].text


def test_a_finished_sides_metrics_are_computed_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import app.view.side as view_module  # the race's summaries are built there

    fast = make_recording(tmp_path / "fast.jsonl", [0.0, 0.001])
    slow = make_recording(tmp_path / "slow.jsonl", [i * 0.01 for i in range(30)])
    counted: list[int] = []
    real = view_module.metrics
    monkeypatch.setattr(view_module, "metrics", lambda frames: counted.append(len(frames)) or real(frames))
    updates = list(live_updates(Race("p", f"replay:{fast}", f"replay:{slow}", out=tmp_path / "o.jsonl"), interval=0.01))
    assert len(updates) > 5
    assert sorted(counted) == [2, 30]
    assert updates[-1]["sides"]["left"]["metrics"]["frames"] == 2


def test_a_replay_race_file_is_named_for_the_whole_recording_it_replays(tmp_path: Path) -> None:
    mercury, first = "example/04-mercury-wire-format.jsonl", "example/01-confidence-blocks.jsonl"
    race = Race("p", f"replay:{mercury}", f"replay:{first}#right", folder=tmp_path)
    try:
        name = race.path.name
    finally:
        race.close()
    assert "-replay_04-mercury-wire-format-vs-replay_01-confidence-blocks_right-" in name  # never cut after ".js"
    assert name.endswith(".jsonl") and name.count(".js") == 1 and race.path.parent == tmp_path
