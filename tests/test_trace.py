"""The recording keeps every frame as it arrives and reads back whatever a crash or a bad file left."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from app.trace.frames import SCHEMA, Frame, RecordingWriter, make_header
from app.trace.reading import RecordingError, read_recording


def frames(n: int) -> list[Frame]:
    return [Frame(t=0.1 * i, step=i, tokens=["a"] * i + [""] * (3 - i), masked=[False] * i + [True] * (3 - i),
                  final=i == 3) for i in range(n)]


def write(path: Path, n_sides: int = 2) -> None:
    w = RecordingWriter(path, make_header("hi", {"left": {"name": "local-diffusion", "settings": {}}}))
    for f in frames(4):
        w.frame("left", f)
        if n_sides == 2:
            w.frame("right", Frame(t=f.t, step=f.step, text="x" * f.step))
    w.end("left", "done")
    w.close()


def test_recording_round_trips_frames_and_header(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    write(path)
    rec = read_recording(path)
    assert rec.header["prompt"] == "hi" and rec.header["schema"] == SCHEMA
    assert rec.frames["left"] == frames(4)
    assert [f.text for f in rec.frames["right"]] == ["", "x", "xx", "xxx"]
    assert rec.ends["left"]["status"] == "done" and rec.warnings == []


def test_states_insertions_and_deletions_round_trip_and_bad_ones_are_named(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    w = RecordingWriter(path, make_header("hi", {}))
    noisy = Frame(t=0.0, step=0, tokens=["qx", "the", "zz"], states="nan")
    grown = Frame(t=0.1, step=1, tokens=["a", "cat", "the", "sat"], states="aaaa", inserted=[0, 3], deleted=[2])
    for frame in (noisy, grown):
        w.frame("left", frame)
    w._write({"type": "frame", "side": "left", "t": 0.2, "step": 2, "tokens": ["a"], "states": "x"})
    w._write({"type": "frame", "side": "left", "t": 0.2, "step": 2, "tokens": ["a"], "states": "aa"})
    w._write({"type": "frame", "side": "left", "t": 0.2, "step": 2, "tokens": ["a"], "inserted": [-1]})
    w.close()
    rec = read_recording(path)
    assert rec.frames["left"] == [noisy, grown]
    assert len(rec.warnings) == 1 and "Lines 4, 5 and 6" in rec.warnings[0] and "'states' must be" in rec.warnings[0]


def test_entropy_round_trips_with_nulls_and_bad_ones_are_named(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    w = RecordingWriter(path, make_header("hi", {}))
    good = Frame(t=0.0, step=1, tokens=["the", "qx", "cat"], states="ana", entropy=[None, 2.5, 0.0123])
    w.frame("left", good)
    for bad in ([1.0, 2.0], [None, -1.0, 0.0], [None, "x", 0.0], [None, True, 0.0], "1"):
        w._write({"type": "frame", "side": "left", "t": 0.1, "step": 2, "tokens": ["a", "b", "c"], "entropy": bad})
    w.close()
    rec = read_recording(path)
    assert rec.frames["left"] == [good] and json.loads(path.read_text().splitlines()[1])["entropy"][0] is None
    assert len(rec.warnings) == 1 and "'entropy' must have one" in rec.warnings[0]
    assert Frame.from_json({"t": 0, "step": 0, "tokens": ["a"]}).entropy is None  # older frames: none


def test_revision_letters_round_trip_and_bad_ones_are_named(tmp_path: Path) -> None:
    """A frame of a side started from a draft (issue 53) keeps its `revision`, one letter of k, e, r, . a token."""
    path = tmp_path / "v.jsonl"
    w = RecordingWriter(path, make_header("hi", {}))
    good = Frame(t=0.0, step=1, tokens=["the", "qx", "cat", "sat"], states="ana" + "a", revision="kre.")
    w.frame("left", good)
    for bad in ("kr", "krex", 3):
        w._write({"type": "frame", "side": "left", "t": 0.1, "step": 2, "tokens": ["a", "b", "c", "d"],
                  "revision": bad})
    w.close()
    rec = read_recording(path)
    assert rec.frames["left"] == [good] and rec.frames["left"][0].revision == "kre."
    assert len(rec.warnings) == 1 and "'revision' must be" in rec.warnings[0]
    assert Frame.from_json({"t": 0, "step": 0, "tokens": ["a"]}).revision is None  # older frames: no draft


def test_a_schema_1_recording_still_reads(tmp_path: Path) -> None:
    path = tmp_path / "old.jsonl"
    path.write_text('{"type": "header", "schema": 1, "prompt": "p", "sources": {}}\n'
                    '{"type": "frame", "side": "left", "t": 0, "step": 0, "tokens": ["a"], "masked": [false]}\n')
    rec = read_recording(path)
    assert rec.header["schema"] == 1 and rec.frames["left"][0].tokens == ["a"] and rec.frames["left"][0].states is None


def test_candidates_round_trip_and_malformed_ones_are_named(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    w = RecordingWriter(path, make_header("hi", {}))
    good = Frame(t=0.1, step=1, tokens=["a"], candidates=[[0, [["a", 0.9], ["b", 0.05]]]])
    w.frame("left", good)
    w._write({"type": "frame", "side": "left", "t": 0.2, "step": 2, "tokens": ["a"], "candidates": [[0, "a"]]})
    w.close()
    rec = read_recording(path)
    assert rec.frames["left"] == [good]
    assert len(rec.warnings) == 1 and "candidates" in rec.warnings[0]


def test_pinned_positions_and_notes_round_trip_and_old_frames_read_without_them(tmp_path: Path) -> None:
    path = tmp_path / "p.jsonl"
    w = RecordingWriter(path, make_header("hi", {}))
    first = Frame(t=0.0, step=0, tokens=["", "the", "end"], masked=[True, False, False], pinned=[1, 2],
                  note="t = 0.35 (35% masked)")
    w.frame("left", first)
    w.frame("left", Frame(t=0.1, step=1, tokens=["a", "the", "end"], masked=[False] * 3, final=True))
    for bad in ([-1], [True], "1,2"):
        w._write({"type": "frame", "side": "left", "t": 0.2, "step": 2, "tokens": ["a"], "pinned": bad})
    w._write({"type": "frame", "side": "left", "t": 0.2, "step": 2, "tokens": ["a"], "note": "x" * 201})
    w.close()
    lines = path.read_text().splitlines()
    assert '"pinned": [1, 2]' in lines[1] and "pinned" not in lines[2]  # the first frame alone lists them
    rec = read_recording(path)
    assert rec.frames["left"][0] == first and rec.frames["left"][1].pinned is None
    assert rec.frames["left"][1].note is None
    assert len(rec.warnings) == 1 and "Lines 4, 5, 6 and 7" in rec.warnings[0] and "'pinned'" in rec.warnings[0]


def test_each_frame_is_on_disk_before_the_writer_is_closed(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    w = RecordingWriter(path, make_header("p", {}))
    w.frame("left", frames(1)[0])
    assert len(path.read_text().splitlines()) == 2
    assert read_recording(path).frames["left"] == frames(1)
    w.close()


def test_killed_writer_process_leaves_a_readable_file(tmp_path: Path) -> None:
    path = tmp_path / "killed.jsonl"
    script = (
        "import os, sys\n"
        "from app.trace.frames import Frame, RecordingWriter, make_header\n"
        f"w = RecordingWriter({str(path)!r}, make_header('p', {{}}))\n"
        "for i in range(5):\n"
        "    w.frame('left', Frame(t=i, step=i, text='x' * i))\n"
        "os.kill(os.getpid(), 9)\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], cwd=Path(__file__).parent.parent)
    assert proc.returncode != 0
    assert [f.step for f in read_recording(path).frames["left"]] == [0, 1, 2, 3, 4]


def test_truncated_last_line_loads_up_to_the_last_good_frame(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    write(path, n_sides=1)
    data = path.read_bytes()
    path.write_bytes(data[: data.rindex(b'"type": "end"') - 30])
    rec = read_recording(path)
    assert len(rec.frames["left"]) == 3
    assert "Line 5" in rec.warnings[0]


@pytest.mark.parametrize("bad", ['{"type": "frame", "side": "left", "t": "soon", "step": 1}',
                                 '{"type": "frame", "side": "middle", "t": 1, "step": 1}',
                                 '{"type": "frame", "side": "left", "t": 1, "step": 1, "tokens": [1]}',
                                 '{"type": "frame", "side": "left", "t": NaN, "step": 1}',
                                 '[1, 2]', 'not json', '\udcff'])
def test_a_corrupt_line_is_named_and_skipped_and_every_other_frame_kept(tmp_path: Path, bad: str) -> None:
    path = tmp_path / "r.jsonl"
    write(path, n_sides=1)
    lines = path.read_text().splitlines()
    lines.insert(3, bad)
    path.write_bytes("\n".join(lines).encode("utf-8", "surrogateescape"))
    rec = read_recording(path)
    assert rec.frames["left"] == frames(4)
    assert rec.warnings and rec.warnings[0].startswith("Line 4 ") and "skipped" in rec.warnings[0]


@pytest.mark.parametrize("content, message", [
    (b"", "empty"),
    (b"hello\n", "not a Converge recording"),
    (b'{"type": "frame"}\n', "not a header"),
    (json.dumps({"type": "header", "schema": 99}).encode() + b"\n", "schema 99"),
])
def test_files_that_are_not_recordings_are_refused_clearly(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_bytes(content)
    with pytest.raises(RecordingError, match=message):
        read_recording(path)


def test_oversized_recordings_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl"
    write(path)
    with pytest.raises(RecordingError, match="refused"):
        read_recording(path, max_bytes=100)


def test_who_chose_a_frames_commits_round_trips_and_anything_else_is_named(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    w = RecordingWriter(path, make_header("hi", {}))
    mine = Frame(t=0.1, step=1, tokens=["a"], committed=[0], chosen_by="user")
    theirs = Frame(t=0.2, step=2, tokens=["a", "b"], committed=[1], chosen_by="model")
    w.frame("left", mine)
    w.frame("left", theirs)
    w._write({"type": "frame", "side": "left", "t": 0.3, "step": 3, "tokens": ["a"], "chosen_by": "<b>me</b>"})
    w.close()
    rec = read_recording(path)
    assert rec.frames["left"] == [mine, theirs]
    assert len(rec.warnings) == 1 and "chosen_by" in rec.warnings[0]
