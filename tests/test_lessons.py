"""The guided lessons: every lesson runs offline on the built-in models or a bundled recording, points at a
part of the page that exists, and a learner can walk all of them, making each "try it" change, in Chromium."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from app.errors import UserError
from app.lessons.figures import FIGURES, Finished, most_in_one_pass, reopened, shown, stray
from app.lessons.forward_process import STEPS, forward_recording
from app.lessons.guided import FORWARD_EXAMPLE, LESSONS, MERCURY_EXAMPLE
from app.sources.base import REGISTRY, load_plugins, make_source
from app.trace.frames import Frame
from app.trace.reading import read_recording
from app.ui.lessons_ui import lesson_markdown, noising_file
from app.view.payload import recording_payload
from app.view.theme import THEME
from tests.pages import browser_tab
from tests.wire import expand_rows

ROOT = "#player .cv-player"
PLAYER_PARTS = {"panel-left", "panel-right", "legend", "heatmap-left", "heatmap-right", "chart", "metrics",
                "scrubber", "inspector"}
PAGE_PARTS = {"#sampler"}  # parts of the page outside the player that a lesson may point at


def test_there_are_eight_to_eighteen_lessons_each_short_with_a_change_to_try() -> None:
    assert 8 <= len(LESSONS) <= 18
    for lesson in LESSONS:
        sentences = [s for s in lesson.text.replace("...", ".").split(". ") if s.strip()]
        assert 2 <= len(sentences) <= 4, lesson.title
        assert lesson.try_side in ("left", "right") and lesson.try_settings and lesson.try_it
        assert lesson.changed() != lesson.sources()
        assert lesson.point in PAGE_PARTS or (lesson.point.startswith('[data-part="')
                                              and lesson.point[12:-2] in PLAYER_PARTS), lesson.point


def test_the_lessons_cover_the_questions_newcomers_ask() -> None:
    text = " ".join(f"{lesson.title} {lesson.text}".lower() for lesson in LESSONS)
    for topic in ("left to right", "masked", "forward pass", "confidence", "margin", "entropy", "random", "block",
                  "steps", "threshold", "remask", "end-of-text", "length", "mercury", "noise"):
        assert topic in text, topic


@pytest.mark.parametrize("i", range(len(LESSONS)))
def test_every_lesson_and_its_change_make_valid_offline_sources(i: int) -> None:
    """Both setups build with the sources' own validation: no key, no network, no bad setting."""
    for sources in (LESSONS[i].sources(), LESSONS[i].changed()):
        for spec, settings in sources.values():
            assert spec.partition(":")[0] in ("local-diffusion", "local-uniform", "local-ar", "replay"), spec
            try:
                make_source(spec, **settings)
            except UserError as e:
                pytest.fail(f"lesson {i + 1}: {spec} {settings}: {e}")


def test_the_mercury_lesson_replays_a_bundled_synthetic_wire_format_stream() -> None:
    rec = read_recording(MERCURY_EXAMPLE)
    assert rec.header["sources"]["left"]["name"].startswith("mercury")
    assert "synthetic" in rec.header["caption"].lower() and rec.ends["left"]["status"] == "done"
    drafts = [f.text for f in rec.frames["left"]]
    assert len(drafts) > 5 and drafts[-1] != drafts[0]


def test_lesson_text_names_where_to_look_and_what_to_try() -> None:
    md = lesson_markdown(0)
    assert md.startswith(f"### Lesson 1 of {len(LESSONS)}") and "**Try it:**" in md and "**Look at**" in md
    load_plugins()  # the registry fills when the sources are first loaded, which another test may not have done
    assert all(k in REGISTRY for k in ("local-diffusion", "local-ar", "replay"))


def test_the_forward_process_masks_the_examples_final_answer_step_by_step_until_all_is_masked() -> None:
    rec = read_recording(FORWARD_EXAMPLE)
    payload = recording_payload(forward_recording(rec), "forward.jsonl")
    wire = payload["sides"]["left"]["rows"]
    rows = expand_rows(wire)
    answer = rec.frames["left"][-1]
    assert "".join(rows[0]["tok"]) == answer.text and rows[0]["tok"] == answer.tokens  # built from the trace's answer
    assert 16 <= len(rows) - 1 <= 24
    masked = [{i for i, m in enumerate(r["m"]) if m} for r in rows]
    shares = [len(m) / len(answer.tokens) for m in masked]
    assert shares[0] == 0 and shares[-1] == 1 and all(a < b for a, b in zip(shares, shares[1:]))
    assert all(a < b for a, b in zip(masked, masked[1:]))  # nested: a masked position stays masked
    for k, (w, share) in enumerate(zip(wire, shares)):  # each frame shows t, and the share masked that it means
        t, count, percent = re.fullmatch(r"t = (\d\.\d\d): (\d+) of 64 positions masked \((\d+)%\)", w["note"]).groups()
        assert float(t) == round(k / STEPS, 2) and int(count) == len(masked[k]) and int(percent) == round(share * 100)
    assert [r["tok"] for r in expand_rows(payload["sides"]["right"]["rows"])] == [
        r["tok"] for r in expand_rows(recording_payload(rec)["sides"]["left"]["rows"])]  # the run that wrote it


