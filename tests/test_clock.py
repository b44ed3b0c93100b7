"""The forward-pass clock: the player's timeline, chart and big figures on network calls instead of seconds, in a
real Chromium on exported files of real races (the twins, and a replayed API stream that reports no passes); the
HTML export keeps the clock, and the video export runs on it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from app.cli.record import record
from app.export.html import export_html
from app.lessons.guided import MERCURY_EXAMPLE
from app.trace.reading import read_recording
from tests.fixtures import needs_twins
from tests.test_presenter import ROOT, attr, open_page, press, wait_attr

ROOT_DIR = Path(__file__).resolve().parent.parent
TWINS = {"left": {"gen_length": 32, "steps": 16, "block_length": 16}, "right": {"gen_length": 24}}


@pytest.fixture(scope="module")
def twin_race(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real race of the twins: diffusion at 16 steps for 32 tokens (two blocks) against the AR twin."""
    path = tmp_path_factory.mktemp("clock") / "twins.jsonl"
    record("Once upon a time", "local-diffusion", "local-ar", path, settings=TWINS)
    return path


def shown(page: Any) -> tuple[int, int, int]:
    """(the timeline's value at the frame shown, left frame index, right frame index)."""
    return (int(float(attr(page, "data-key"))), int(attr(page, "data-step", "left")),
            int(attr(page, "data-step", "right")))


@needs_twins
@pytest.mark.browser
def test_the_forward_pass_clock_orders_frames_by_passes_with_the_ar_twin_at_one_frame_per_pass(
        browser: Any, twin_race: Path, tmp_path: Path) -> None:
    rec = read_recording(twin_race)
    left_nfe = [f.nfe for f in rec.frames["left"]]
    right_nfe = [f.nfe for f in rec.frames["right"]]
    assert right_nfe == list(range(1, len(right_nfe) + 1))
    keys = sorted(set(left_nfe) | set(right_nfe))
    context, page, errors = open_page(browser, export_html(twin_race, tmp_path / "race.html").as_uri())
    try:
        assert attr(page, "data-view") == "time" and not page.is_visible(f"{ROOT} .cv-passes-banner")
        page.click(f"{ROOT} .cv-clock-btn")
        wait_attr(page, "data-view", "passes")
        assert page.get_attribute(f"{ROOT} .cv-clock-btn", "aria-pressed") == "true"
        assert "network calls" in page.text_content(f"{ROOT} .cv-passes-banner")
        assert page.text_content(f"{ROOT} .cv-time").startswith("pass ")
        seen = []
        for i in range(len(keys)):
            page.fill(f"{ROOT} .cv-range", str(i))
            wait_attr(page, "data-step", str(i))
            key, left, right = shown(page)
            seen.append(key)
            assert right == min(key, len(right_nfe)) - 1  # one AR frame per pass: frame k came from pass k + 1
            assert left == max(j for j, n in enumerate(left_nfe) if n <= key)  # the latest diffusion frame by then
        assert seen == keys
        figures = page.text_content(f"{ROOT} .cv-side[data-side=left] .cv-fig[data-fig=elapsed]")
        assert figures == f"{left_nfe[-1]} passesforward passes"
        assert "passes" in page.text_content(f"{ROOT} .cv-chart-note")
        press(page, "f", "data-view", "time")
        assert page.text_content(f"{ROOT} .cv-time").startswith("t = ")
        press(page, "F", "data-view", "passes")
    finally:
        context.close()
    assert errors == [], errors


@needs_twins
@pytest.mark.browser
def test_an_export_keeps_the_clock_an_api_side_keeps_its_seconds_and_each_length_names_its_unit(
        browser: Any, twin_race: Path, tmp_path: Path) -> None:
    mixed = tmp_path / "mixed.jsonl"
    record("Explain", f"replay:{MERCURY_EXAMPLE}", "local-ar", mixed, settings={"left": {"speed": 4},
                                                                                 "right": {"gen_length": 8}})
    context, page, errors = open_page(browser, export_html(mixed, tmp_path / "m.html", clock="passes").as_uri())
    try:
        assert attr(page, "data-view") == "passes"
        banner = page.text_content(f"{ROOT} .cv-passes-banner")
        assert "reports no forward passes" in banner and "its own clock, in seconds" in banner
        press(page, "End", "data-step", page.get_attribute(f"{ROOT} .cv-range", "max"))
        left = page.text_content(f"{ROOT} .cv-side[data-side=left] .cv-fig[data-fig=elapsed]")
        right = page.text_content(f"{ROOT} .cv-side[data-side=right] .cv-fig[data-fig=elapsed]")
        assert left.endswith(" selapsed (reports no forward passes)") and right == "8 passesforward passes"
        assert "Not on this axis" in page.text_content(f"{ROOT} .cv-chart-note")
        cell = f"{ROOT} tr[data-metric=answer_tokens] td[data-side={{}}]"
        assert page.text_content(cell.format("left")) == "19 completion_tokens (provider's count)"
        assert page.text_content(cell.format("right")) == "8 tokenizer pieces"
        assert page.is_visible(f"{ROOT} tr[data-metric=time_per_token]")  # the lengths differ
    finally:
        context.close()
    assert errors == [], errors


