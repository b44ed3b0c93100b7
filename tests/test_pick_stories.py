"""Picking the self-distilled stories the AR twin reads most fluently: stutterers dropped, the lowest NLL per answer
token kept, each with its trajectory, in the stream `train.py --kd-data` reads."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from app.engine.model import DEFAULT_MODELS_DIR, load_twin
from app.measure.quality import nll
from app.training import pick_stories, stories

OPENING = "Lily had a red ball."
ANSWERS = ("She liked to play with it in the park every day.",  # fluent
           "Ball the sky green under jumped softly table a.",  # word salad: the AR twin finds it unlikely
           "She played with the ball ball in the park.",  # an adjacent repeat: dropped whatever its NLL
           "One day, she threw it high and her dog ran after it.")  # fluent


# what app.training.self_distill records of stories it sampled
WRITER = {"teacher": "the diffusion twin itself at the page's defaults", "temperature": 0.7, "seconds": 240.0,
          "stories": 4}


def _write(path: Path) -> tuple[list[list[int]], list[list[int]]]:
    """Four stories as self_distill writes them (opening, answer, end-of-text) with made-up decode steps."""
    ar, tok = load_twin("ar", DEFAULT_MODELS_DIR)
    prompt = tok.encode(OPENING)
    texts, orders = [], []
    for i, answer in enumerate(ANSWERS):
        ids = tok.encode(" " + answer)
        texts.append([*prompt, *ids, ar.eos_id])
        orders.append([stories.PROMPT] * len(prompt) + [10 * i + j for j in range(len(ids))] + [stories.NEVER])
    starts = np.cumsum([0, *(len(t) for t in texts)])[:-1].tolist()
    stories.save_stream(path, [t for s in texts for t in s], starts, WRITER, [o for s in orders for o in s])
    return texts, orders


def test_the_most_fluent_share_is_kept_with_its_trajectories_and_stutterers_are_dropped(tmp_path: Path) -> None:
    texts, orders = _write(tmp_path / "all.npz")
    summary = pick_stories.main([str(tmp_path / "all.npz"), "--out", str(tmp_path / "kept.npz"), "--keep", "0.5"])
    assert (summary["of"], summary["stories"], summary["stuttered"]) == (4, 2, 1)
    tokens, starts, _ = stories.load_streams([str(tmp_path / "kept.npz")])
    kept_orders = stories.load_orders([str(tmp_path / "kept.npz")])
    kept = [s.tolist() for s in np.split(tokens, starts[1:])]
    assert kept == [texts[0], texts[3]]  # the two fluent stories, in their order; not the salad, not the stutterer
    assert [o.tolist() for o in np.split(kept_orders, starts[1:])] == [orders[0], orders[3]]
    assert summary["nll_per_token"]["kept"] < summary["nll_per_token"]["all"]


def test_a_storys_score_is_the_ar_twins_nll_per_answer_token(tmp_path: Path) -> None:
    texts, orders = _write(tmp_path / "all.npz")
    tokens, starts, _ = stories.load_streams([str(tmp_path / "all.npz")])
    ar, tok = load_twin("ar", DEFAULT_MODELS_DIR)
    scores = pick_stories.story_scores(ar, tok, tokens, starts, stories.load_orders([str(tmp_path / "all.npz")]))
    n_prompt = len(tok.encode(OPENING))
    answer = texts[1][n_prompt:]
    assert scores[1] == nll(ar, texts[1][:n_prompt], answer) / len(answer)
    assert scores[2] is None and scores[1] > max(scores[0], scores[3])


def test_the_page_says_a_run_learnt_the_share_of_its_own_stories_the_ar_twin_picked(tmp_path: Path) -> None:
    from app.ui.about import _taught, own_stories, written_seconds

    _write(tmp_path / "all.npz")
    summary = pick_stories.main([str(tmp_path / "all.npz"), "--out", str(tmp_path / "kept.npz"), "--keep", "0.5"])
    assert summary["from"] == [WRITER]
    assert own_stories(summary) and written_seconds(summary) == 240.0
    clause = _taught({"data": {"distilled": summary}, "tokens_this_run": 1000, "objective": "masked diffusion"}, [])
    assert "its own stories" in clause and "sampled them at temperature 0.7" in clause and "4 minutes" in clause
    assert "kept the 50% of 4 that the AR twin read most fluently" in clause