def test_only_the_forward_process_lesson_shows_a_recording_when_chosen() -> None:
    shown = {lesson.title: noising_file(lesson) for lesson in LESSONS}
    assert [title for title, path in shown.items() if path] == ["The forward process: what the model learned to undo"]
    path = next(p for p in shown.values() if p)
    assert read_recording(path).frames == forward_recording(read_recording(FORWARD_EXAMPLE)).frames


def visible_words(text: str) -> str:
    """Text as a reader sees it, for comparing a lesson's source with the page: Markdown's emphasis marks dropped and
    white space made single."""
    return " ".join(re.sub(r"[*`]", "", text).split())


@pytest.mark.browser
def test_every_lessons_text_shows_as_written(browser: Any, server_url: str) -> None:
    """Issue 41: the `<eos>` in lesson 12 was read as an HTML tag and swallowed the rest of its text. Each of the
    lessons, chosen in turn, shows every word of its source: title, explanation, where to look and what to try."""
    with browser_tab(browser, server_url) as tab:
        for i, lesson in enumerate(LESSONS):
            if i:
                tab.click("#lesson-next")
            tab.wait_for_function(f"document.querySelector('#lesson-text')?.innerText.includes('Lesson {i + 1} of')")
            shown = visible_words(tab.inner_text("#lesson-text"))
            for part in (lesson.title, lesson.text, lesson.look, lesson.try_it):
                assert visible_words(part) in shown, (i + 1, visible_words(part)[:80], shown[:300])


def race_finished(tab: Any, before: str | None) -> str:
    """Waits until the player shows a new run that has finished; returns its recording name."""
    tab.wait_for_function(
        """(before) => {
          const root = document.querySelector('#player .cv-player');
          const st = root && root.dataset.status;
          const state = root && root.convergePlayer.state;
          return ['done', 'stopped', 'error'].includes(st) && state.done && state.recording !== before
            && state.mode === 'live';
        }""", arg=before)
    return tab.evaluate(f"document.querySelector('{ROOT}').convergePlayer.state.recording")


@pytest.mark.browser
def test_a_learner_walks_every_lesson_and_makes_each_change(browser: Any, server_url: str, recordings: Path) -> None:
    with browser_tab(browser, server_url, timeout_ms=120_000) as tab:
        tab.wait_for_selector(f"{ROOT}[data-status='done']")  # the page opens with the first bundled example loaded
        last = tab.evaluate(f"document.querySelector('{ROOT}').convergePlayer.state.recording")
        for i, lesson in enumerate(LESSONS):
            if i:
                tab.click("#lesson-next")
            tab.wait_for_function(f"document.querySelector('#lesson-text').textContent.includes('Lesson {i + 1} of')")
            assert lesson.title in tab.text_content("#lesson-text")
            tab.click("#lesson-run")
            last = race_finished(tab, last)
            status = tab.get_attribute(ROOT, "data-status")
            assert status == "done", f"lesson {i + 1}: {status}: {tab.text_content(ROOT + ' .cv-status')}"
            if lesson.left == lesson.right:  # compare mode: each panel's title names the setting that differs
                a, b = (settings for _, settings in lesson.sources().values())
                differ = [k for k in {*a, *b} if a.get(k) != b.get(k)]
                for side in ("left", "right"):
                    title = tab.text_content(f"#player .cv-side[data-side={side}] .cv-spec")
                    # a side names the settings it moved from the defaults, or says it is at its defaults
                    assert lesson.left in title and (any(k in title for k in differ) or title.endswith("defaults")), (
                        i + 1, title)
            assert tab.evaluate(f"document.querySelector('{lesson.point}').classList.contains('cv-spotlight')")
            assert tab.evaluate("document.querySelectorAll('.cv-spotlight').length") == 1
            before = recorded_settings(recordings, last, lesson.try_side)
            tab.click("#lesson-try")
            last = race_finished(tab, last)
            assert tab.get_attribute(ROOT, "data-status") == "done", f"lesson {i + 1} after its change"
            after = recorded_settings(recordings, last, lesson.try_side)
            for name, value in lesson.try_settings.items():  # the change reached the source, and only it changed
                assert after[name] == value and before.get(name) != value, (i + 1, name)


