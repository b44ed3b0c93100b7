"""The sweep charts: the sweep functions on the real twins at tiny settings, their figures and notes, the bench
section that measures the page's points, and the Sweeps area in a real Chromium.

Every run here is tiny (one short prompt, lengths of 8 to 16 tokens); no test asserts on timings.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest

from app.errors import UserError
from app.measure import sweeps
from app.measure.quality import PROMPTS
from tests.fixtures import needs_twins
from tests.pages import browser_tab, serve_page

ROOT = Path(__file__).resolve().parent.parent
PROMPT = ["Once upon a time"]
TINY = {"prompts": PROMPT, "steps": {"points": [2, 4], "length": 8},
        "length": {"points": [8, 16], "steps": 4, "lookahead": 8},
        "threshold": {"points": [None, 0.5], "length": 8}}
MEASURED = {"kind", "settings", "tokens", "nfe", "tokens_per_forward", "seconds", "ppl", "distinct2", "samples"}


def row(series: str, axis: str, x: Any, seconds: float, nfe: float, ppl: float, tpf: float = 1.0,
        **settings: Any) -> dict[str, Any]:
    """A made-up row shaped like a measured one, for the figure and note tests."""
    return {"series": series, axis: x, "kind": "ar" if series == "ar" else "diffusion", "settings": settings,
            "tokens": 64.0, "nfe": nfe, "tokens_per_forward": tpf, "seconds": seconds, "ppl": ppl,
            "distinct2": 0.5, "samples": ["a b"]}


FAKE = {
    "steps": [row("diffusion", "steps", 8, 0.2, 8, 40.0, 8.0, gen_length=64),
              row("diffusion", "steps", 64, 0.9, 64, 20.0, gen_length=64), row("ar", "steps", None, 0.1, 64, 2.5)],
    "length": [row("diffusion", "length", 32, 0.3, 32, 9.0, steps=32),
               row("diffusion_lookahead", "length", 32, 0.3, 32, 9.0, steps=32, lookahead=32),
               row("ar", "length", 32, 0.05, 32, 2.0),
               row("diffusion", "length", 128, 0.75, 32, 9.0, steps=32),
               row("diffusion_lookahead", "length", 128, 0.45, 32, 9.0, steps=32, lookahead=32),
               row("ar", "length", 128, 0.2, 128, 2.0)],
    "threshold": [row("diffusion", "threshold", None, 0.9, 64, 20.0, 1.0),
                  row("diffusion", "threshold", 0.9, 0.8, 60, 20.5, 1.07),
                  row("diffusion", "threshold", 0.3, 0.5, 40, 26.0, 1.6)],
}


@needs_twins
def test_each_sweep_measures_every_point_on_the_real_twins_and_reports_progress() -> None:
    calls: list[tuple[int, int, str]] = []
    progress = lambda done, total, what: calls.append((done, total, what))  # noqa: E731
    steps = sweeps.steps_sweep([2, 4], PROMPT, progress, length=8)
    assert [(r["series"], r["steps"]) for r in steps] == [("diffusion", 2), ("diffusion", 4), ("ar", None)]
    assert [r["nfe"] for r in steps] == [2, 4, 8]  # threshold off, whole length: passes = steps; AR one per token
    assert [c[:2] for c in calls] == [(0, 3), (1, 3), (2, 3), (3, 3)] and calls[0][2] == "diffusion at 2 steps"
    length = sweeps.length_sweep([8, 16], PROMPT, steps=4, lookahead=8)
    assert [(r["series"], r["length"]) for r in length] == [
        (s, n) for n in (8, 16) for s in ("diffusion", "diffusion_lookahead", "ar")]
    assert {r["nfe"] for r in length if r["series"] != "ar"} == {4} and [r["tokens"] for r in length][-1] == 16
    threshold = sweeps.threshold_sweep([None, 0.5], PROMPT, length=8)
    assert [r["threshold"] for r in threshold] == [None, 0.5]
    assert threshold[0]["tokens_per_forward"] == 1.0 and threshold[1]["tokens_per_forward"] >= 1.0
    for r in steps + length + threshold:
        assert MEASURED <= r.keys() and r["seconds"] >= 0 and r["ppl"] > 0 and len(r["samples"]) == 1
        # the time is the median of several runs, with the fastest and slowest kept for the chart's bars
        assert r["runs"] == sweeps.REPEATS >= 3 and r["seconds_min"] <= r["seconds"] <= r["seconds_max"]


def test_the_time_charts_draw_each_points_spread_as_error_bars() -> None:
    rows = [{**r, "runs": 3, "seconds_min": r["seconds"] * 0.8, "seconds_max": r["seconds"] * 1.5}
            for r in FAKE["length"]]
    fig = sweeps.figure("length", rows)
    diffusion = next(t for t in fig.data if t.legendgroup == "diffusion")
    assert list(diffusion.error_y.array) == pytest.approx([0.15, 0.375])
    assert list(diffusion.error_y.arrayminus) == pytest.approx([0.06, 0.15])
    assert "median of 3 runs" in diffusion.hovertext[0]
    assert sweeps.note("length", rows).startswith("In medians of 3 runs")
    steps = sweeps.figure("steps", FAKE["steps"])
    assert next(t for t in steps.data if t.legendgroup == "diffusion").error_y.array is not None


def test_a_bad_point_is_refused_before_anything_runs() -> None:
    with pytest.raises(UserError, match="Steps must be between 1 and the answer length"):
        sweeps.plan("steps", [128], length=64)


@pytest.mark.parametrize("axis", sweeps.SWEEPS)
def test_the_note_quotes_numbers_computed_from_the_rows(axis: str) -> None:
    text = sweeps.note(axis, FAKE[axis])
    expected = {"steps": [f"{0.9 / 0.2:.3g}x", "went from 40 to 20", "0.1 s", "2.5"],
                "length": [f"{0.75 / 0.3:.3g}x", f"{0.45 / 0.3:.3g}x", f"{0.2 / 0.05:.3g}x", "fixed 32 forward passes",
                           "from 32 to 128"],
                "threshold": ["threshold off to threshold 0.3", "went from 1 to 1.6", "went from 20 to 26"]}[axis]
    for part in expected:
        assert part in text, (part, text)
    assert text.endswith(".") and ". " not in text  # one sentence
    assert sweeps.note(axis, FAKE[axis][:1]) == ""


def test_a_figure_that_did_not_move_is_said_to_stay() -> None:
    flat = [dict(r, ppl=21.2) for r in FAKE["threshold"]]
    assert "perplexity under the AR twin stayed at 21.2" in sweeps.note("threshold", flat)


def test_the_figures_have_their_series_colours_and_axis_titles_with_units() -> None:
    steps = sweeps.figure("steps", FAKE["steps"])
    assert [t.name for t in steps.data] == ["diffusion twin", "AR twin (KV cache), same length"] * 2
    assert steps.data[0].line.color == "#0072B2" and steps.data[1].line.color == "#E69F00"
    assert list(steps.data[0].x) == [8, 64] and list(steps.data[1].y) == [0.1, 0.1]
    assert steps.layout.xaxis.title.text == "diffusion steps for 64 tokens (log scale)"
    assert steps.layout.yaxis.title.text == "seconds per answer (s), median"
    assert steps.layout.yaxis2.title.text == "perplexity under the AR twin (log scale)"
    length = sweeps.figure("length", FAKE["length"])
    assert [t.line.color for t in length.data] == ["#0072B2", "#009E73", "#E69F00"]
    assert list(length.data[2].x) == [32, 128] and list(length.data[2].y) == [0.05, 0.2]
    assert length.layout.xaxis.title.text == "generation length (tokens)"
    assert length.layout.yaxis.title.text == "seconds per answer (s), median"
    threshold = sweeps.figure("threshold", FAKE["threshold"])
    assert list(threshold.data[0].x) == ["off", "0.9", "0.3"] and list(threshold.data[0].y) == [1.0, 1.07, 1.6]
    assert list(threshold.data[2].y) == [20.0, 20.5, 26.0]
    assert threshold.layout.yaxis.title.text == "tokens per forward pass"
    for axis in sweeps.SWEEPS:  # an empty chart while the first point runs
        assert sweeps.figure(axis, []).layout.title.text


def test_the_defaults_are_the_pages_points_and_the_environment_can_shrink_them(monkeypatch: pytest.MonkeyPatch) -> None:
    assert sweeps.defaults()["steps"] == {"points": [8, 16, 32, 64], "length": 64}
    assert sweeps.defaults()["prompts"] == list(PROMPTS)
    monkeypatch.setenv("CONVERGE_SWEEPS", json.dumps({"steps": {"points": [2]}, "prompts": PROMPT}))
    assert sweeps.defaults()["steps"] == {"points": [2], "length": 64} and sweeps.defaults()["prompts"] == PROMPT
    for axis in sweeps.SWEEPS:
        opts = sweeps.DEFAULTS[axis]
        sweeps.plan(axis, opts["points"], **{k: v for k, v in opts.items() if k != "points"})


def test_a_bad_environment_setting_is_named_and_the_page_still_builds(monkeypatch: pytest.MonkeyPatch) -> None:
    import gradio as gr

    from app.ui.sweeps_tab import sweeps_tab

    monkeypatch.setenv("CONVERGE_SWEEPS", "{steps")
    with pytest.raises(UserError, match="CONVERGE_SWEEPS is not valid JSON"):
        sweeps.defaults()
    with gr.Blocks(analytics_enabled=False) as demo:
        sweeps_tab()
    intro = next(b for b in demo.blocks.values() if getattr(b, "elem_id", None) == "sweeps-intro")
    assert "CONVERGE_SWEEPS is not valid JSON" in intro.value


@needs_twins
def test_bench_sweeps_section_measures_the_same_rows_as_the_sweep_functions() -> None:
    proc = subprocess.run([sys.executable, "-m", "app", "bench", "--json", "--only", "sweeps"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "CONVERGE_SWEEPS": json.dumps(TINY)})
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)["sweeps"]
    assert out["prompts"] == PROMPT
    for axis in sweeps.SWEEPS:
        here = sweeps.run_sweep(axis, TINY[axis], PROMPT)
        there = out[axis]["rows"]
        assert out[axis]["options"] == TINY[axis]
        assert [r.keys() for r in there] == [r.keys() for r in here]
        assert [(r["series"], r[axis], r["nfe"], r["samples"]) for r in there] == \
            [(r["series"], r[axis], r["nfe"], r["samples"]) for r in here]  # greedy: same passes and texts
        assert out[axis]["note"] == sweeps.note(axis, there) != ""


@contextlib.contextmanager
def serve_sweeps(config: dict[str, Any]) -> Iterator[str]:
    """A small page holding only the Sweeps area, with `config`'s points, served in this process."""
    import gradio as gr

    from app.ui.sweeps_tab import sweeps_tab

    with gr.Blocks(analytics_enabled=False) as demo:
        sweeps_tab(config)
    with serve_page(demo) as url:
        yield url


