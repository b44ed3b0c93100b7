"""A recording as pandas tables: per-frame figures checked against values worked out by hand, and `python -m app
stats`."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from app.analysis.tables import FRAME_COLUMNS, frames_table, metrics_table
from app.trace.frames import Frame, RecordingWriter, make_header

ROOT = Path(__file__).resolve().parent.parent
M, U = True, False  # masked, unmasked


def fixture_recording(path: Path) -> Path:
    """Left: a masked source that commits, changes, remasks and finishes; right: a text source typing three words."""
    w = RecordingWriter(path, make_header("Once", {"left": {"name": "local-diffusion", "settings": {}},
                                                   "right": {"name": "openai:typist", "settings": {}}}))
    left = [(["", "", "", ""], [M, M, M, M]),
            (["Once", "", "", ""], [U, M, M, M]),
            (["Once", " upon", " the", ""], [U, U, U, M]),
            (["Once", " upon", " a", ""], [U, U, U, M]),
            (["Once", "", " a", ""], [U, M, U, M]),
            (["Once", " upon", " a", " time"], [U, U, U, U])]
    for i, (tokens, masked) in enumerate(left):
        w.frame("left", Frame(t=0.1 * i, step=i, tokens=tokens, masked=masked, nfe=i, final=i == len(left) - 1))
    for i, text in enumerate(["Once", "Once upon", "Once upon a"]):
        w.frame("right", Frame(t=0.05 + 0.1 * i, step=i + 1, text=text, final=i == 2))
    w.close()
    return path


def test_frames_table_gives_each_frames_figures_as_worked_out_by_hand(tmp_path: Path) -> None:
    table = frames_table(fixture_recording(tmp_path / "run.jsonl"))
    assert list(table.columns) == list(FRAME_COLUMNS)
    left = table[table.side == "left"]
    assert left.source.unique().tolist() == ["local-diffusion"]
    assert left.frame.tolist() == [0, 1, 2, 3, 4, 5] and left.passes.tolist() == [0, 1, 2, 3, 4, 5]
    assert left.visible_tokens.tolist() == [0, 1, 3, 3, 2, 4]
    assert left.committed.tolist() == [0, 1, 2, 0, 0, 2]  # " upon" and " time" appear in the last frame
    assert left.changed.tolist() == [0, 0, 0, 1, 0, 0]  # " the" became " a"
    assert left.remasked.tolist() == [0, 0, 0, 0, 1, 0]  # " upon" reopened
    assert left.settled_fraction.tolist() == [0, 0.25, 0.5, 0.75, 0.5, 1.0]
    assert left.final.tolist() == [False] * 5 + [True]
    right = table[table.side == "right"]
    assert right.t.tolist() == pytest.approx([0.05, 0.15, 0.25])
    assert right.passes.isna().all()  # a text source records no forward passes
    assert right.visible_tokens.tolist() == [1, 2, 3]  # words; the spaces between them are not visible tokens
    assert right.committed.tolist() == [1, 2, 2]  # display positions: "Once", then " " + "upon", then " " + "a"
    assert right.settled_fraction.tolist() == pytest.approx([1 / 3, 2 / 3, 1.0])


def test_metrics_table_agrees_with_the_frames_table(tmp_path: Path) -> None:
    path = fixture_recording(tmp_path / "run.jsonl")
    m, frames = metrics_table(path), frames_table(path)
    assert m.loc["source"].tolist() == ["local-diffusion", "openai:typist"]
    assert m.left.ttft == pytest.approx(0.1) and m.left.t_final == pytest.approx(0.5)
    assert (m.left.frames, m.left.tokens, m.left.nfe, m.left.tokens_per_nfe) == (6, 4, 5, 0.8)
    assert (m.right.frames, m.right.tokens, m.right.nfe) == (3, 3, None)
    for side in ("left", "right"):
        rows = frames[frames.side == side]
        assert rows.visible_tokens.iloc[-1] == m[side].tokens
        first_visible = rows[rows.visible_tokens > 0].t.iloc[0]
        assert math.isclose(first_visible, m[side].ttft)


def run_stats(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "app", "stats", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)


def test_stats_command_prints_the_metrics_and_writes_the_per_frame_csv(tmp_path: Path) -> None:
    path = fixture_recording(tmp_path / "run.jsonl")
    out = tmp_path / "frames.csv"
    proc = run_stats(str(path), "--csv", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "tokens_per_nfe" in proc.stdout and "openai:typist" in proc.stdout and f"wrote {out}" in proc.stdout
    written = pd.read_csv(out, dtype={"passes": "Int64"})
    pd.testing.assert_frame_equal(written, frames_table(path))


def test_stats_on_a_file_that_is_not_a_recording_says_so_in_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "notes.jsonl"
    bad.write_text("hello\n")
    proc = run_stats(str(bad))
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.strip().splitlines() == [
        "notes.jsonl is not a Converge recording (line 1 is not a JSON header)."]
