"""While a race's sources load (a model's weights, which can take minutes), the page says so about once a second."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from app.sources.base import REGISTRY, SourceKind, make_source
from app.ui.loading import while_loading
from tests.pages import browser_tab, pick_source, serve_page

ROOT = "#player .cv-player"


def test_a_slow_load_is_reported_until_it_returns_its_result() -> None:
    release = threading.Event()
    loading = while_loading(lambda: release.wait(60) and "model", "the model")
    notes = [next(loading), next(loading)]
    release.set()
    with pytest.raises(StopIteration) as built:
        next(loading)
    assert built.value.value == "model"
    assert all(n.startswith("Loading the model... ") and n.endswith(" s") for n in notes)


def test_a_quick_load_says_nothing_and_a_failed_one_raises_its_error() -> None:
    with pytest.raises(StopIteration) as built:
        next(while_loading(lambda: 42, "x"))
    assert built.value.value == 42

    def fail() -> None:
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        next(while_loading(fail, "x"))


def test_a_load_the_visitor_stopped_waiting_for_is_handed_to_abandon() -> None:
    release, abandoned = threading.Event(), threading.Event()
    got: list[Any] = []
    loading = while_loading(lambda: release.wait(60) and "model", "x",
                            abandon=lambda v: (got.append(v), abandoned.set()))
    next(loading)
    loading.close()
    release.set()
    assert abandoned.wait(30) and got == ["model"]


@pytest.mark.browser
def test_the_page_says_which_sources_are_loading_and_then_races(browser: Any, recordings: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    release = threading.Event()

    def slow(**settings: Any) -> Any:
        release.wait(120)
        return make_source("local-ar", **settings)

    monkeypatch.setitem(REGISTRY, "slow-load", SourceKind(prefix="slow-load", make=slow, label="A slow loader"))
    with serve_page() as url, browser_tab(browser, url) as tab:
        # empty, or the first example loaded
        tab.wait_for_selector(f"{ROOT}[data-status='idle'], {ROOT}[data-mode='replay']")
        pick_source(tab, "left", "slow-load")
        tab.locator("#prompt textarea").fill("Once upon a time")
        tab.click("#run")
        tab.wait_for_function(f"""() => /^Loading slow-load and local-ar\\.\\.\\. \\d+ s$/.test(
            document.querySelector('{ROOT} .cv-status').textContent)""")
        release.set()
        tab.wait_for_function(f"document.querySelector('{ROOT}').dataset.status === 'done'")
        assert len(list(recordings.glob("*.jsonl"))) == 1
