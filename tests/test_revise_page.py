"""The page's "Start from" (issue 53): a draft typed, the last race's side or a recording of the visitor's own
library, re-noised by a share and where; the race starts from it and the AR panel says what it kept."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from app.engine.draft import choose
from app.errors import UserError
from app.serving.policy import LOCAL
from app.trace.frames import Frame, RecordingWriter, make_header
from app.trace.reading import read_recording
from app.trace.store import user_dir
from app.ui.draft_ui import LAST, LIBRARY, NOTHING, TYPED, revision_of
from app.ui.visitor import Visitor
from tests.test_ui import ROOT, only_recording, page, side_text, start, wait_status  # noqa: F401

DRAFT = " She liked to play in the park with her red ball. One day, she saw a big dog near the old tree."


def saved(path: Path, right_text: str) -> Path:
    """A small finished recording whose right side answered `right_text`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    w = RecordingWriter(path, make_header("p", {"left": {"name": "local-ar", "settings": {}},
                                                "right": {"name": "local-ar", "settings": {}}}))
    w.frame("left", Frame(t=0.1, step=1, tokens=["x"], text="x", final=True))
    w.frame("right", Frame(t=0.1, step=1, tokens=[right_text], text=right_text, final=True))
    w.end("left", "done")
    w.end("right", "done")
    w.close()
    return path


def test_nothing_starts_from_nothing_and_a_typed_draft_is_the_revision() -> None:
    visitor = Visitor(LOCAL)
    assert revision_of([NOTHING, DRAFT, "left", "", 30, "random", "", 0], visitor, None) is None
    r = revision_of([TYPED, DRAFT, "left", "", 45, "a span", "3:9", 0], visitor, None)
    assert r is not None and (r.text, r.share, r.where) == (DRAFT, 0.45, "3:9")
    assert revision_of([TYPED, DRAFT, "left", "", 30, "least sure", "", 0], visitor, None).where == "unsure"


def test_the_seed_box_draws_other_random_tokens_and_a_seed_that_is_not_one_is_refused() -> None:
    visitor = Visitor(LOCAL)
    zero, zero_float, five = (choose(40, revision_of([TYPED, DRAFT, "left", "", 30, "random", "", seed], visitor, None))
                              for seed in (0, 0.0, 5))  # Gradio's Number may send a whole number as a float
    assert zero == zero_float != five and len(five) == 12
    assert revision_of([TYPED, DRAFT, "left", "", 30, "random", "", 5.0], visitor, None).to_json()["seed"] == 5
    for seed in (None, -1, 2.5):
        with pytest.raises(UserError, match="seed must be a whole number of at least 0"):
            revision_of([TYPED, DRAFT, "left", "", 30, "random", "", seed], visitor, None)


@pytest.mark.parametrize(("values", "says"), [
    ([TYPED, "  ", "left", "", 30, "random", "", 0], "The draft is empty"),
    ([TYPED, DRAFT, "left", "", 30, "a span", "", 0], "is not random, unsure or START:END"),
    ([TYPED, DRAFT, "left", "", 130, "random", "", 0], "percentage from 0 to 100"),
    ([LAST, "", "left", "", 30, "random", "", 0], "no saved last race"),
    ([LIBRARY, "", "left", "../x.jsonl", 30, "random", "", 0], "not a file path"),
])
def test_a_draft_that_cannot_be_read_is_refused_naming_the_fix(values: list[Any], says: str) -> None:
    with pytest.raises(UserError, match=says):
        revision_of(values, Visitor(LOCAL), None)


def test_a_visitor_starts_only_from_their_own_recordings(recordings: Path) -> None:
    mine = saved(user_dir("owner-a") / "mine.jsonl", " my own answer")
    saved(user_dir("owner-b") / "theirs.jsonl", " their answer")
    a = Visitor(LOCAL, owner="owner-a")
    r = revision_of([LIBRARY, "", "right", "user/mine.jsonl", 30, "random", "", 0], a, None)
    assert r is not None and r.text == " my own answer"
    with pytest.raises(UserError, match="no recording called theirs.jsonl"):
        revision_of([LIBRARY, "", "right", "user/theirs.jsonl", 30, "random", "", 0], a, None)
    with pytest.raises(UserError, match="not a file path"):
        revision_of([LIBRARY, "", "right", str(mine), 30, "random", "", 0], a, None)


def fill_draft(page: Any, start_from: str, draft: str = "", share: int | None = None, where: str = "random",
               span: str = "", side: str = "left", seed: int | None = None) -> None:
    """Opens "Start from" and sets its values as a visitor would."""
    if not page.is_visible("#start-from"):
        page.click("#draft-box button.label-wrap")
    page.locator("#start-from label", has_text=start_from).click()
    if draft:
        page.locator("#draft-text textarea").fill(draft)
    page.locator("#draft-side label", has_text=side).click()
    if share is not None:
        box = page.locator("#renoise input[type=number]")
        box.fill(str(share))
        box.press("Enter")
    page.locator("#renoise-where label", has_text=where).click()
    if span:
        page.locator("#renoise-span textarea").fill(span)
    if seed is not None:
        box = page.locator("#renoise-seed input")
        box.fill(str(seed))
        box.press("Enter")


def raced(page: Any) -> None:
    """Runs a race from the page and waits for its end: a new run in the player (one loaded before may already be
    done), then done."""
    wait_status(page, "done")  # the player has what it showed before (a fresh page's example loads after it opens)
    run = page.get_attribute(ROOT, "data-run")
    start(page, "Once upon a time, there was a little girl named Lily.")
    page.wait_for_function(f"r => document.querySelector('{ROOT}').dataset.run !== r", arg=run)
    wait_status(page, "done")


@pytest.mark.browser
def test_a_race_starts_from_a_typed_draft_and_the_ar_panel_says_what_it_kept(page: Any, recordings: Path) -> None:
    fill_draft(page, TYPED, DRAFT, share=100, where="a span", span="2:6", seed=3)
    raced(page)
    rec = read_recording(only_recording(recordings))
    assert rec.header["draft"] == {"text": DRAFT, "share": 1.0, "where": "2:6", "seed": 3}  # a whole span: any seed
    left, right = rec.header["sources"]["left"]["draft"], rec.header["sources"]["right"]["draft"]
    assert left["renoised"] == [2, 3, 4, 5] and right["kept_prefix"] == 2
    assert rec.frames["left"][0].revision[:8] == "kkrrrrkk"
    said = side_text(page, "right", "cv-message")
    assert "local-ar cannot revise in place: it keeps the draft's first 2 tokens" in said
    kept = "".join(left["tokens"][6:])
    assert kept in (rec.frames["left"][-1].text or "") and kept in side_text(page, "left", "cv-text")


@pytest.mark.browser
def test_a_race_starts_from_the_last_races_side(page: Any, recordings: Path) -> None:
    raced(page)
    first = only_recording(recordings)
    answer = read_recording(first).frames["right"][-1].text
    fill_draft(page, LAST, share=20, side="right")
    raced(page)
    second = next(p for p in sorted(recordings.glob("*.jsonl")) if p != first)
    header = read_recording(second).header
    assert header["draft"]["text"] == answer and header["draft"]["share"] == 0.2
