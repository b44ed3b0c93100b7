"""Replay controls, keyboard shortcuts, the help overlay, compare-by-progress and presenter mode, driven in a real
Chromium on an exported file (the same player as the page; the page's own wiring is in test_ui.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import pytest

from app.trace.frames import Frame, RecordingWriter, make_header
from tests.pages import watch_errors

pytestmark = pytest.mark.browser
ROOT = "#converge"
SHOTS = Path("/tmp")


def even_race(path: Path) -> Path:
    """Left: 5 frames, one every 0.2 s (done at 1 s). Right: 5 frames, one every 0.8 s (done at 4 s).
    On the shared timeline that is 9 distinct times (0.8 s is on both); by progress both sides sit at 20, 40, ...
    100%."""
    w = RecordingWriter(path, make_header("Compare me", {"left": {"name": "local-diffusion", "settings": {}},
                                                          "right": {"name": "local-ar", "settings": {}}}))
    words = ["one ", "two ", "three ", "four ", "five"]
    for i in range(5):
        w.frame("left", Frame(t=0.2 * (i + 1), step=i, tokens=words, masked=[j > i for j in range(5)], final=i == 4))
        w.frame("right", Frame(t=0.8 * (i + 1), step=i, tokens=words[: i + 1], final=i == 4))
    w.end("left", "done")
    w.end("right", "done")
    w.close()
    return path


@pytest.fixture
def html(tmp_path: Path) -> Path:
    from app.export.html import export_html

    return export_html(even_race(tmp_path / "race.jsonl"), tmp_path / "race.html")


def open_page(browser: Any, url: str, scheme: str = "light") -> tuple[Any, Any, list[str]]:
    context = browser.new_context(viewport={"width": 1280, "height": 900}, color_scheme=scheme)
    page = context.new_page()
    page.set_default_timeout(30_000)
    errors = watch_errors(page)
    page.goto(url)
    page.wait_for_selector(f"{ROOT}[data-status=done]")
    return context, page, errors


@pytest.fixture
def page(browser: Any, html: Path) -> Iterator[Any]:
    context, tab, errors = open_page(browser, html.as_uri())
    yield tab
    context.close()
    assert errors == [], errors


def attr(page: Any, name: str, side: str | None = None) -> str:
    sel = f"{ROOT} .cv-side[data-side={side}]" if side else ROOT
    return page.get_attribute(sel, name)


def wait_attr(page: Any, name: str, value: str) -> None:
    page.wait_for_selector(f"{ROOT}[{name}='{value}']")


def press(page: Any, key: str, name: str, value: str) -> None:
    page.keyboard.press(key)
    wait_attr(page, name, value)


def figures(page: Any) -> list[str]:
    """The large per-side figures: left elapsed, left rate, right elapsed, right rate."""
    return [page.text_content(f"{ROOT} .cv-side[data-side={s}] .cv-fig[data-fig={f}] .cv-fig-num")
            for s in ("left", "right") for f in ("elapsed", "rate")]


def steps(page: Any) -> tuple[int, int]:
    return int(attr(page, "data-step", "left")), int(attr(page, "data-step", "right"))


def test_keyboard_shortcuts_step_jump_play_and_set_speed(page: Any) -> None:
    assert attr(page, "data-step") == "0" and attr(page, "data-speed") == "1"
    press(page, "ArrowRight", "data-step", "1")
    press(page, "ArrowRight", "data-step", "2")
    press(page, "ArrowLeft", "data-step", "1")
    press(page, "End", "data-step", "8")
    assert steps(page) == (4, 4)
    press(page, "Home", "data-step", "0")
    assert steps(page) == (0, -1)  # at 0.2 s the right side has not produced a frame yet
    assert figures(page) == ["0.20 s", "5.0", "0.20 s", "0.0"]  # its clock runs all the same
    page.fill(f"{ROOT} .cv-range", "6")
    wait_attr(page, "data-step", "6")  # 2.4 s: the left side finished at 1 s, the right has 3 of 5 words
    assert figures(page) == ["1.00 s", "5.0", "2.40 s", "1.3"]  # 3 words / 2.4 s
    press(page, "2", "data-speed", "2")  # a digit is the speed it names: 1 is 1x (issue 41: 1 was 0.1x)
    press(page, "1", "data-speed", "1")
    press(page, "-", "data-speed", "0.5")
    press(page, "-", "data-speed", "0.25")
    press(page, "+", "data-speed", "0.5")
    press(page, "3", "data-speed", "3")
    press(page, "4", "data-speed", "4")
    assert page.input_value(f"{ROOT} .cv-speed") == "4"
    press(page, "Space", "data-playing", "true")
    press(page, "Space", "data-playing", "false")
    paused_at = int(attr(page, "data-step"))
    press(page, "Space", "data-playing", "true")
    wait_attr(page, "data-step", "8")
    wait_attr(page, "data-playing", "false")
    assert paused_at < 8
    page.click(f"{ROOT} button[aria-label='Jump to start']")
    wait_attr(page, "data-step", "0")
    page.click(f"{ROOT} button[aria-label='Jump to end']")
    wait_attr(page, "data-step", "8")
    page.click(f"{ROOT} button[aria-label='Previous frame']")
    wait_attr(page, "data-step", "7")
    # Space on a focused control button is that button's own click, not a second toggle
    page.focus(f"{ROOT} button[aria-label='Next frame']")
    press(page, "Space", "data-step", "8")
    assert attr(page, "data-playing") == "false"


def test_help_overlay_opens_with_question_mark_and_closes_with_escape(page: Any) -> None:
    assert not page.is_visible(f"{ROOT} .cv-help")
    press(page, "?", "data-help", "open")
    help_text = page.text_content(f"{ROOT} .cv-help")
    for word in ("Space", "Home", "End", "1  2  3  4", "1\u00D7, 2\u00D7, 3\u00D7, 4\u00D7", "presenter", "progress",
                 "Esc", "leave presenter mode"):
        assert word in help_text
    assert page.is_visible(f"{ROOT} .cv-help [role=dialog], {ROOT} .cv-help") and page.is_visible(f"{ROOT} .cv-help dl")
    press(page, "Escape", "data-help", "closed")
    assert not page.is_visible(f"{ROOT} .cv-help")
    page.click(f"{ROOT} button[aria-label='Keyboard shortcuts']")
    wait_attr(page, "data-help", "open")
    page.click(f"{ROOT} .cv-help button")
    wait_attr(page, "data-help", "closed")


def test_compare_by_progress_aligns_both_sides_and_says_it_is_not_real_time(page: Any) -> None:
    assert page.get_attribute(f"{ROOT} .cv-range", "max") == "8"
    assert not page.is_visible(f"{ROOT} .cv-progress-banner")
    press(page, "c", "data-view", "progress")
    banner = page.text_content(f"{ROOT} .cv-progress-banner")
    assert page.is_visible(f"{ROOT} .cv-progress-banner") and "NOT real time" in banner
    assert page.get_attribute(f"{ROOT} .cv-range", "max") == "4"  # 20, 40, 60, 80, 100 %
    press(page, "Home", "data-step", "0")
    for k in range(5):
        assert steps(page) == (k, k)
        assert "not real time" in page.text_content(f"{ROOT} .cv-time")
        if k < 4:
            press(page, "ArrowRight", "data-step", str(k + 1))
    page.click(f"{ROOT} .cv-view")  # the checkbox turns it off again, keeping the frames shown
    wait_attr(page, "data-view", "time")
    assert steps(page) == (4, 4) and page.get_attribute(f"{ROOT} .cv-range", "max") == "8"


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_presenter_mode_from_the_url_is_large_high_contrast_with_controls_tucked_away(
        browser: Any, html: Path, scheme: str) -> None:
    context, page, errors = open_page(browser, html.as_uri() + "?presenter=1", scheme)
    assert attr(page, "data-presenter") == "true"
    assert page.evaluate("() => document.documentElement.classList.contains('cv-presenting')")
    press(page, "End", "data-step", "8")
    style = page.evaluate(f"""() => {{
      const css = (sel, prop) => getComputedStyle(document.querySelector('{ROOT} ' + sel))[prop];
      return {{fig: parseFloat(css('.cv-fig-num', 'fontSize')), text: parseFloat(css('.cv-text', 'fontSize')),
              fg: css('.cv-text', 'color'), bg: css('.cv-side', 'backgroundColor'),
              scrub: parseFloat(css('.cv-scrub', 'opacity')), chart: css('.cv-chart-box', 'display'),
              metrics: css('.cv-metrics', 'display')}};
    }}""")
    black, white = "rgb(0, 0, 0)", "rgb(255, 255, 255)"
    assert (style["fg"], style["bg"]) == ((black, white) if scheme == "light" else (white, black))
    assert style["fig"] >= 48 and style["text"] >= 24
    assert style["scrub"] < 0.5 and style["metrics"] == "none"
    assert style["chart"] != "none" and page.is_visible(f"{ROOT} .cv-heatmap")  # the race's shape stays on screen
    assert figures(page) == ["1.00 s", "5.0", "4.00 s", "1.3"]  # 5 final tokens at 1 s; 5 at 4 s (1.25)
    page.screenshot(path=str(SHOTS / f"converge-presenter-{scheme}.png"))
    page.hover(f"{ROOT} .cv-scrub")
    page.wait_for_function(f"() => getComputedStyle(document.querySelector('{ROOT} .cv-scrub')).opacity === '1'")
    page.mouse.move(5, 5)
    press(page, "p", "data-presenter", "false")
    press(page, "p", "data-presenter", "true")
    press(page, "Escape", "data-presenter", "false")  # Escape leaves presenter mode (issue 41)
    assert not page.evaluate("() => document.documentElement.classList.contains('cv-presenting')")
    assert page.is_visible(f"{ROOT} .cv-chart-box")
    page.click(f"{ROOT} .cv-presenter-btn")
    wait_attr(page, "data-presenter", "true")
    assert page.get_attribute(f"{ROOT} .cv-presenter-btn", "aria-pressed") == "true"
    context.close()
    assert errors == [], errors
