"""The page's Board area (issue 54, item 3): both twins over held-out openings, the table and the curve filling in as
races end, and a what-to-notice line whose every number the test recomputes from the table on screen; its handler
runs under its own declared budget and saves nothing."""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any, Iterator

import pytest

from app.board.prompts import prompt_set
from app.trace.reading import read_recording
from tests.fixtures import needs_twins
from tests.pages import browser_tab, serve_page


def test_the_boards_budget_names_the_openings_the_page_races() -> None:
    from app.ui.board_tab import PROMPTS
    from app.ui.budgets import HANDLERS
    from app.ui.budgets import HANDLERS as GROUPS

    assert f"over {PROMPTS} held-out openings" in GROUPS["board"].cost and GROUPS["board"].heavy
    assert GROUPS["board"].disk_per_hour == HANDLERS["race"].disk_per_hour  # saved as a race is
    page = (Path(__file__).resolve().parent.parent / "docs" / "page.md").read_text(encoding="utf-8")
    assert f"over {PROMPTS} story openings they never trained on" in page


def expected_note(rows: list[dict[str, Any]]) -> list[str]:
    """The figures the note must quote, recomputed from the shown rows (side, passes, answer tokens, perplexity)."""
    figures = []
    for side in ("diffusion twin", "AR twin"):
        mine = [r for r in rows if r["side"] == side]
        rate = sum(float(r["answer tokens"]) for r in mine) / sum(float(r["passes"]) for r in mine)
        ppl = [float(r["referee perplexity"]) for r in mine]
        figures += [f"{rate:.2f}", f"{statistics.median(ppl):.2f}", f"{max(ppl):.2f}"]
    by_opening: dict[str, dict[str, float]] = {}
    for r in rows:
        by_opening.setdefault(str(r["opening"]), {})[r["side"]] = float(r["referee perplexity"])
    worse = [k for k, v in by_opening.items() if v["diffusion twin"] > v["AR twin"]]
    better = [k for k in by_opening if k not in worse]
    figures.append(f"cost quality on {len(worse)} of {len(by_opening)} openings")
    figures.append(f"did not on {len(better)} ({named(better)})")
    figures.append(f"perplexity above the AR twin's: {named(worse)})")
    return figures


def named(openings: list[str]) -> str:
    """The openings as the note names them: "none", "2", "1 and 2", "1, 2 and 4"."""
    if not openings:
        return "none"
    return openings[0] if len(openings) == 1 else ", ".join(openings[:-1]) + " and " + openings[-1]


@needs_twins
def test_the_handler_fills_a_row_per_opening_and_side_and_its_note_quotes_them(recordings: Path) -> None:
    from app.ui.board_tab import run_handler
    from app.ui.visitor import Visitor

    updates = list(run_handler(prompts=2)(Visitor()))
    assert updates[0][2] == "Racing opening 1 of 2..." and updates[1][2] == "Racing opening 2 of 2..."
    figure, table, note, names = updates[-1]
    rows = table.to_dict("records")
    assert [r["race"] for r in rows] == names and names[0] == names[1] != names[2] == names[3]  # a race a pair
    assert all((recordings / name).is_file() for name in names)
    assert [(r["opening"], r["side"]) for r in rows] == [(1, "diffusion twin"), (1, "AR twin"), (2, "diffusion twin"),
                                                         (2, "AR twin")]
    for figure_text in expected_note(rows):
        assert figure_text in note
    assert len(figure.data) == 2 and {t.name for t in figure.data} == {"local-diffusion", "local-ar"}


@pytest.fixture
def board_url() -> Iterator[str]:
    """A small page holding the player and the Board area, racing two openings."""
    import gradio as gr

    from app.ui.board_tab import board_tab
    from app.ui.player_ui import player_box

    with gr.Blocks(analytics_enabled=False) as demo:
        player = player_box()
        board_tab(prompts=2, shown_in=[player, gr.State(None)])
    with serve_page(demo) as url:
        yield url


@pytest.mark.browser
@needs_twins
def test_the_board_fills_its_table_and_curve_in_the_browser_and_its_note_quotes_the_table(
        browser: Any, board_url: str) -> None:
    with browser_tab(browser, board_url, height=1200) as tab:
        tab.wait_for_selector("#board-note >> text=Not run yet")
        tab.click("#board-run")
        tab.wait_for_function("document.querySelector('#board-note').textContent.includes('What to notice')",
                              timeout=240_000)
        tab.wait_for_selector("#board-plot .js-plotly-plot svg.main-svg")
        traces = tab.evaluate("() => document.querySelector('#board-plot .js-plotly-plot').data.map(t => t.name)")
        assert sorted(traces) == ["local-ar", "local-diffusion"]
        rows_css = "#board-table [role=row].virtual-row"
        tab.wait_for_function(f"document.querySelectorAll('{rows_css}').length === 4")
        cells = tab.eval_on_selector_all(rows_css, """rows => rows.map(row =>
            [...row.querySelectorAll('[role=gridcell]')].map(cell => cell.innerText.trim()))""")
        names = ["opening", "side", "passes", "answer tokens", "tokens a pass", "seconds", "referee perplexity", "race"]
        rows = [dict(zip(names, cell)) for cell in cells]
        assert [r["race"] for r in rows][::2] == [r["race"] for r in rows][1::2] and rows[0]["race"] != rows[2]["race"]
        assert len(rows) == 4
        text = tab.inner_text("#board-note")
        for figure_text in expected_note(rows):
            assert figure_text in text
        # a row opens its race in the player: the second opening's
        tab.locator(f"{rows_css} [role=gridcell]", has_text=rows[2]["race"]).first.click()
        tab.wait_for_selector("#player .cv-player[data-mode=replay][data-status=done]")
        second = prompt_set("stories")[1].text
        tab.wait_for_function("t => document.querySelector('#player').textContent.includes(t)", arg=second)


