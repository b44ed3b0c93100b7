"""Issue 41, in a real Chromium: the page's GIF follows the player's watch pace, holds its end and plays once when
asked; Stop stops a replay (a loaded run's, and the watch-pace replay after a race) and leaves the run in place; a
visitor's change of source kind drops a model name the new kind cannot take, while the page's own settings (a pair,
a lesson) keep theirs. Progress is read from the player's data-* attributes and waited on, never on time."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any, Iterator

import pytest

from app.sources.listing import TYPE_A_NAME
from app.view.pace import HOLD, PACE
from tests.fixtures import needs_twins
from tests.pages import browser_tab, pick_source
from tests.test_export_pace import gif_timing, local_race
from tests.test_ui import examples  # noqa: F401  (autouse: each test's own, empty examples folder)

ROOT = "#player .cv-player"
pytestmark = pytest.mark.browser


@pytest.fixture
def open_tab(browser: Any, server_url: str) -> Iterator[Any]:
    """Opens the page once the test has put its recordings in place; every tab must end without console errors."""
    with contextlib.ExitStack() as tabs:
        yield lambda: tabs.enter_context(browser_tab(browser, server_url, height=768, width=1366))


def wait_message(tab: Any, words: str) -> None:
    tab.wait_for_function("w => (document.querySelector('#library-status textarea').value || '').includes(w)",
                          arg=words)


def test_the_pages_gif_lasts_the_players_watch_pace_then_holds_and_plays_once(open_tab: Any, examples: Path) -> None:
    local_race(examples / "quick.jsonl")
    tab = open_tab()
    tab.wait_for_selector(f"{ROOT}[data-mode=replay][data-status=done]")
    assert tab.get_attribute(ROOT, "data-pace") == f"{PACE:g}"  # the player reads the pace the exports use
    tab.select_option(f"{ROOT} select.cv-pace", "15")  # the speaker slows the replay down
    tab.wait_for_selector(f"{ROOT}[data-pace='15']")
    tab.click("#export-box button.label-wrap")
    tab.get_by_label("Play once").check()
    tab.click("#export-gif")
    wait_message(tab, "quick.gif is ready")
    with tab.expect_download() as download:
        tab.click("#download-file a[download]")
    seconds, loop = gif_timing(Path(download.value.path()))
    assert seconds == pytest.approx(15 + HOLD, abs=0.1) and loop is None


def last_step(tab: Any) -> int:
    """The shared timeline's last index (the scrub bar's end): where a replay left alone stops."""
    return tab.eval_on_selector(f"{ROOT} input[type=range]", "r => +r.max")


def test_stop_pauses_a_replay_and_keeps_the_run_shown(open_tab: Any, examples: Path) -> None:
    local_race(examples / "quick.jsonl")
    tab = open_tab()
    tab.wait_for_selector(f"{ROOT}[data-mode=replay][data-status=done]")
    run = tab.get_attribute(ROOT, "data-run")
    tab.click(f"{ROOT} .cv-play")
    tab.wait_for_selector(f"{ROOT}[data-playing=true]")
    tab.click("#stop")
    tab.wait_for_selector(f"{ROOT}[data-playing=false]")
    assert int(tab.get_attribute(ROOT, "data-step")) < last_step(tab)  # paused part way, not played to its end
    assert tab.get_attribute(ROOT, "data-run") == run and tab.get_attribute(ROOT, "data-mode") == "replay"


@needs_twins
def test_stop_pauses_the_watch_pace_replay_after_a_race(open_tab: Any) -> None:
    tab = open_tab()
    tab.wait_for_selector(f"{ROOT}[data-status=idle], {ROOT}[data-mode=replay]")
    tab.locator("#prompt textarea").fill("Once upon a time")
    tab.click("#run")
    tab.wait_for_selector(f"{ROOT}[data-mode=live][data-playing=true]")  # the race ended: its replay began
    run = tab.get_attribute(ROOT, "data-run")
    tab.click("#stop")
    tab.wait_for_selector(f"{ROOT}[data-playing=false]")
    assert int(tab.get_attribute(ROOT, "data-step")) < last_step(tab)
    assert tab.get_attribute(ROOT, "data-run") == run and tab.get_attribute(ROOT, "data-status") == "done"


def arg(tab: Any, side: str) -> str:
    return tab.input_value(f"#{side}-arg input")


def test_a_visitors_new_kind_drops_the_old_model_name_and_a_pair_keeps_its_own(open_tab: Any) -> None:
    tab = open_tab()
    tab.wait_for_selector(f"{ROOT}[data-status=idle], {ROOT}[data-mode=replay]")
    pick_source(tab, "left", "mercury")
    tab.wait_for_function("() => document.querySelector('#left-arg input').value === 'mercury-2'")
    pick_source(tab, "left", "openai")  # lists no models here: "type a name" is its note
    assert arg(tab, "left") == ""
    tab.locator("#left-arg input").fill("gpt-4o-mini")
    pick_source(tab, "left", "hf-ar")
    tab.wait_for_function("() => document.querySelector('#left-arg input').value === ''")
    tab.click("#pairs button.label-wrap")  # the page sets both kinds and models: nothing is cleared
    tab.click("#pair-pick input")
    tab.click("#pair-pick [role=option][aria-label^='Mercury (diffusion, API)']")
    tab.click("#pair-use")
    for side in ("left", "right"):  # both listings (chained on the kinds' change) have answered
        tab.wait_for_function("([sel, words]) => (document.querySelector(sel)?.textContent || '').includes(words)",
                              arg=[f"#{side}-arg", TYPE_A_NAME])
    assert (arg(tab, "left"), arg(tab, "right")) == ("mercury-2", "gpt-4o-mini")


@needs_twins
def test_the_play_row_stays_on_screen_and_the_panels_keep_their_height_while_a_race_runs(open_tab: Any) -> None:
    """Watched on every animation frame from Run to the race's end at 1366x768: the Play row never goes below the
    window, and neither panel's text box changes height as the answers grow."""
    tab = open_tab()
    tab.wait_for_selector(f"{ROOT} .cv-play")
    tab.evaluate("""() => {
      const seen = window.__seen = {low: 0, heights: new Set(), frames: 0};
      const watch = () => {
        const root = document.querySelector('#player .cv-player');
        const play = root && root.querySelector('.cv-play');
        if (play) {
          seen.low = Math.max(seen.low, play.getBoundingClientRect().bottom + scrollY);
          const texts = root.querySelectorAll('.cv-text');
          texts.forEach(t => seen.heights.add(Math.round(t.getBoundingClientRect().height)));
          seen.frames += root.dataset.mode === 'live';
        }
        if (!(root && root.dataset.mode === 'live' && root.dataset.status === 'done')) requestAnimationFrame(watch);
      };
      requestAnimationFrame(watch);
    }""")
    tab.click("#run")
    tab.wait_for_selector(f"{ROOT}[data-mode=live][data-status=done]", timeout=120_000)
    low, heights, frames = tab.evaluate("() => [__seen.low, [...__seen.heights], __seen.frames]")
    assert frames > 1 and low <= tab.evaluate("innerHeight"), (low, frames, heights)
    assert len(heights) == 1, heights
