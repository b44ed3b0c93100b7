"""Issue 41: on this CPU the AR twin finishes first in seconds while the diffusion twin makes fewer passes; the metrics
say why in one line (this machine's block-pass cost against a one-token pass, and a GPU's, measured elsewhere), and
only when it is so."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.trace.frames import Frame, RecordingWriter, make_header
from app.view import why
from app.view.payload import load_payload
from tests.fixtures import needs_twins


def race(path: Path, diffusion_s: float, ar_s: float) -> Path:
    """A recording: a diffusion side that fills 8 tokens in 2 passes, finishing at `diffusion_s`, and an AR side that
    types them in 8 passes, finishing at `ar_s`."""
    sources = {"left": {"name": "local-diffusion", "settings": {}}, "right": {"name": "local-ar", "settings": {}}}
    w = RecordingWriter(path, make_header("p", sources))
    words = [f"w{i} " for i in range(8)]
    w.frame("left", Frame(t=0.0, step=0, tokens=[""] * 8, masked=[True] * 8, nfe=0))
    w.frame("left", Frame(t=diffusion_s / 2, step=1, tokens=words[:4] + [""] * 4, masked=[False] * 4 + [True] * 4,
                          nfe=1, committed=[0, 1, 2, 3]))
    w.frame("left", Frame(t=diffusion_s, step=2, tokens=words, masked=[False] * 8, nfe=2, committed=[4, 5, 6, 7],
                          final=True))
    for i in range(1, 9):
        w.frame("right", Frame(t=ar_s * i / 8, step=i, tokens=words[:i], nfe=i, committed=[i - 1], final=i == 8))
    w.end("left", "done", None)
    w.end("right", "done", None)
    w.close()
    return path


@pytest.fixture
def cost(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(why, "cpu_block_cost", lambda: 5.0)


def test_the_line_says_why_when_the_side_with_fewer_passes_finishes_later(tmp_path: Path, cost: None) -> None:
    line = load_payload(race(tmp_path / "cpu.jsonl", diffusion_s=1.0, ar_s=0.5)).get("why")
    assert line and line.startswith("Why right finished first with more forward passes")
    assert "5.0x a one-token pass" in line and "on an H200 (measured elsewhere" in line and "1.09x" in line


def test_no_line_when_fewer_passes_also_finish_first(tmp_path: Path, cost: None) -> None:
    assert "why" not in load_payload(race(tmp_path / "gpu.jsonl", diffusion_s=0.3, ar_s=0.5))


def test_no_line_for_a_side_that_has_not_finished_or_equal_passes() -> None:
    done = {"t_final": 1.0, "nfe": 2}
    assert why.why_line({"left": done, "right": None}, lambda: 5.0) is None
    assert why.why_line({"left": done, "right": {"t_final": 0.5, "nfe": 2}}, lambda: 5.0) is None
    assert why.why_line({"left": done, "right": {"t_final": 0.5, "nfe": 8}}, lambda: None) is None  # no cost known
    assert why.why_line({"left": done, "right": {"t_final": 0.5, "nfe": 8}}, lambda: 5.0)


@needs_twins
def test_this_machines_block_pass_costs_more_than_a_one_token_pass() -> None:
    assert why.cpu_block_cost() > 1
