"""The presenter's compact picker (issue 50 item 4): each entry says what it is, the lesson that set its race up or
its sources with the settings they moved from the defaults, so a list of runs of one pair of sources reads apart; and
it is driven by the keyboard alone: opening it focuses its filter, typing filters, Enter loads the first entry shown,
the arrows choose another, and nothing typed reaches a prompt. A lesson's race keeps its lesson in the recording's
header (docs/recording.md `lesson`), from the lesson's own Run button on the page."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from app.lessons.guided import LESSONS
from app.race.run import Race
from app.serving.policy import LOCAL
from app.trace.reading import read_recording
from app.ui.lessons_ui import changes, lesson_name
from app.ui.library_ui import library_view, picker_entries
from app.ui.visitor import Visitor
from tests.fixtures import needs_twins
from tests.pages import browser_tab

pytestmark = needs_twins
ROOT = "#player .cv-player"
UNIFORM = next(i for i, lesson in enumerate(LESSONS) if lesson.left == "local-uniform")
PLAIN = {"left": ("local-diffusion", {"gen_length": 32, "steps": 32, "threshold": 0.5}),
         "right": ("local-ar", {"gen_length": 32})}
AT_DEFAULTS = {"left": ("local-diffusion", {}), "right": ("local-ar", {})}


def record(folder: Path, name: str, sides: dict[str, tuple[str, dict[str, Any]]], lesson: str | None = None) -> Path:
    """A race of the twins run to its end, as the page runs one (a lesson's with its name), saved as `name`."""
    (lspec, lset), (rspec, rset) = sides["left"], sides["right"]
    race = Race(LESSONS[UNIFORM].prompt, lspec, rspec, settings={"left": lset, "right": rset},
                out=folder / name, lesson=lesson)
    for _ in race.ticks():
        pass
    return race.path


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Four real runs, made once: the uniform lesson's race and its "Try it" race, a run with two settings moved and
    one at the defaults (the last two without a lesson, as any race from the page's Run is)."""
    folder = tmp_path_factory.mktemp("picker-runs")
    lesson = LESSONS[UNIFORM]
    return {"lesson": record(folder, "a-lesson.jsonl", lesson.sources(), lesson_name(UNIFORM)),
            "tried": record(folder, "b-tried.jsonl", lesson.changed(), lesson_name(UNIFORM, tried=True)),
            "plain": record(folder, "c-plain.jsonl", PLAIN),
            "defaults": record(folder, "d-defaults.jsonl", AT_DEFAULTS)}


def shelve(runs: dict[str, Path], recordings: Path) -> None:
    """The runs in this test's recordings folder, where the page lists them."""
    for path in runs.values():
        shutil.copyfile(path, recordings / path.name)


def test_each_picker_entry_names_its_lesson_or_what_differs_from_the_defaults(runs: dict[str, Path],
                                                                             recordings: Path) -> None:
    shelve(runs, recordings)
    _, _, ids = library_view(Visitor(LOCAL))
    entries = {e["id"]: e for e in json.loads(picker_entries(Visitor(LOCAL), ids))}
    named = {key: entries[f"user/{path.name}"]["name"] for key, path in runs.items()}
    title = f"Lesson {UNIFORM + 1}: {LESSONS[UNIFORM].title}"
    assert named["lesson"] == title == read_recording(runs["lesson"]).header["lesson"]
    assert named["tried"] == f"{title} (tried: {changes(LESSONS[UNIFORM])})" and "0.5 \u2192 " in named["tried"]
    assert named["plain"] == "local-diffusion (gen_length=32, steps=32, threshold=0.5) vs local-ar (gen_length=32)"
    assert named["defaults"] == "local-diffusion vs local-ar"
    # every entry, the bundled examples (recorded before headers named lessons) too, reads apart from the others
    assert all(e["name"] for e in entries.values()) and len({e["name"] for e in entries.values()}) == len(entries)
    assert "lesson" not in read_recording(runs["plain"]).header  # a run no lesson set up has no such field


FOCUSED = "() => document.activeElement && [...document.activeElement.classList].join(' ')"
SHOWN = f"""() => [...document.querySelectorAll('{ROOT} .cv-picker-item')].filter((i) => !i.hidden)
    .map((i) => [i.getAttribute('data-id'), i.querySelector('.cv-picker-name').textContent])"""
PROMPTS = f"""() => [document.querySelector('#prompt textarea').value,
                     document.querySelector('{ROOT} .cv-picker-prompt')?.value ?? null]"""
LOADED = f"() => document.querySelector('{ROOT}').convergePlayer.state.recording"


@pytest.mark.browser
def test_the_picker_is_driven_by_the_keyboard_alone_and_nothing_typed_reaches_the_prompt(
        runs: dict[str, Path], recordings: Path, browser: Any, server_url: str) -> None:
    shelve(runs, recordings)
    with browser_tab(browser, server_url + "?presenter=1", width=1280, height=800) as tab:
        tab.wait_for_selector(f"{ROOT}[data-mode=replay][data-presenter=true]")
        tab.wait_for_function("n => (document.querySelector('#presenter-list textarea')?.value || '').includes(n)",
                              arg=runs["defaults"].name)  # the page's list of recordings has arrived
        page_prompt, _ = tab.evaluate(PROMPTS)
        before = [page_prompt, page_prompt]  # the picker's prompt starts as the page's
        tab.keyboard.press("o")
        tab.wait_for_selector(f"{ROOT}[data-picker=open]")
        assert "cv-picker-filter" in tab.evaluate(FOCUSED)  # the filter has the focus, not the prompt
        every = tab.evaluate(SHOWN)
        tab.keyboard.type("uniform")
        tab.wait_for_function(f"() => ({SHOWN})().length < {len(every)}")
        shown = tab.evaluate(SHOWN)
        assert sorted(i for i, _ in shown) == sorted(f"user/{runs[k].name}" for k in ("lesson", "tried"))
        assert all(name.startswith(f"Lesson {UNIFORM + 1}: ") for _, name in shown)
        tab.keyboard.press("Enter")  # loads the first entry shown
        tab.wait_for_selector(f"{ROOT}[data-picker=closed]")
        tab.wait_for_function(f"n => ({LOADED})() === n", arg=shown[0][0].split("/", 1)[1])
        assert tab.evaluate(PROMPTS) == before  # nothing typed reached either prompt
        assert tab.get_attribute(ROOT, "data-presenter") == "true"

        tab.keyboard.press("o")  # again: the arrows choose another entry, Enter loads it
        tab.wait_for_selector(f"{ROOT}[data-picker=open]")
        assert "cv-picker-filter" in tab.evaluate(FOCUSED) and tab.input_value(f"{ROOT} .cv-picker-filter") == ""
        listed = tab.evaluate(SHOWN)
        assert listed == every
        tab.keyboard.press("ArrowDown")
        tab.keyboard.press("ArrowDown")
        assert tab.evaluate("() => document.activeElement.getAttribute('data-id')") == listed[1][0]
        tab.keyboard.press("Enter")
        tab.wait_for_function(f"n => ({LOADED})() === n", arg=listed[1][0].split("/", 1)[1])
        assert tab.evaluate(PROMPTS) == before
    names = dict(listed)
    assert names[f"user/{runs['plain'].name}"].startswith("local-diffusion (gen_length=32, steps=32, threshold=0.5)")
    assert len(set(names.values())) == len(names)  # no two entries read alike


@pytest.mark.browser
def test_a_lessons_run_button_records_the_lesson_in_the_header(recordings: Path, browser: Any,
                                                               server_url: str) -> None:
    with browser_tab(browser, server_url, timeout_ms=180_000) as tab:
        tab.wait_for_selector(f"{ROOT}[data-mode=replay]")
        tab.click("#lesson-run")  # lesson 1, the one picked when the page opens
        tab.wait_for_selector(f"{ROOT}[data-mode=live][data-status=done]")
    saved = sorted(recordings.rglob("*.jsonl"))
    assert [read_recording(p).header.get("lesson") for p in saved] == [lesson_name(0)]
