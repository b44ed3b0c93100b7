"""An answer cut by its length says so in its panel ("Cut at 8 tokens: ..."), live, in a recording and in the player
drawn by Chromium; an answer that ended on its own, or a side stopped, says nothing of the kind (issue 51 item 2)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from app.cli.record import record
from app.trace.frames import Frame
from app.trace.reading import read_recording
from app.view.payload import recording_payload
from app.view.side import SENTENCES, cut_at, cut_note, recorded_sides
from tests.fixtures import needs_twins

PROMPT = "Once upon a time, a little turtle found a map in the sand."


def final(n: int) -> Frame:
    return Frame(t=1.0, step=n, final=True, usage={"prompt_tokens": 5, "completion_tokens": n})


def test_a_final_answer_as_long_as_its_length_setting_is_cut_and_a_shorter_one_is_not() -> None:
    source = {"name": "local-ar", "settings": {"gen_length": 128}}
    assert cut_at(source, [final(128)]) == 128
    assert cut_note(source, [final(128)]) == SENTENCES["cut"].replace("{n}", "128")
    assert "Cut at 128 tokens" in str(cut_note(source, [final(128)]))
    assert cut_at(source, [final(90)]) is None  # ended at end-of-text
    assert cut_at({"name": "openai", "settings": {"max_tokens": 64}}, [final(64)]) == 64  # any source's limit
    unfinished = Frame(t=1.0, step=9, final=False, usage={"completion_tokens": 128})
    assert cut_at(source, [unfinished]) is None and cut_at(source, []) is None
    assert cut_at({"name": "replay", "settings": {}}, [final(128)]) is None  # no length setting, nothing claimed


@pytest.fixture(scope="module")
def cut_race(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path]:
    """A real race of the twins, recorded: the diffusion twin at 16 tokens, the AR twin at 8 (it writes past 8 on
    this prompt)."""
    out = tmp_path_factory.mktemp("cut") / "race.jsonl"
    update = record(PROMPT, "local-diffusion", "local-ar", out,
                    settings={"left": {"gen_length": 16, "steps": 16}, "right": {"gen_length": 8}})
    return update, out


@needs_twins
def test_the_live_race_and_its_recording_say_an_answer_was_cut_at_its_length(cut_race: tuple[dict[str, Any],
                                                                                            Path]) -> None:
    update, out = cut_race
    sides = update["sides"]
    rec = read_recording(out)
    for key, n in (("left", 16), ("right", 8)):
        tokens = rec.frames[key][-1].usage["completion_tokens"]
        said = f"Cut at {n} tokens"
        assert (said in (sides[key]["message"] or "")) == (tokens == n), (key, tokens, sides[key]["message"])
        assert recorded_sides(rec)[key].message == sides[key]["message"]
    assert tokens == 8 and "Cut at 8 tokens" in sides["right"]["message"]  # the test can fail: the AR twin was cut
    assert recording_payload(rec)["sides"]["right"]["message"] == sides["right"]["message"]


@needs_twins
@pytest.mark.browser
def test_the_player_shows_the_cut_in_the_panel(cut_race: tuple[dict[str, Any], Path], browser: Any,
                                              tmp_path: Path) -> None:
    from app.export.html import export_html

    _, out = cut_race
    page = export_html(out, tmp_path / "race.html")
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    tab = context.new_page()
    try:
        tab.goto(page.as_uri())
        tab.wait_for_selector("#converge[data-status=done]")
        shown = tab.text_content("#converge .cv-side[data-side=right] .cv-message")
        assert shown is not None and "Cut at 8 tokens" in shown
        assert tab.is_visible("#converge .cv-side[data-side=right] .cv-message")
    finally:
        context.close()