@needs_twins
def test_on_a_served_page_a_boards_races_are_the_visitors_and_spend_their_hourly_disk_budget(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from app.serving.policy import from_launch
    from app.trace import store
    from app.ui.board_tab import run_handler
    from app.ui.visitor import Visitor, new_owner

    monkeypatch.setattr(store, "ADDRESS_HOUR_BYTES", 1)  # the first race's recording spends the address's hour
    owner = new_owner()
    *_, (_, table, note, names) = run_handler(prompts=2)(Visitor(from_launch("0.0.0.0", False, env={}), owner,
                                                                 "10.54.0.1"))
    races = table["race"].tolist()
    assert races[0] == races[1] != "not saved" and races[2:] == ["not saved", "not saved"]
    assert names == [races[0], races[0]] and (store.user_dir(owner) / races[0]).is_file()
    assert "What to notice" in note  # the unsaved race still counts on the board


@pytest.mark.browser
@needs_twins
def test_the_board_lesson_runs_its_board_in_the_board_section_and_its_numbers_are_under_the_table(
        browser: Any, server_url: str, recordings: Path) -> None:
    """Issue 54, item 5: the lesson "One race is an anecdote" races no race but the Board section's board, over its
    openings; when the board ends the line under the table gives the figures its text talks of (each twin's tokens a
    pass, median and worst perplexity, the openings where more tokens a pass cost quality and where they did not),
    recomputed here from the rows on screen; its "Try it" runs the board again with the diffusion twin bolder."""
    from app.lessons.guided import LESSONS
    from app.ui.lessons_ui import changes

    at = next(i for i, lesson in enumerate(LESSONS) if lesson.board)
    lesson = LESSONS[at]
    rows_css = "#board-table [role=row].virtual-row"
    with browser_tab(browser, server_url, height=1200) as tab:
        tab.wait_for_selector("#player .cv-player[data-status='done']")
        for i in range(1, at + 1):  # a click at a time: a click before the last one landed would read the same lesson
            tab.click("#lesson-next")
            tab.wait_for_function(f"document.querySelector('#lesson-text').textContent.includes('Lesson {i + 1} of')")
        tab.wait_for_selector("#lesson-board", state="visible")
        assert not tab.is_visible("#lesson-run") and not tab.is_visible("#lesson-try")
        boards = []
        for button in ("#lesson-board", "#lesson-board-try"):
            note = "(document.querySelector('#board-note')?.innerText || '').trim()"  # absent while it is closed
            before = tab.evaluate(note)
            tab.click(button)
            tab.wait_for_function(f"b => {{ const t = {note}; return t.startsWith('What to notice') && t !== b; }}",
                                  arg=before, timeout=300_000)  # not the last board's line under a pending timer
            assert tab.evaluate("document.querySelector('#board').classList.contains('cv-spotlight')")
            tab.wait_for_function(f"document.querySelectorAll('{rows_css}').length === {2 * lesson.board}")
            cells = tab.eval_on_selector_all(rows_css, """rows => rows.map(row =>
                [...row.querySelectorAll('[role=gridcell]')].map(cell => cell.innerText.trim()))""")
            names = ["opening", "side", "passes", "answer tokens", "tokens a pass", "seconds", "referee perplexity",
                     "race"]
            rows = [dict(zip(names, cell)) for cell in cells]
            assert sorted({int(r["opening"]) for r in rows}) == list(range(1, lesson.board + 1))
            text = tab.inner_text("#board-note")
            for figure_text in expected_note(rows):
                assert figure_text in text, button
            boards.append((rows, text))
        (rows, text), (bolder, _) = boards
        rate = rate_of(rows, "diffusion twin")
        assert f"{rate:.2f} tokens a pass" in text and f"about {rate:.1f} tokens a pass" in lesson.text
        assert f"about {rate_of(bolder, 'diffusion twin'):.1f}" in lesson.try_it
        some = int(text.split("cost quality on ")[1].split(" of ")[0])
        assert 0 < some < lesson.board  # "on some openings and not on others"
        assert changes(lesson) in tab.inner_text("#lesson-change")  # "Left learned commit filter: 0.6 → 0.5"
    settings = [read_recording(path).header["sources"]["left"]["settings"] for path in recordings.rglob("*.jsonl")]
    assert len(settings) == 2 * lesson.board  # a race an opening, each board's saved in the library
    tried = [lesson.sources()["left"][1]["filter"], lesson.changed()["left"][1]["filter"]]
    assert sorted(s["filter"] for s in settings) == sorted(tried * lesson.board) and tried[0] != tried[1]


def rate_of(rows: list[dict[str, Any]], side: str) -> float:
    """A side's tokens a pass over the shown rows: all its answer tokens over all its passes."""
    mine = [r for r in rows if r["side"] == side]
    return sum(float(r["answer tokens"]) for r in mine) / sum(float(r["passes"]) for r in mine)
