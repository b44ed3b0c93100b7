"""What a visitor sees without scrolling: the race on the first screen of the page, and only the race in presenter
mode, at common laptop and projector sizes, in a real Chromium. A real 1366x768 or 1280x720 window leaves the page a
viewport about 650 px tall, so the first screen is measured there (issue 50 item 7)."""

from __future__ import annotations

from typing import Any, Iterator

import pytest

from tests.pages import browser_tab, outside_viewport, serve_page

pytestmark = pytest.mark.browser
ROOT = "#player .cv-player"
FIRST_SCREEN = ("#prompt", "#prompt-examples", "#left-source", "#right-source", "#run",
                f"{ROOT} .cv-side[data-side=left]", f"{ROOT} .cv-side[data-side=right]", f"{ROOT} .cv-legend",
                f"{ROOT} .cv-play", f"{ROOT} .cv-range")  # the Play row under the panels, with its scrub bar
PRESENTED = (f"{ROOT} .cv-caption-line", f"{ROOT} .cv-prompt", f"{ROOT} .cv-legend", f"{ROOT} .cv-side[data-side=left]",
             f"{ROOT} .cv-side[data-side=right]", f"{ROOT} .cv-side[data-side=left] .cv-fig-num",
             f"{ROOT} .cv-heatmap", f"{ROOT} .cv-chart-box")


@pytest.fixture(scope="module")
def run_on_url() -> Iterator[str]:
    """The page as `python -m app` launches it by default, with the site's folder: "Run on: this server / your
    browser" stands in the Run column (app/ui/browser_race.py), which the suite's plain page leaves out."""
    from app.ui.layout import build

    with serve_page(build(browser=True)) as url:
        yield url


def first_screen_shown(tab: Any, shown: tuple[str, ...]) -> None:
    """Asserts the page opened at its top with `shown` wholly in the window and the first example ready to play."""
    tab.wait_for_selector(f"{ROOT}[data-mode=replay][data-status=done]")
    assert tab.evaluate("scrollY") == 0
    assert outside_viewport(tab, shown) == {}
    assert tab.input_value("#prompt textarea").strip(), "the prompt opens filled with an example"
    assert tab.get_attribute(ROOT, "data-step") == "0" and tab.get_attribute(ROOT, "data-playing") == "false"


@pytest.mark.parametrize("size", [(1366, 650), (1280, 650), (1366, 768), (1440, 900)])
def test_the_first_screen_shows_the_prompt_the_pickers_run_both_panels_and_the_play_row(
        browser: Any, server_url: str, size: tuple[int, int]) -> None:
    width, height = size
    with browser_tab(browser, server_url, width=width, height=height) as tab:
        first_screen_shown(tab, FIRST_SCREEN)
        tab.click("#prompt-examples button:has-text('A tiny door')")
        tab.wait_for_function("() => document.querySelector('#prompt textarea').value.startsWith('Rosa and')")


@pytest.mark.parametrize("size", [(1366, 650), (1280, 650)])
def test_the_first_screen_keeps_the_play_row_with_run_on_in_the_run_column(
        browser: Any, run_on_url: str, size: tuple[int, int]) -> None:
    """The Run column with "Run on" is no taller than the prompt's, so no band opens above the player."""
    width, height = size
    with browser_tab(browser, run_on_url, width=width, height=height) as tab:
        first_screen_shown(tab, (*FIRST_SCREEN, "#run-on"))
        gap = tab.evaluate("""() => document.querySelector('#player').getBoundingClientRect().top - Math.max(
          ...[...document.querySelectorAll('#controls > .column:not(#run-stop)')]
            .map(c => c.getBoundingClientRect().bottom))""")
        assert 0 <= gap <= 16, gap  # the player right under the prompt and the pickers, whatever the Run column holds


def test_the_legend_never_covers_the_panel_headers_when_the_page_scrolls(browser: Any, server_url: str) -> None:
    with browser_tab(browser, server_url, width=1366, height=768) as tab:
        tab.wait_for_selector(f"{ROOT}[data-mode=replay][data-status=done]")
        for y in (300, 500, 700):
            tab.evaluate("y => window.scrollTo(0, y)", y)
            overlap = tab.evaluate(f"""() => {{
              const legend = document.querySelector('{ROOT} .cv-legend').getBoundingClientRect();
              const head = document.querySelector('{ROOT} .cv-side[data-side=left] .cv-side-head').getBoundingClientRect();
              return legend.bottom > head.top && legend.top < head.bottom;
            }}""")  # noqa: E501
            assert not overlap, y


