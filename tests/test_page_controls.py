"""Issue 50 item 9, the page's smaller layout and keyboard faults, each seen in a real Chromium: the open pins leave the
player's status line in view; Cancel export shows only while an export runs, as a secondary control; every control
Tab reaches shows a focus outline, and Tab out of a Gradio dropdown closes it and goes on to the next control."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.pages import browser_tab
from tests.test_security_bounds import long_gap
from tests.test_ui import wait_message

pytestmark = pytest.mark.browser
ROOT = "#player .cv-player"


def box(tab: Any, sel: str) -> list[float]:
    return tab.evaluate("s => { const r = document.querySelector(s).getBoundingClientRect();"
                        " return [r.left, r.top, r.right, r.bottom]; }", sel)


def test_the_open_pins_leave_the_players_status_line_in_view(browser: Any, server_url: str) -> None:
    """The player's status line says why pins were refused: the open pins push the player down instead of covering
    it."""
    with browser_tab(browser, server_url, width=1366, height=768) as tab:
        tab.wait_for_selector(f"{ROOT}[data-mode=replay][data-status=done]")
        tab.click("#pins-box button.label-wrap")
        tab.wait_for_selector("#pins textarea", state="visible")
        pins, status = box(tab, "#pins-box"), box(tab, f"{ROOT} .cv-status")
        assert status[1] >= pins[3], (pins, status)  # the status line starts below the open pins
        assert 0 <= status[1] and status[3] <= 768, status  # and is still in the window
        on_top = tab.evaluate(f"""() => {{
          const r = document.querySelector('{ROOT} .cv-status').getBoundingClientRect();
          const hit = document.elementFromPoint(r.left + 20, (r.top + r.bottom) / 2);
          return !!hit && !!hit.closest('{ROOT} .cv-status'); }}""")
        assert on_top, "something covers the player's status line"


@pytest.fixture
def long_example(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The page opens with a recording whose GIF or MP4 takes long enough to cancel (290 s of race)."""
    folder = tmp_path / "examples"
    folder.mkdir()
    monkeypatch.setenv("CONVERGE_EXAMPLES", str(folder))
    return long_gap(folder / "long.jsonl", 290.0)


def test_cancel_export_shows_only_while_an_export_runs_as_a_secondary_control(
        browser: Any, server_url: str, long_example: Path) -> None:
    from app.ui.export_job import wait_idle

    with browser_tab(browser, server_url, width=1366, height=768) as tab:
        tab.wait_for_selector(f"{ROOT}[data-mode=replay][data-status=done]")
        tab.click("#export-box button.label-wrap")
        tab.wait_for_selector("#export-mp4", state="visible")
        assert not tab.is_visible("#export-cancel"), "Cancel export shows while nothing is exporting"
        tab.click("#export-mp4")
        wait_message(tab, "Cancel export stops it")
        assert tab.is_visible("#export-cancel")
        classes = tab.get_attribute("#export-cancel", "class").split()
        assert "secondary" in classes and "stop" not in classes and "sm" in classes, classes
        assert box(tab, "#export-cancel")[3] - box(tab, "#export-cancel")[1] \
            < box(tab, "#export-mp4")[3] - box(tab, "#export-mp4")[1]  # smaller than the buttons that export
        tab.click("#export-cancel")
        wait_message(tab, "Any export in progress was cancelled")
        tab.wait_for_selector("#export-cancel", state="hidden")
        assert wait_idle(30), "the export kept running after Cancel export"
        tab.click("#export-html")  # an export that ends by itself takes Cancel export away too
        wait_message(tab, "long.html is ready")
        tab.wait_for_selector("#export-cancel", state="hidden")


FOCUSED = """() => { const e = document.activeElement, s = getComputedStyle(e);
  return {tag: e.tagName, id: e.closest('[id]')?.id || '', combo: e.getAttribute('role') === 'combobox',
          footer: !!e.closest('footer'), outline: s.outlineStyle, width: parseFloat(s.outlineWidth),
          text: (e.getAttribute('aria-label') || e.textContent || '').trim().slice(0, 40)}; }"""
ANY_OPEN = "() => !!document.querySelector('input[role=combobox][aria-expanded=true]')"


def test_every_control_tab_reaches_shows_an_outline_and_tab_goes_on_out_of_each_dropdown(
        browser: Any, server_url: str, recordings: Path) -> None:
    """Tab from the prompt to the page's footer: focus never falls to the page body, each control it reaches shows
    an outline of at least 2 px, and a dropdown left by Tab is closed (the lessons' and a long library's lists scroll,
    which made them stops of their own)."""
    for i in range(14):  # enough recordings that the library's list scrolls
        long_gap(recordings / f"run-{i:02d}.jsonl", 1.0)
    with browser_tab(browser, server_url, width=1366, height=768) as tab:
        tab.wait_for_selector(f"{ROOT}[data-mode=replay][data-status=done]")
        tab.wait_for_function("() => document.querySelector('#library-table').textContent.includes('run-13')")
        tab.focus("#prompt textarea")
        seen = [tab.evaluate(FOCUSED)]
        while not seen[-1]["footer"] and len(seen) < 120:
            tab.keyboard.press("Tab")
            if seen[-1]["combo"]:
                tab.wait_for_function(f"!({ANY_OPEN})()", timeout=10_000)  # the dropdown just left has closed
            seen.append(tab.evaluate(FOCUSED))
            assert seen[-1]["tag"] != "BODY", f"focus fell to the page body after {seen[-2]}"
        assert seen[-1]["footer"], seen[-1]
        bare = [f for f in seen if f["outline"] in ("none", "hidden") or f["width"] < 2]
        assert bare == [], bare
        order = [f["id"] for f in seen]
        for picker, after in (("lesson-pick", "lesson-prev"), ("library-pick", "library-load"),
                              ("left-source", "left-settings")):
            assert order[order.index(picker) + 1] == after, (picker, order)
        long_lists = tab.evaluate("""async () => {
          const out = [];
          for (const s of ['#lesson-pick', '#library-pick']) {
            const box = document.querySelector(s + ' input');
            box.focus();
            await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
            const list = document.getElementById(box.getAttribute('aria-controls'));
            out.push(!!list && list.scrollHeight > list.clientHeight);
          }
          return out; }""")
        assert long_lists == [True, True], "the lists the fix is for no longer scroll: the test would not see it"