@pytest.mark.browser
def test_choosing_the_forward_process_lesson_plays_the_noising_at_once(browser: Any, server_url: str) -> None:
    at = next(i for i, lesson in enumerate(LESSONS) if lesson.noising)
    with browser_tab(browser, server_url) as tab:
        tab.wait_for_selector(f"{ROOT}[data-status='done']")
        for _ in range(at):
            tab.click("#lesson-next")
        tab.wait_for_function(f"document.querySelector('{ROOT}').convergePlayer.state.recording"
                              ".startsWith('forward-process-')")
        note = f"{ROOT} .cv-side[data-side=left] .cv-note"
        # issue 41: the lesson says the noising plays when it opens, so it plays from t = 0 without a press of Play
        tab.wait_for_function(f"document.querySelector('{ROOT}').convergePlayer.state.playing")
        tab.wait_for_function(f"Number(document.querySelector('{ROOT}').dataset.step) > 0")
        tab.click(f"{ROOT} button[aria-label='Jump to end']")
        tab.wait_for_function(f"document.querySelector('{note}').textContent.startsWith('t = 1.00')")
        assert tab.text_content(note) == "t = 1.00: 64 of 64 positions masked (100%)"
        left = f"{ROOT} .cv-side[data-side=left] .cv-text"
        assert set(tab.text_content(left)) == {THEME["mask"]}  # every position masked at the end
        assert tab.evaluate(f"document.querySelector('{LESSONS[at].point}').classList.contains('cv-spotlight')")


def recorded_settings(folder: Path, name: str, side: str) -> dict[str, Any]:
    return read_recording(folder / name).header["sources"][side]["settings"]


def test_every_figure_a_lesson_quotes_is_a_known_measurement() -> None:
    for lesson in LESSONS:
        assert set(lesson.figures) <= set(FIGURES), lesson.title
    quoting = [i + 1 for i, lesson in enumerate(LESSONS) if lesson.figures]
    assert {7, 9, 10, 11, 12, 13}.issubset(quoting)


def test_the_figures_measure_a_small_made_up_race() -> None:
    """Four positions: two committed in the first pass (the second one right of the first masked), one reopened."""
    m, t = [True] * 4, ["a", "b", "c", "d"]
    diffusion = (Frame(t=0.0, step=0, tokens=[""] * 4, masked=m, nfe=0),
                 Frame(t=0.1, step=1, tokens=["a", "", "c", ""], masked=[False, True, False, True], nfe=1,
                       committed=[0, 2]),
                 Frame(t=0.2, step=2, tokens=["a", "", "c", "d"], masked=[False, True, False, False], nfe=2,
                       committed=[3], remasked=[]),
                 Frame(t=0.3, step=3, tokens=t, masked=[False] * 4, nfe=3, committed=[1], remasked=[2], final=True))
    assert most_in_one_pass(diffusion) == 2 and reopened(diffusion) == 1
    assert stray([diffusion]) == (0 + 2 + 2 + 0) / 4  # first masked: 0, 0, 1, 1
    ar = tuple(Frame(t=0.1 * i, step=i, tokens=t[:i], nfe=i, committed=[i - 1] if i else None, final=i == 4)
               for i in range(5))
    lines = dict(shown(["passes", "most_in_one_pass", "reopened", "time_to_final"],
                       Finished("p", {"left": diffusion, "right": ar})))
    assert lines["Forward passes"] == "left 3, right 4"
    assert lines["Most tokens committed in one pass"] == "left 2, right 1"
    assert lines["Tokens masked again (remasked)"] == "left 1, right 0"


def test_the_docs_and_the_readme_count_the_lessons_the_page_has() -> None:
    """Issue 51: docs/page.md said 16 lessons when the page had 17."""
    root = Path(__file__).resolve().parent.parent
    said = re.findall(r"(\d+) short guided lessons", (root / "docs" / "page.md").read_text(encoding="utf-8"))
    assert said == [str(len(LESSONS))]
    assert f"{len(LESSONS)} lessons" in (root / "README.md").read_text(encoding="utf-8")