@needs_twins
def test_a_video_on_the_forward_pass_clock_lasts_its_passes_and_counts_them(twin_race: Path, tmp_path: Path) -> None:
    from app.export.video import export_video, frame_count
    from app.export.video.palette import PASS_RATE
    from app.export.video.scene import Scene
    from app.export.video.track import load

    scene = Scene(load(twin_race), (640, 360), clock="passes")
    passes = max(f.nfe for frames in read_recording(twin_race).frames.values() for f in frames)
    assert scene.end == passes and all(tr.on_passes for tr in scene.tracks)
    assert scene.tracks[1].timer(len(scene.tracks[1].frames) - 1, 60).startswith(
        f"{TWINS['right']['gen_length']} passes")
    out = export_video(twin_race, tmp_path / "race.gif", fmt="gif", fps=10, size=(640, 360), clock="passes")
    from PIL import Image

    with Image.open(out) as gif:
        assert gif.n_frames == frame_count(passes / PASS_RATE, 10, 1.0)


def test_the_export_command_takes_the_clock(tmp_path: Path) -> None:
    import subprocess
    import sys

    from app.bench.video import demo_recording

    rec = demo_recording(tmp_path / "demo.jsonl", seconds=1.0)
    out = tmp_path / "demo.html"
    proc = subprocess.run([sys.executable, "-m", "app", "export", str(rec), "--out", str(out), "--clock", "passes"],
                          capture_output=True, text=True, cwd=ROOT_DIR, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert '"clock":"passes"' in out.read_text(encoding="utf-8")
    bad = subprocess.run([sys.executable, "-m", "app", "export", str(rec), "--clock", "minutes"],
                         capture_output=True, text=True, cwd=ROOT_DIR, timeout=120)
    assert bad.returncode == 2 and "invalid choice: 'minutes'" in bad.stderr


@needs_twins
@pytest.mark.browser
def test_an_ar_side_makes_one_token_a_pass_in_the_panels_presenter_mode_the_metrics_the_video_and_stats(
        browser: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 41: the panels counted the words and symbols shown (0.94 a pass for the AR twin) where the metrics
    counted tokenizer pieces (1.00). Every place now counts the answer as the metrics do and names the unit: on a
    race whose AR answer has pieces that show nothing (line breaks), so the two counts differ."""
    from app.analysis.changes import metrics
    from app.cli.stats import main as stats
    from app.export.video.track import Track

    twin_race = tmp_path / "long.jsonl"
    record("Once upon a time", "local-diffusion", "local-ar", twin_race,
           settings={**TWINS, "right": {"gen_length": 64}})
    rec = read_recording(twin_race)
    m = metrics(rec.frames["right"])
    assert m["tokens_per_nfe"] == 1.0 and m["token_unit"] == "tokenizer pieces" and m["tokens"] != m["answer_tokens"]
    track = Track("right", rec, clock="passes")
    assert track.timer(len(track.frames) - 1, 80).endswith("1.00 tok/pass")
    assert stats([str(twin_race)]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("tokens_per_nfe"))
    assert row.split()[-1] == "1.0"  # the right side's column
    context, page, errors = open_page(browser, export_html(twin_race, tmp_path / "race.html").as_uri())
    try:
        press(page, "f", "data-view", "passes")
        page.keyboard.press("End")
        side = f"{ROOT} .cv-side[data-side=right]"
        page.wait_for_function("(s) => { const e = document.querySelector(s); "
                               "return +e.dataset.step === +e.dataset.frames - 1; }", arg=side)
        rate = f"{side} .cv-fig[data-fig=rate]"
        assert page.text_content(f"{rate} .cv-fig-num") == "1.00" and "tokenizer pieces" in page.text_content(rate)
        press(page, "p", "data-presenter", "true")  # presenter mode's large figures are the same figures
        assert page.text_content(f"{rate} .cv-fig-num") == "1.00" and "tokenizer pieces" in page.text_content(rate)
    finally:
        context.close()
    assert errors == [], errors


@needs_twins
@pytest.mark.browser
def test_a_count_of_one_reads_one_tokenizer_piece_and_one_pass(browser: Any, tmp_path: Path) -> None:
    race = tmp_path / "one.jsonl"
    record("Once upon a time", "local-ar", "local-ar", race,
           settings={"left": {"gen_length": 1, "stop_at_eos": False}, "right": {"gen_length": 2, "stop_at_eos": False}})
    context, page, errors = open_page(browser, export_html(race, tmp_path / "one.html", clock="passes").as_uri())
    try:
        press(page, "End", "data-step", page.get_attribute(f"{ROOT} .cv-range", "max"))
        fig = f"{ROOT} .cv-side[data-side={{}}] .cv-fig[data-fig=elapsed] .cv-fig-num"
        cell = f"{ROOT} tr[data-metric=answer_tokens] td[data-side={{}}]"
        assert [page.text_content(fig.format(s)) for s in ("left", "right")] == ["1 pass", "2 passes"]
        assert [page.text_content(cell.format(s)) for s in ("left", "right")] == ["1 tokenizer piece",
                                                                                  "2 tokenizer pieces"]
    finally:
        context.close()
    assert errors == [], errors

