"""What a visitor sees without scrolling: the race on the first screen of the page, and only the race in presenter
mode, at common laptop and projector sizes, in a real Chromium."""

from __future__ import annotations

from typing import Any

import pytest

from tests.pages import browser_tab, outside_viewport

pytestmark = pytest.mark.browser
ROOT = "#player .cv-player"
FIRST_SCREEN = ("#prompt", "#prompt-examples", "#left-source", "#right-source", "#run",
                f"{ROOT} .cv-side[data-side=left]", f"{ROOT} .cv-side[data-side=right]", f"{ROOT} .cv-legend")
PRESENTED = (f"{ROOT} .cv-caption-line", f"{ROOT} .cv-prompt", f"{ROOT} .cv-legend", f"{ROOT} .cv-side[data-side=left]",
             f"{ROOT} .cv-side[data-side=right]", f"{ROOT} .cv-side[data-side=left] .cv-fig-num",
             f"{ROOT} .cv-heatmap", f"{ROOT} .cv-chart-box")


@pytest.mark.parametrize("size", [(1366, 768), (1440, 900)])
def test_the_first_screen_shows_the_prompt_the_pickers_run_and_both_panels_ready_to_play(
        browser: Any, server_url: str, size: tuple[int, int]) -> None:
    width, height = size
    with browser_tab(browser, server_url, width=width, height=height) as tab:
        tab.wait_for_selector(f"{ROOT}[data-mode=replay][data-status=done]")
        assert tab.evaluate("scrollY") == 0
        assert outside_viewport(tab, FIRST_SCREEN) == {}
        assert tab.input_value("#prompt textarea").strip(), "the prompt opens filled with an example"
        assert tab.get_attribute(ROOT, "data-step") == "0" and tab.get_attribute(ROOT, "data-playing") == "false"
        tab.click("#prompt-examples button:has-text('A tiny door')")
        tab.wait_for_function("() => document.querySelector('#prompt textarea').value.startsWith('Rosa and')")


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
        for hidden in ("#controls", "#lessons", "#twins-about", "#library-area", "#sweeps", "#converge-title"):
            assert not tab.is_visible(hidden), hidden
        assert float(tab.evaluate(f"getComputedStyle(document.querySelector('{ROOT} .cv-scrub')).opacity")) < 0.5
        tab.hover(f"{ROOT} .cv-scrub")
        tab.wait_for_function(f"() => getComputedStyle(document.querySelector('{ROOT} .cv-scrub')).opacity === '1'")