@pytest.fixture
def sweeps_url() -> Iterator[str]:
    """The Sweeps area with tiny points."""
    with serve_sweeps(TINY) as url:
        yield url


def press_sweep(tab: Any, axis: str, drawn: str) -> tuple[list[list[Any]], str]:
    """Presses a sweep's button on a fresh Sweeps area and waits until its note says what to notice and the chart
    meets `drawn` (a JS condition on the Plotly data `d`); returns each trace's [name, x, y] and the note."""
    note, graph = f"#sweep-{axis}-note", f"#sweep-{axis}-plot .js-plotly-plot"
    tab.wait_for_selector(f"{note} >> text=Not measured yet")
    tab.click(f"#sweep-{axis}")
    tab.wait_for_function(f"document.querySelector('{note}').textContent.includes('What to notice')")
    tab.wait_for_function(f"(d => !!d && ({drawn}))(document.querySelector('{graph}')?.data)")
    tab.wait_for_selector(f"{graph} svg.main-svg")
    traces = tab.evaluate(f"() => document.querySelector('{graph}').data.map(t => [t.name, t.x, t.y])")
    return traces, tab.inner_text(note)


@pytest.mark.browser
@needs_twins
def test_a_sweep_button_fills_its_chart_and_note_in_the_browser(browser: Any, sweeps_url: str) -> None:
    with browser_tab(browser, sweeps_url, height=1000) as tab:
        traces, text = press_sweep(tab, "steps", "d.length === 4")
        assert traces[0][:2] == ["diffusion twin", [2, 4]] and traces[1][0] == "AR twin (KV cache), same length"
        assert "from 2 to 4 steps for answers of 8 tokens" in text and "medians of 3 runs" in text
        spread = tab.evaluate("() => document.querySelector('#sweep-steps-plot .js-plotly-plot').data[0].error_y")
        assert len(spread["array"]) == 2 and min(spread["array"] + spread["arrayminus"]) >= 0  # each point's spread
        assert tab.inner_text("#sweep-length-note").startswith("Not measured yet")
