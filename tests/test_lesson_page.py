"""Issue 41 in Chromium at 1366x768: when a lesson's race ends, the figures its text quotes are on screen under the
panels ("This race"), with the metrics table in view for a lesson about them; "Try it" sets up the lesson's own race,
makes its one change and says that setting's old and new value."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Callable

import pytest

from app.lessons.figures import Finished, shown
from app.lessons.guided import LESSONS
from app.trace.reading import read_recording
from app.ui.draft_ui import TYPED
from tests.fixtures import needs_twins
from tests.pages import browser_tab, outside_viewport
from tests.test_revise_page import fill_draft

ROOT = "#player .cv-player"
FIGURES = f"{ROOT} .cv-figures"
METRICS = '#player [data-part="metrics"]'
SIZE = {"width": 1366, "height": 768}
Check = Callable[[list[float]], bool]
# Per lesson (by the start of its title): whether the figures are read after "Try it", and each quoted figure as a
# pattern on the strip's text and a check of the numbers it catches against the words of the lesson.
QUOTES: dict[str, tuple[bool, list[tuple[str, Check]]]] = {
    "The forward process": (True, [(r"Tokens per forward pass: left (\d+\.\d)", lambda v: 3.5 <= v[0] <= 4.5)]),
    "A step is one forward pass": (True, [(r"Forward passes: left (\d+)", lambda v: 8 <= v[0] <= 10)]),
    "Blocks: why": (False, [(r"right of the first masked position: left (\d+\.\d) positions, right (\d+\.\d)",
                             lambda v: 11 <= v[0] <= 15 and 3.5 <= v[1] <= 5)]),
    "Steps against quality": (False, [(r"Forward passes: left (\d+), right (\d+)", lambda v: v == [64, 8])]),
    "Parallel decoding by threshold": (True, [(r"the higher is (\d+\.\d+) times the lower", lambda v: v[0] > 10)]),
    "A learned commit rule": (False, [(r"Tokens per forward pass: left (\d+\.\d)", lambda v: 2.7 <= v[0] <= 3.3),
                                      (r"in one pass: left (\d+)", lambda v: v[0] == 7),
                                      (r"the higher is (\d+\.\d+) times", lambda v: 1.1 <= v[0] <= 1.3)]),
    "Remasking": (False, [(r"masked again \(remasked\): left (\d+), right (\d+)", lambda v: v[0] == 0 < v[1])]),
    "End of text": (False, [(r"after two passes: left (\d+)", lambda v: v[0] > 150),
                            (r"before end-of-text: left (\d+) tokens, right (\d+)",
                             lambda v: 40 <= v[0] <= 50 and 75 <= v[1] <= 90)]),
    "Why diffusion wins": (False, [(r"Forward passes: left (\d+), right (\d+)", lambda v: 32 <= v[0] <= 36 and
                                    v[1] == 256),
                                   (r"not the same length: (\d+) against (\d+) tokens",
                                    lambda v: 60 <= v[0] <= 70 and v[1] == 256)]),
    "Mercury": (True, [(r"Time to final: left (\d+\.\d+) s", lambda v: 3.0 <= v[0] <= 3.4)]),  # twice 1.59 s
    "Be the sampler": (False, [(r"the higher is (\d+\.\d+) times", lambda v: 3.5 <= v[0] <= 4.5)]),
}


def lesson_index(title: str) -> int:
    return next(i for i, lesson in enumerate(LESSONS) if lesson.title.startswith(title))


def open_lesson(tab: Any, i: int) -> None:
    """Chooses lesson i (from 0) in the lessons box, on a page that has loaded its first example."""
    tab.wait_for_selector(f"{ROOT}[data-status='done']")
    tab.click("#lesson-pick input")
    tab.click(f"#lesson-pick [role=option][aria-label^='{i + 1}. ']")
    tab.wait_for_function(f"document.querySelector('#lesson-text').textContent.includes('Lesson {i + 1} of')")


def race_with_figures(tab: Any, button: str) -> str:
    """Presses a lesson's button and waits until its new race has ended and shows its figures; returns its file."""
    before = tab.evaluate(f"document.querySelector('{ROOT}').convergePlayer.state.recording")
    tab.click(button)
    tab.wait_for_function("""([root, before]) => {
      const r = document.querySelector(root);
      return r.convergePlayer.state.recording !== before && r.convergePlayer.state.done
        && !r.querySelector('.cv-figures').hidden;
    }""", arg=[ROOT, before])
    return tab.evaluate(f"document.querySelector('{ROOT}').convergePlayer.state.recording")


def wait_in_view(tab: Any, selectors: tuple[str, ...]) -> None:
    """Waits until every selector's element is wholly inside the viewport (the page scrolls once the race ends)."""
    try:
        tab.wait_for_function("""(sels) => sels.every((s) => {
          const r = document.querySelector(s).getBoundingClientRect();
          return r.height > 0 && r.top >= 0 && r.bottom <= innerHeight;
        })""", arg=list(selectors), timeout=10_000)
    except Exception:  # the wait's own error says nothing of where they are
        pytest.fail(f"outside the viewport: {outside_viewport(tab, selectors)}")


