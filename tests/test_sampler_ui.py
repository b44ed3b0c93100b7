"""Be the sampler on the page, in a real Chromium: the learner commits positions and candidates by hand, lets the model
choose once, saves, and finds every choice marked in the recording the player then plays; hostile text stays text;
a served page saves each visitor's run in their own library and keeps at most two runs of one visitor.

A page keeps its runs up to 30 idle minutes, and a page a test built stays alive after it closes (FastAPI 0.165's
lru_cache of callable classifications, in fastapi.dependencies.models, holds its route functions), so its runs outlive
the test: this module sorts after tests/test_load.py, which checks that no frame outlives its race."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Iterator

import pytest

from app.serving.policy import LOCAL
from app.trace.reading import read_recording
from app.trace.store import user_dir
from app.ui.hand_runs import ENDED
from tests.hostile import HOSTILE
from tests.pages import browser_tab
from tests.test_inspector import click_position, inspector
from tests.test_security_access import OWNER_A, OWNER_B, call, fn_index, inputs, page, served, session

ROOT = "#player .cv-player"


@pytest.fixture
def tab(browser: Any, server_url: str) -> Iterator[Any]:
    with browser_tab(browser, server_url, height=1400) as page:
        page.wait_for_selector(f"{ROOT}[data-status]")
        page.click("#sampler button.label-wrap")
        yield page


def start(tab: Any, pins: str = "", length: str = "") -> None:
    if pins:
        tab.locator("#sampler-pins textarea").fill(pins)
    if length:
        tab.click("#sampler-length input")
        tab.click(f"#sampler-length [role=option][aria-label='{length}']")
    tab.click("#sampler-start")
    tab.wait_for_selector("#sampler-pos-0 input[type=radio]")


def slot_position(tab: Any, slot: int) -> int:
    """The answer position a picker offers, from its label ("Position N · confidence X%")."""
    label = tab.text_content(f"#sampler-pos-{slot} [data-testid=block-info]")
    return int(re.match(r"Position (\d+) ", label).group(1))


def slot_confidence(tab: Any, slot: int) -> int:
    label = tab.text_content(f"#sampler-pos-{slot} [data-testid=block-info]")
    return int(re.search(r"confidence (\d+)%", label).group(1))


def open_slots(tab: Any) -> int:
    """How many pickers the page shows (a hidden one is not in the DOM)."""
    return tab.evaluate("document.querySelectorAll('#sampler-positions [id^=sampler-pos-]').length")


def candidate(tab: Any, slot: int, n: int) -> Any:
    """A picker's n-th candidate (0 = the model's top one); the picker's first choice leaves the position masked."""
    return tab.locator(f"#sampler-pos-{slot} label").nth(n + 1)


def token_of(label: Any) -> str:
    return re.match(r"^\u201c(.*)\u201d \d+%$", label.text_content().strip(), re.S).group(1)


def pick(tab: Any, slot: int, n: int) -> tuple[int, str]:
    """Clicks a picker's n-th candidate; returns (position, the candidate's token string)."""
    label = candidate(tab, slot, n)
    label.click()
    return slot_position(tab, slot), token_of(label)


def click_on_canvas(tab: Any, slot: int) -> tuple[int, str]:
    """Clicks a picker's position on the canvas, which picks the model's guess there (its top candidate, at
    temperature 0); returns (position, that token string) once the picker shows the pick."""
    position = slot_position(tab, slot)
    tab.locator("#sampler-canvas .token .text", has_text=re.compile(rf"^\[{position}\]$")).click()
    tab.wait_for_function("s => document.querySelector(`#sampler-pos-${s} input[aria-checked=true]`)?.value !== '-'",
                          arg=slot)
    return position, token_of(candidate(tab, slot, 0))


def wait_note(tab: Any, start: str) -> None:
    """Waits until the note under the canvas starts with `start` (it says what the last step did)."""
    tab.wait_for_function("s => document.querySelector('#sampler-note textarea').value.startsWith(s)", arg=start)


def note(tab: Any) -> str:
    return tab.input_value("#sampler-note textarea")


