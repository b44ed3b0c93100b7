"""Start from a draft (issue 53): which positions a revision re-noises, and the letters a frame carries."""

from __future__ import annotations

import numpy as np
import pytest

from app.engine.draft import Plan, Revision, choose, letters
from app.errors import UserError


def test_random_positions_are_the_share_drawn_with_the_seed() -> None:
    picked = choose(40, Revision("a draft", share=0.3, seed=5))
    assert len(picked) == 12 and list(picked) == sorted(set(picked)) and all(0 <= p < 40 for p in picked)
    assert picked == choose(40, Revision("a draft", share=0.3, seed=5))
    assert picked != choose(40, Revision("a draft", share=0.3, seed=6))


def test_unsure_takes_the_most_uncertain_positions() -> None:
    entropy = np.array([0.1, 2.0, 0.3, 1.5, 0.2, 0.9, 0.0, 3.0, 0.4, 0.5])
    assert choose(10, Revision("d", share=0.3, where="unsure"), entropy) == (1, 3, 7)
    with pytest.raises(ValueError):
        choose(10, Revision("d", share=0.3, where="unsure"))


def test_a_span_re_noises_its_share_within_the_span() -> None:
    assert choose(20, Revision("d", share=1.0, where="4:9")) == (4, 5, 6, 7, 8)
    half = choose(20, Revision("d", share=0.5, where="4:12"))
    assert len(half) == 4 and all(4 <= p < 12 for p in half)
    assert choose(6, Revision("d", share=1.0, where="4:9")) == (4, 5)  # cut at the draft's end


@pytest.mark.parametrize("bad", [{"text": "  "}, {"share": 1.5}, {"share": -0.1}, {"where": "middle"},
                                 {"where": "9:4"}, {"where": "4:"}])
def test_a_bad_revision_names_the_fix(bad: dict) -> None:
    with pytest.raises(UserError):
        Revision(**{"text": "a draft", **bad})


def test_a_span_past_the_draft_is_refused() -> None:
    with pytest.raises(UserError, match="starts past"):
        choose(5, Revision("d", where="8:12"))


def test_letters_mark_kept_edited_renoised_and_beyond() -> None:
    draft = ["The", " cat", " sat", " down"]
    tokens = ["The", " dog", "[M]", " down", "."]
    assert letters(draft, (1, 2), tokens, [False, False, True, False, False]) == "ker k.".replace(" ", "")
    assert letters(draft, (), draft, [False] * 4) == "kkkk"


def test_plan_json_says_how_a_side_revises() -> None:
    plan = Plan(tokens=(5, 6, 7), renoised=(1,), mode="prefix", kept_prefix=1, note="")
    assert plan.to_json(["a", "b", "c"]) == {"mode": "prefix", "renoised": [1], "length": 3,
                                             "tokens": ["a", "b", "c"], "kept_prefix": 1}


def test_a_typed_draft_continues_the_prompt_with_a_space_as_a_model_writes_it() -> None:
    assert Revision("She went home.").continuing("Lily smiled.") == " She went home."
    assert Revision(" She went home.").continuing("Lily smiled.") == " She went home."
    assert Revision("She went home.").continuing("Lily smiled. ") == "She went home."
    assert Revision(", and then").continuing("Lily smiled") == ", and then"