@pytest.mark.parametrize("size", [(1920, 1080), (1280, 720)])
def test_presenter_mode_fits_the_race_on_one_screen_with_nothing_else(
        browser: Any, server_url: str, size: tuple[int, int]) -> None:
    width, height = size
    with browser_tab(browser, server_url + "?presenter=1", width=width, height=height) as tab:
        tab.wait_for_selector(f"{ROOT}[data-mode=replay][data-presenter=true]")
        tab.keyboard.press("End")
        tab.wait_for_selector(f"{ROOT}[data-status=done][data-playing=false]")
        assert outside_viewport(tab, PRESENTED) == {}
        # the tucked controls cover none of it
        assert tab.evaluate(f"""() => document.querySelector('{ROOT} .cv-chart-box').getBoundingClientRect().bottom
          <= document.querySelector('{ROOT} .cv-scrub').getBoundingClientRect().top""")
        for hidden in ("#controls", "#lessons", "#twins-about", "#library-area", "#sweeps", "#board",
                       "#converge-title"):
            assert not tab.is_visible(hidden), hidden
        assert float(tab.evaluate(f"getComputedStyle(document.querySelector('{ROOT} .cv-scrub')).opacity")) < 0.5
        tab.hover(f"{ROOT} .cv-scrub")
        tab.wait_for_function(f"() => getComputedStyle(document.querySelector('{ROOT} .cv-scrub')).opacity === '1'")


@pytest.mark.parametrize("size", [(1280, 720), (1024, 768), (1920, 1080)])
def test_presenter_mode_shows_the_heatmaps_axis_labels_whole(browser: Any, server_url: str,
                                                             size: tuple[int, int]) -> None:
    """Under each heatmap, "position in the answer → · N frames a row" is never cut (its frames' column gives up
    the room its labels do not need)."""
    width, height = size
    with browser_tab(browser, server_url + "?presenter=1", width=width, height=height) as tab:
        tab.wait_for_selector(f"{ROOT}[data-mode=replay][data-presenter=true]")
        tab.keyboard.press("End")
        tab.wait_for_selector(f"{ROOT}[data-status=done][data-playing=false]")
        names = tab.evaluate(f"""() => [...document.querySelectorAll('{ROOT} .cv-heat-axis-name')].map(e =>
          [e.textContent, e.scrollWidth <= e.clientWidth && e.getBoundingClientRect().width > 0])""")
        assert len(names) == 4 and all(text for text, _ in names), names  # each side's frames and positions
        assert [text for text, whole in names if not whole] == [], size
        if size == (1280, 720):
            assert any("frames a row" in text for text, _ in names), names  # the long label, where it was cut


@pytest.mark.parametrize("size", [(1024, 768), (1280, 650), (1366, 650)])
def test_the_pickers_show_each_source_name_whole_and_run_on_stays_in_its_card(
        browser: Any, run_on_url: str, size: tuple[int, int]) -> None:
    """A picker's label may end in an ellipsis, never under its arrow, and the source's name, which comes first, is
    whole for every kind it offers; "your browser" stays inside the "Run on" card."""
    from app.sources.base import REGISTRY

    width, height = size
    with browser_tab(browser, run_on_url, width=width, height=height) as tab:
        tab.wait_for_selector(f"{ROOT}[data-mode=replay][data-status=done]")
        for side in ("left", "right"):
            fit = tab.evaluate("""([sel, names]) => {
              const box = document.querySelector(sel + ' input'), s = getComputedStyle(box);
              const r = box.getBoundingClientRect(), arrow = box.parentElement.querySelector('.icon-wrap');
              const room = box.clientWidth - parseFloat(s.paddingLeft) - parseFloat(s.paddingRight);
              const pen = document.createElement('canvas').getContext('2d');
              pen.font = s.font;
              return {room, arrow: !arrow || arrow.getBoundingClientRect().left >= r.right - parseFloat(s.paddingRight),
                      ellipsis: s.textOverflow === 'ellipsis', shown: box.value,
                      names: names.filter(n => pen.measureText(n).width > room)};
            }""", [f"#{side}-source", list(REGISTRY)])
            assert fit["shown"].split(" \u2014 ")[0] in REGISTRY, fit  # the label starts with the source's name
            assert fit["arrow"] and fit["ellipsis"], fit
            assert fit["names"] == [], fit  # names cut at this width
        card = box(tab, "#run-on")
        for label in tab.evaluate("""() => [...document.querySelectorAll('#run-on label')].map(l => {
              const r = l.getBoundingClientRect(); return [l.textContent.trim(), r.left, r.right]; })"""):
            assert card[0] <= label[1] and label[2] <= card[2], (label, card)


def box(tab: Any, sel: str) -> list[float]:
    return tab.evaluate("s => { const r = document.querySelector(s).getBoundingClientRect();"
                        " return [r.left, r.top, r.right, r.bottom]; }", sel)