@pytest.mark.browser
def test_three_commits_of_the_learner_and_one_of_the_model_are_marked_in_the_saved_recording(
        tab: Any, recordings: Path) -> None:
    start(tab)
    last = open_slots(tab) - 1
    mine = [[pick(tab, last, 0)]]  # the block's last position first
    tab.click("#sampler-commit")
    wait_note(tab, f"You committed position {mine[0][0][0]}; by confidence the model would have committed position")
    mine.append([pick(tab, 0, 1)])  # a candidate that is not the model's own guess
    tab.click("#sampler-commit")
    wait_note(tab, f"You committed position {mine[1][0][0]}; by confidence the model would have committed position")
    mine.append(sorted([pick(tab, 0, 0), click_on_canvas(tab, 1)]))  # two positions in one commit
    tab.click("#sampler-commit")
    wait_note(tab, f"You committed positions {mine[2][0][0]} and {mine[2][1][0]}; ")
    confidence = {slot_position(tab, i): slot_confidence(tab, i) for i in range(open_slots(tab))}
    tab.click("#sampler-model")
    wait_note(tab, "The model committed ")
    rule = int(re.match(r"The model committed position (\d+) by confidence\.$", note(tab)).group(1))
    assert confidence[rule] == max(confidence.values())  # one a pass, the most confident first

    tab.click("#sampler-save")
    wait_note(tab, "Saved as")
    saved = sorted(recordings.glob("*.jsonl"))
    assert len(saved) == 1 and saved[0].name in note(tab)
    rec = read_recording(saved[0])
    assert rec.header["sources"]["left"]["name"] == "you+local-diffusion" and rec.ends["left"]["status"] == "done"
    frames = rec.frames["left"]
    assert frames[0].chosen_by is None and not frames[0].committed
    for frame, picks in zip(frames[1:4], mine):
        assert frame.chosen_by == "user" and frame.committed == sorted(p for p, _ in picks)
        assert all(frame.tokens[p] == token for p, token in picks)
    assert frames[4].chosen_by == "model" and frames[4].committed == [rule]
    assert all(f.chosen_by == "model" for f in frames[5:]) and frames[-1].final and frames[-1].text

    tab.wait_for_selector(f"{ROOT}[data-mode=replay]")  # the saved run is in the player, and in the library
    assert tab.get_attribute(f"{ROOT} .cv-side[data-side=left]", "data-frames") == str(len(frames))
    tab.wait_for_function("n => document.querySelector('#library-table').textContent.includes(n)", arg=saved[0].name)
    tab.evaluate(f"() => {{ const p = document.querySelector('{ROOT}').convergePlayer; p.seek(1e9); p.paint(); }}")
    for position, who in ((mine[1][0][0], "committed by you"), (rule, "committed by the model")):
        click_position(tab, "left", position, ROOT)  # the token inspector says who chose each commit
        tab.wait_for_selector(f"{ROOT} .cv-inspector[data-open=true][data-pos='{position}']")
        assert any(f" {who} " in event for event in inspector(tab, ROOT)["events"]), inspector(tab, ROOT)


@pytest.mark.browser
def test_a_pick_the_model_cannot_take_is_refused_in_one_sentence(tab: Any) -> None:
    tab.click("#sampler-commit")
    tab.wait_for_function("() => document.querySelector('#sampler-note textarea').value === 'Press Start first.'")
    start(tab)
    tab.click("#sampler-commit")
    tab.wait_for_function("() => document.querySelector('#sampler-note textarea').value"
                          ".startsWith('Pick at least one')")
    assert tab.is_visible("#sampler-pos-0")


@pytest.mark.browser
def test_hostile_pinned_text_and_the_candidates_beside_it_show_as_text(tab: Any) -> None:
    hostile = HOSTILE["img-onerror"]
    start(tab, pins=f"18:{hostile}", length="64")
    canvas = tab.evaluate("[...document.querySelectorAll('#sampler-canvas .token .text')]"
                          ".map(e => e.textContent).join('')")
    assert hostile in canvas  # the pinned pieces, side by side, read as the text itself
    tab.click("#sampler-model")
    tab.wait_for_function("() => document.querySelector('#sampler-note textarea').value.startsWith('The model')")
    pick(tab, 0, 0)
    tab.click("#sampler-commit")
    tab.wait_for_function("() => document.querySelector('#sampler-note textarea').value.startsWith('You')")
    assert tab.evaluate("typeof window.__pwned") == "undefined"
    assert tab.evaluate("document.querySelectorAll('#sampler img, #sampler script, #sampler svg[onload]').length") == 0


@pytest.mark.parametrize("served_page", [True, False], ids=["served", "local-control"])
def test_a_saved_run_goes_to_its_visitors_own_library(served_page: bool, recordings: Path) -> None:
    """Through Gradio's queue API, as any caller would: on a served page the run lands in the visitor's own folder,
    never in the shared one or another visitor's; on a local page, in the shared library."""
    policy = served() if served_page else LOCAL
    with page(policy) as (demo, url):
        session_hash = session(demo, url, OWNER_A)
        for elem_id in ("sampler-start", "sampler-save"):  # one session: the run is kept in its state between them
            index = fn_index(demo, elem_id=elem_id, event="click")
            done = call(url, index, inputs(demo, index, OWNER_A), session_hash)
            assert done["success"], done
    runs = sorted(recordings.rglob("*.jsonl"))
    assert len(runs) == 1 and read_recording(runs[0]).header["sources"]["left"]["name"] == "you+local-diffusion"
    assert runs[0].parent == (user_dir(OWNER_A) if served_page else recordings)
    assert not user_dir(OWNER_B).exists()


def step_note(demo: Any, url: str, session_hash: str) -> str:
    """'Let the model choose' in a session, through the queue API; the note the box then shows."""
    index = fn_index(demo, elem_id="sampler-model", event="click")
    done = call(url, index, inputs(demo, index), session_hash)
    assert done["success"], done
    return done["output"]["data"][2]


@pytest.mark.parametrize("served_page", [True, False], ids=["served", "local-control"])
def test_three_sessions_of_one_visitor_keep_only_the_two_newest_runs(served_page: bool) -> None:
    """A served page ends a visitor's run that a third started run leaves no room for, and says so in that session;
    on a local page (the host) every run is kept."""
    with page(served() if served_page else LOCAL) as (demo, url):
        start = fn_index(demo, elem_id="sampler-start", event="click")
        sessions = [session(demo, url, OWNER_A) for _ in range(3)]
        for hash_ in sessions:
            done = call(url, start, inputs(demo, start, OWNER_A), hash_)
            assert done["success"], done
        notes = [step_note(demo, url, hash_) for hash_ in sessions]
    assert notes[0] == ENDED if served_page else notes[0] != ENDED
    assert all(note != ENDED and note for note in notes[1:]), notes
