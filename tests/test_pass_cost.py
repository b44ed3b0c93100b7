"""The pass-cost sweep: one forward pass timed against the positions it recomputes, on the twin as its sampler runs a
block step and on a Hugging Face model; its note, its chart, the bench section and the page's button in Chromium.

No test asserts on a timing: they check what is timed (the network's calls and their sizes) and that every number
in the note comes from the points."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest

from app.errors import UserError
from app.measure import pass_cost
from app.sources.base import make_source
from tests.fixtures import needs_twins
from tests.pages import browser_tab

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def twin_model() -> Any:
    from app.sources.local import twin

    return twin("diffusion")[0]


@needs_twins
@pytest.mark.parametrize("n", [1, 32, 256])
def test_a_twin_pass_is_one_call_of_the_network_over_the_positions_it_recomputes(twin_model: Any, n: int) -> None:
    run = pass_cost.twin_pass(twin_model, n)
    calls: list[int] = []
    hidden = twin_model.net.hidden

    def counting(ids, *args, **kwargs):
        calls.append(len(ids))
        return hidden(ids, *args, **kwargs)

    twin_model.net.hidden = counting
    try:
        logits = run()
    finally:
        del twin_model.net.hidden
    assert calls == [n + 1]  # the block, and the last prefix token whose output scores its first position
    assert logits.shape == (n, twin_model.vocab_size)


@needs_twins
def test_the_twin_sweep_measures_every_point_it_can_take(twin_model: Any) -> None:
    assert pass_cost.twin_points(twin_model) == list(pass_cost.POINTS)
    assert pass_cost.twin_points(twin_model, [1, 400]) == [1]
    seen = list(pass_cost.iter_rounds(lambda n: pass_cost.twin_pass(twin_model, n), [1, 8], repeats=3))
    assert [done for _, done in seen] == [0, 1, 2, 3] and [len(rows) for rows, _ in seen] == [0, 2, 2, 2]
    assert seen[1][0][0]["ms"] == seen[1][0][0]["ms_worst"]  # one round: one sample per point
    rows = seen[-1][0]
    assert [r["positions"] for r in rows] == [1, 8] and all(0 < r["ms"] <= r["ms_worst"] for r in rows)
    with pytest.raises(ValueError, match="the twin can recompute 1 to"):
        pass_cost.twin_pass(twin_model, 400)


def test_the_note_quotes_ratios_computed_from_the_points() -> None:
    rows = [{"positions": 1, "ms": 2.0, "ms_worst": 2.5}, {"positions": 32, "ms": 11.2, "ms_worst": 12.0},
            {"positions": 256, "ms": 80.0, "ms_worst": 90.0}]
    assert pass_cost.note(rows, "twin") == (
        "On this machine, for the twin, a 32-token pass costs 5.6x a 1-token pass (11.20 ms against 2.00 ms), "
        "and a 256-token pass 40.0x: 32 tokens in one pass save 82% of 32 one-token passes.")
    assert pass_cost.note(rows[:1]) == "" and pass_cost.note(rows[1:]) == ""
    fig = pass_cost.figure({"twin": rows, "gpu": rows[:2]}, ["#0072B2", "#D55E00"])
    assert [t.name for t in fig.data] == ["twin", "gpu"] and list(fig.data[0].x) == [1, 32, 256]
    assert [t.line.color for t in fig.data] == ["#0072B2", "#D55E00"] and fig.data[1].line.dash == "dash"
    assert fig.layout.xaxis.title.text.startswith("positions recomputed") and fig.layout.yaxis.type == "log"


def test_a_hugging_face_model_is_timed_on_its_device_over_the_positions_asked(tmp_path: Path) -> None:
    pytest.importorskip("transformers", reason="transformers is not installed")
    from tests.test_hf import build_tiny_models

    path = build_tiny_models(tmp_path)["gpt2"]
    net, vocab, max_len, device, label = pass_cost.load_hf(f"hf-ar:{path}", "cpu", make_source)
    assert (max_len, device) == (96, "cpu") and label == f"{path} (cpu, float32)"
    assert pass_cost.hf_points(max_len) == [1, 2, 4, 8, 16, 32, 64]
    shapes: list[tuple[int, ...]] = []
    handle = net.register_forward_hook(
        lambda module, args, kwargs, out: shapes.append(tuple(kwargs["input_ids"].shape)), with_kwargs=True)
    try:
        out = pass_cost.hf_pass(net, 16, vocab, device)()
    finally:
        handle.remove()
    assert shapes == [(1, 16)] and tuple(out.shape) == (1, 16, vocab)
    with pytest.raises(UserError, match="Name a Hugging Face source"):
        pass_cost.load_hf("gpt2", "cpu", make_source)


@needs_twins
def test_the_bench_sweeps_section_reports_the_pass_cost_points_and_their_note(tmp_path: Path) -> None:
    pytest.importorskip("transformers", reason="transformers is not installed")
    from tests.test_hf import build_tiny_models

    path = build_tiny_models(tmp_path)["gpt2"]
    tiny = {"prompts": ["Once upon a time"], "steps": {"points": [2], "length": 8},
            "length": {"points": [8], "steps": 4, "lookahead": 0}, "threshold": {"points": [None], "length": 8},
            "pass_cost": {"points": [1, 4, 32], "hf": f"hf-ar:{path}", "device": "cpu"}}
    proc = subprocess.run([sys.executable, "-m", "app", "bench", "--json", "--only", "sweeps"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "CONVERGE_SWEEPS": json.dumps(tiny)})
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)["sweeps"]["pass_cost"]
    for part, label in (("twin", pass_cost.TWIN), ("hf", f"{path} (cpu, float32)")):
        rows = out[part]["rows"]
        assert [r["positions"] for r in rows] == [1, 4, 32] and out[part]["label"] == label
        assert out[part]["note"] == pass_cost.note(rows, label) != ""


@pytest.fixture
def sweeps_url() -> Iterator[str]:
    """The Sweeps area, timing passes of 1, 4 and 16 positions."""
    from tests.test_sweeps import serve_sweeps

    with serve_sweeps({"pass_cost": {"points": [1, 4, 16]}}) as url:
        yield url


@pytest.mark.browser
@needs_twins
def test_the_pass_cost_button_fills_its_chart_and_a_sentence_from_the_points(browser: Any, sweeps_url: str) -> None:
    from tests.test_sweeps import press_sweep

    with browser_tab(browser, sweeps_url, height=1000) as tab:
        traces, text = press_sweep(tab, "pass-cost", "d[0]?.x?.length === 3")
        assert [t[:2] for t in traces] == [[pass_cost.TWIN, [1, 4, 16]]]
        ms = dict(zip(traces[0][1], traces[0][2]))
        assert f"a 16-token pass costs {ms[16] / ms[1]:.1f}x a 1-token pass" in text
        tab.fill("#sweep-pass-cost-hf textarea, #sweep-pass-cost-hf input", "gpt2")
        tab.click("#sweep-pass-cost")
        note = "#sweep-pass-cost-note"
        tab.wait_for_function(f"document.querySelector('{note}').textContent.includes('could not run')")
        assert "Name a Hugging Face source such as hf-ar:MODEL" in tab.inner_text(note)
