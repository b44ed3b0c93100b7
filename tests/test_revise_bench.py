"""`python -m app bench --only revise` (issue 53) on one held-out opening: planted mistakes are where the planting says,
and the figures it reports are read from the runs (what a revision kept and repaired, its passes)."""

from __future__ import annotations

import pytest

from app.bench.revise import DRAFT_TOKENS, bench, held_out_drafts
from app.engine.model import load_twin
from app.measure.drafts import WORD, plant, scored
from app.measure.quality import CORPUS, TRAINING_FILES
from app.training.stories import SPLIT_SEED, read_stories, split_stories


def test_planting_replaces_the_share_of_words_and_nothing_else() -> None:
    _, tok = load_twin("ar")
    draft = tok.encode(" She liked to play in the park with her red ball. One day, she saw a big dog near the tree.")
    words = [i for i, p in enumerate(tok.token_strings(draft)) if WORD.match(p)]
    pool = tok.encode(" cloud seven purple window")
    planted, where = plant(tok, draft, 0.3, pool, seed=4)
    assert len(where) == round(0.3 * len(words)) and set(where) <= set(words)
    assert [i for i, (a, b) in enumerate(zip(draft, planted)) if a != b] == where
    assert planted == plant(tok, draft, 0.3, pool, seed=4)[0] != plant(tok, draft, 0.3, pool, seed=5)[0]


def test_scores_count_kept_repaired_and_restored() -> None:
    clean, planted = [1, 2, 3, 4], [1, 9, 3, 8]
    assert scored([1, 2, 3, 7], planted, clean, [1, 3]) == {"kept": 0.5, "repaired": 1.0, "restored": 0.5}
    assert scored([1, 9], planted, clean, [1, 3]) == {"kept": 0.5, "repaired": 0.5, "restored": 0.0}


def test_the_drafts_are_held_out_stories_no_model_wrote() -> None:
    """The drafts are cut from held-out training stories: the prompt is the story's first sentence and the draft its
    next tokens, spelled by the twins' tokenizer (issue 53: the AR twin once wrote the drafts it then rewrote)."""
    _, tok = load_twin("ar")
    stories = held_out_drafts(tok, 3)
    if not stories:
        pytest.skip("the training stories (../shared/corpus) are not beside the checkout")
    files = [str(CORPUS / f) for f in TRAINING_FILES]
    _, held = split_stories(read_stories(files), SPLIT_SEED)
    for opening, draft in stories:
        assert len(draft) == DRAFT_TOKENS
        story = next(s.strip() for s in held if s.strip().startswith(opening))
        assert story[len(opening):].startswith(tok.decode(draft))


def test_the_section_reports_each_twin_revising_and_from_scratch() -> None:
    report = bench(drafts=1, seeds=(0,), shares=(0.3,))
    if "skipped" in report:
        pytest.skip(report["skipped"])
    assert set(report["scratch"]) == {"masked", "uniform", "ar"} and report["draft_tokens"] == DRAFT_TOKENS
    for kind in ("masked", "uniform", "ar"):
        row = report["revise"][f"{kind}_30%"]
        assert row["worst_seed"] == 0 and row["pooled"] == row["worst"]
        assert 0 <= row["pooled"]["kept"] <= 1 and 0 <= row["pooled"]["restored"] <= row["pooled"]["repaired"] <= 1
        assert row["pooled"]["passes"] >= 1 and row["pooled"]["referee_ppl"] > 1
    assert report["revise"]["ar_30%"]["pooled"]["passes"] > DRAFT_TOKENS  # it reads its doubt a token at a time