@needs_twins
@pytest.mark.browser
@pytest.mark.parametrize("title", list(QUOTES))
def test_each_number_a_lesson_quotes_is_on_screen_when_its_race_ends(browser: Any, server_url: str,
                                                                      title: str) -> None:
    i = lesson_index(title)
    after_try, quotes = QUOTES[title]
    assert LESSONS[i].figures, title
    with browser_tab(browser, server_url, timeout_ms=180_000, **SIZE) as tab:
        open_lesson(tab, i)
        race_with_figures(tab, "#lesson-run")
        if after_try:
            race_with_figures(tab, "#lesson-try")
        about_metrics = LESSONS[i].point == '[data-part="metrics"]'
        wait_in_view(tab, (FIGURES, METRICS) if about_metrics else (FIGURES,))
        shown = tab.inner_text(FIGURES)
        assert shown.startswith("This race")
        for pattern, check in quotes:
            found = re.search(pattern, shown)
            assert found, (title, pattern, shown)
            values = [float(v) for v in found.groups()]
            assert check(values), (title, pattern, values, shown)


@needs_twins
@pytest.mark.browser
def test_try_it_sets_up_the_lessons_own_race_then_makes_its_change_and_says_old_and_new(
        browser: Any, server_url: str, recordings: Path) -> None:
    """Issue 41: "Try it" before "Run this lesson's race" raced what the page held and said nothing of the change."""
    i = lesson_index("Parallel decoding by threshold")
    lesson = LESSONS[i]
    with browser_tab(browser, server_url, timeout_ms=180_000, **SIZE) as tab:
        tab.wait_for_selector(f"{ROOT}[data-status='done']")
        tab.fill("#prompt textarea", "Something else entirely.")  # the page holds another race
        open_lesson(tab, i)
        name = race_with_figures(tab, "#lesson-try")
        assert tab.inner_text("#lesson-change") == "Changed: Left parallel threshold: 0.9 \u2192 0.1"
        assert tab.is_visible("#lesson-change")
    rec = read_recording(recordings / name)
    assert rec.header["prompt"] == lesson.prompt
    for side, (spec, settings) in lesson.changed().items():
        recorded = rec.header["sources"][side]
        assert recorded["name"] == spec
        on = {k: v for k, v in settings.items() if v}  # a setting at 0 is off, which the recording keeps as none
        assert {k: recorded["settings"].get(k) for k in on} == on, side
    assert rec.header["sources"]["left"]["settings"]["threshold"] == 0.1


def figure(text: str, label: str) -> str:
    """One figure's text on the strip ("label: text"), up to the next figure's label."""
    found = re.search(re.escape(label) + r": (.*?)(?: \u00b7 |$)", text)
    assert found, (label, text)
    return found.group(1)


# Issue 51: lessons 15-17's figure before and after "Try it", and what the lesson says of the change
BEFORE_AFTER: dict[str, tuple[str, Callable[[str, str], bool]]] = {
    "Write the ending first": ("How it ends", lambda a, b: a != b and all('The end.", right "' in x for x in (a, b))),
    "Be the sampler": ("Mean distance of a commit right of the first masked position",
                       lambda a, b: float(b.split()[1]) + 5 < float(a.split()[1])),
    "Uniform-state diffusion": ("Referee's perplexity (lower reads better)",
                                lambda a, b: float(b.split()[1].rstrip(",")) > float(a.split()[1].rstrip(","))),
}


@needs_twins
@pytest.mark.browser
@pytest.mark.parametrize("title", list(BEFORE_AFTER))
def test_lessons_15_to_17_show_their_figure_before_and_after_try_it(browser: Any, server_url: str,
                                                                    title: str) -> None:
    i = lesson_index(title)
    label, moved = BEFORE_AFTER[title]
    with browser_tab(browser, server_url, timeout_ms=180_000, **SIZE) as tab:
        open_lesson(tab, i)
        race_with_figures(tab, "#lesson-run")
        wait_in_view(tab, (FIGURES,))
        before = figure(tab.inner_text(FIGURES), label)
        race_with_figures(tab, "#lesson-try")  # the panels' titles now name the change: where the text, the panels
        assert tab.is_visible(FIGURES)  # and the figures no longer fit the window, the figures are a scroll away
        after = figure(tab.inner_text(FIGURES), label)
    assert moved(before, after), (title, before, after)


@needs_twins
@pytest.mark.browser
def test_the_revising_lesson_starts_both_sides_from_its_draft_and_shows_what_each_did(
        browser: Any, server_url: str, recordings: Path) -> None:
    """Issue 53: the lesson's race starts from its own draft (not the page's "Start from" box), and when it ends its
    figures (passes, draft kept, planted mistakes changed) are on screen, as measured on the recording it saved."""
    i = lesson_index("Diffusion revises")
    lesson = LESSONS[i]
    assert lesson.draft is not None
    with browser_tab(browser, server_url, timeout_ms=180_000, **SIZE) as tab:
        tab.wait_for_selector(f"{ROOT}[data-status='done']")
        fill_draft(tab, TYPED, "A draft the visitor typed.", share=50)  # the lesson's race ignores the box
        open_lesson(tab, i)
        name = race_with_figures(tab, "#lesson-run")
        wait_in_view(tab, (FIGURES,))
        strip = tab.inner_text(FIGURES)
    rec = read_recording(recordings / name)
    assert rec.header["draft"] == lesson.draft.to_json() and rec.header["prompt"] == lesson.prompt
    measured = shown(lesson.figures, Finished(lesson.prompt, rec.frames, (lesson.story, lesson.draft.text)))
    assert [label for label, _ in measured] == ["Forward passes", "Draft tokens kept", "Planted mistakes changed"]
    for label, text in measured:
        assert figure(strip, label) == text, (label, strip)
    assert "Planted mistakes changed: left 3 of 3" in strip  # the text: the uniform twin changes all three
    kept = re.search(r"Draft tokens kept: left (\d+) of 64, right (\d+) of 64", strip)
    assert kept and int(kept[1]) > 64 / 2 and int(kept[2]) <= 2, strip  # most kept; the AR twin its first word
