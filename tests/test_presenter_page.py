"""Presenter mode on the page, in Chromium (issue 41): the recording picker shows each recording's prompt, sources and
date, newest first, filterable by typing; and every state fits the screen at four sizes on both clocks, with nothing
overflowing or overlapping and no scroll."""

from __future__ import annotations

from typing import Any

import pytest

from tests.pages import browser_tab

pytestmark = pytest.mark.browser
ROOT = "#player .cv-player"
SIZES = [(1280, 720), (1366, 768), (1920, 1080), (1024, 768)]
# the parts of presenter mode that must each be wholly on screen and never overlap one another
PARTS = (".cv-top", ".cv-legend", ".cv-sides", ".cv-chart-box", ".cv-scrub")


def presenting(tab: Any) -> None:
    """Waits for the page in presenter mode with its first example loaded."""
    tab.wait_for_selector(f"{ROOT}[data-status='done'][data-presenter='true']")


def layout(tab: Any) -> dict[str, Any]:
    """Each part's box (visible ones), the page's scroll extent and the viewport."""
    return tab.evaluate("""([root, parts]) => {
      const boxes = {};
      for (const p of parts) {
        const e = document.querySelector(root + ' ' + p);
        if (!e || e.hidden || getComputedStyle(e).display === 'none') continue;
        const r = e.getBoundingClientRect();
        if (r.height > 0) boxes[p] = [r.left, r.top, r.right, r.bottom];
      }
      const doc = document.scrollingElement;
      const scroll = [doc.scrollWidth - innerWidth, doc.scrollHeight - innerHeight];
      return {boxes, scroll, size: [innerWidth, innerHeight]};
    }""", [ROOT, list(PARTS)])


def problems(found: dict[str, Any]) -> list[str]:
    """What does not fit: a scroll, a part out of the viewport, two parts overlapping."""
    w, h = found["size"]
    out = [f"scrolls by {found['scroll']}"] if max(found["scroll"]) > 0 else []
    boxes = found["boxes"]
    out += [f"{p} outside {b}" for p, b in boxes.items() if b[0] < 0 or b[1] < 0 or b[2] > w + 0.5 or b[3] > h + 0.5]
    names = list(boxes)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            x, y = boxes[a], boxes[b]
            if min(x[2], y[2]) - max(x[0], y[0]) > 1 and min(x[3], y[3]) - max(x[1], y[1]) > 1:
                out.append(f"{a} {x} overlaps {b} {y}")
    return out


@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
def test_every_presenter_state_fits_on_both_clocks(browser: Any, server_url: str, size: tuple[int, int]) -> None:
    width, height = size
    with browser_tab(browser, server_url + "?presenter=1", width=width, height=height) as tab:
        presenting(tab)
        for clock in ("time", "passes"):
            if clock == "passes":
                tab.keyboard.press("f")
                tab.wait_for_selector(f"{ROOT}[data-view='passes']")
            for key, step in (("Home", "0"), ("End", tab.get_attribute(f"{ROOT} .cv-range", "max"))):
                tab.keyboard.press(key)
                tab.wait_for_selector(f"{ROOT}[data-step='{step}']")
                assert problems(layout(tab)) == [], (size, clock, key)
            tab.keyboard.press("o")
            tab.wait_for_selector(f"{ROOT}[data-picker='open']")
            card = tab.locator(f"{ROOT} .cv-picker-card").bounding_box()
            box = [card["x"], card["y"], card["x"] + card["width"], card["y"] + card["height"]]
            assert problems({**layout(tab), "boxes": {"picker": box}}) == [], (size, clock, "picker")
            tab.keyboard.press("Escape")
            tab.wait_for_selector(f"{ROOT}[data-picker='closed']")


def test_the_picker_lists_prompt_sources_and_date_newest_first_and_filters_by_typing(
        browser: Any, server_url: str) -> None:
    with browser_tab(browser, server_url + "?presenter=1", width=1280, height=720) as tab:
        presenting(tab)
        tab.keyboard.press("o")
        tab.wait_for_selector(f"{ROOT}[data-picker='open'] .cv-picker-item")
        items = tab.evaluate(f"""() => [...document.querySelectorAll('{ROOT} .cv-picker-item')].map((e) => [
          e.dataset.id, e.querySelector('.cv-picker-name').textContent,
          e.querySelector('.cv-picker-prompt-line').textContent, e.querySelector('.cv-picker-about').textContent])""")
        assert len(items) >= 3
        for entry_id, name, prompt, about in items:
            assert prompt and prompt != entry_id.split("/", 1)[1], entry_id  # the prompt or caption, not the file name
            assert "local-" in name or "mercury" in name or "openai" in name or "Lesson" in name, name
            date, kind = about.split(" \u00b7 ")
            assert date[:2] == "20" and date.endswith("UTC") and kind in ("example", "yours"), about
        dates = [about.split(" \u00b7 ")[0] for _, _, _, about in items]
        assert dates == sorted(dates, reverse=True)  # newest first
        tab.fill(f"{ROOT} .cv-picker-filter", "mercury")
        shown = tab.evaluate(f"""() => [...document.querySelectorAll('{ROOT} .cv-picker-item')]
          .filter((e) => !e.hidden).map((e) => e.dataset.id)""")
        assert shown and all("mercury" in i for i in shown) and len(shown) < len(items)
        tab.fill(f"{ROOT} .cv-picker-filter", "no such recording anywhere")
        tab.wait_for_selector(f"{ROOT} .cv-picker-none:not([hidden])")
