"""Be the sampler's run on the built-in twin, without the page: what the canvas and the pickers show, the notes that
compare the learner's order with the rule's, and the recording it saves (who chose each frame, a stop before the
end)."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.errors import UserError
from app.lessons import by_hand
from app.sources.local import EOS_MARK, make_local_diffusion
from app.trace.reading import read_recording

PROMPT = "Once upon a time, there was a little girl named Lily."


def source(**settings):
    base = {"gen_length": 32, "block_length": 16, "scoring": "confidence", "temperature": 0.0, "threshold": 0.0,
            "filter": 0.0}
    return make_local_diffusion(**{**base, **settings})


def test_the_canvas_names_who_committed_each_position_and_numbers_the_open_ones() -> None:
    run = by_hand.begin(source(pins=["20: the end"]), PROMPT)
    pinned = [pos for pos, who in enumerate(run.by) if who == "pin"]
    assert pinned and all(16 <= p < 32 for p in pinned)
    first = by_hand.canvas(run)
    assert first[:16] == [(f"[{p}]", "open") for p in range(16)]
    assert all(first[p][1] == "pin" for p in pinned) and {who for _, who in first[16:]} == {"masked", "pin"}
    run = by_hand.advance(run, {4: None})
    run = by_hand.advance(run)
    shown = by_hand.canvas(run)
    model = next(p for p in run.state.step.committed)
    assert shown[4] == (run.frames[-1].tokens[4], "you") and shown[model] == (run.frames[-1].tokens[model], "model")
    assert sum(who == "open" for _, who in shown) == 14


def test_each_picker_offers_the_candidates_best_first_with_odd_strings_written_plainly() -> None:
    run = by_hand.begin(source(), PROMPT)
    offered = by_hand.choices(run)
    assert [pos for pos, _, _ in offered] == run.state.open
    for pos, confidence, cands in offered:
        assert len(cands) == 5 and confidence == pytest.approx(run.state.confidence()[pos])
        assert cands[0][1] == run.state.guesses()[pos]  # at temperature 0 the guess is the top candidate
        assert all(label.startswith("\u201c") or label.startswith(EOS_MARK) for label, _ in cands)
    assert by_hand.quoted(" a\nb\t<img src=x>") == "\u201c a\\nb\\t<img src=x>\u201d"  # the page's Radio escapes it


def test_the_notes_compare_the_learners_order_with_the_rules() -> None:
    run = by_hand.begin(source(), PROMPT)
    rule = run.state.rule()
    mine = next(p for p in run.state.open if p not in rule)
    run = by_hand.advance(run, {mine: None})
    assert run.note == (f"You committed position {mine}; "
                        f"by confidence the model would have committed position {rule[0]}.")
    rule = run.state.rule()
    run = by_hand.advance(run)
    assert run.note == f"The model committed position {rule[0]} by confidence."


def test_the_notes_name_positions_as_positions_never_as_a_bare_count() -> None:
    run = by_hand.begin(source(), PROMPT)
    two = run.state.open[:2]
    run = by_hand.advance(run, {p: None for p in two})
    assert run.note.startswith(f"You committed positions {two[0]} and {two[1]}; by confidence the model would have "
                               "committed position")
    named = [by_hand.named_positions(p) for p in ([], [3], [1, 4, 9])]
    assert named == ["no position", "position 3", "positions 1, 4 and 9"]


def test_the_recording_marks_each_frame_with_who_chose_and_plays_at_the_models_pace(tmp_path: Path) -> None:
    run = by_hand.begin(source(), PROMPT)
    run = by_hand.advance(run, {run.state.open[-1]: None})
    run = by_hand.advance(run)
    rec = read_recording(by_hand.save(run, tmp_path))
    frames = rec.frames["left"]
    assert [f.chosen_by for f in frames] == [None, "user", "model"]
    assert rec.ends["left"]["status"] == "stopped" and "before the answer was complete" in rec.ends["left"]["message"]
    assert [f.t for f in frames] == sorted(f.t for f in frames) and frames[0].t == 0
    done = read_recording(by_hand.save(by_hand.finish(run), tmp_path))
    assert done.ends["left"]["status"] == "done" and done.frames["left"][-1].final
    assert {f.chosen_by for f in done.frames["left"][3:]} == {"model"}
    assert done.header["sources"]["left"]["name"] == "you+local-diffusion" and done.header["prompt"] == PROMPT


def test_a_block_too_long_to_choose_from_by_hand_is_refused_with_the_fix() -> None:
    with pytest.raises(UserError, match="at most 32"):
        by_hand.begin(source(gen_length=64, block_length=64), PROMPT)
    with pytest.raises(UserError, match="prompt is empty"):
        by_hand.begin(source(), "   ")


@pytest.mark.parametrize("spec", ["local-ar", "hf-ar:gpt2", "openai:gpt-4o", "mercury"])
def test_a_source_that_types_left_to_right_cannot_be_stepped_by_hand(spec: str) -> None:
    with pytest.raises(UserError, match="cannot be stepped by hand: only a masked diffusion model"):
        by_hand.steppable(spec)


def test_an_autoregressive_source_given_to_the_stepper_is_refused_with_the_same_sentence() -> None:
    from app.sources.local import make_local_ar

    with pytest.raises(UserError, match="local-ar cannot be stepped by hand"):
        by_hand.begin(make_local_ar(), PROMPT)
