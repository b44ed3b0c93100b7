"""The training stories without torch: how the corpus splits into stories, and the held-out stories' openings the
twins bench reads (the split every shipped twin was trained with)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.engine.model import DEFAULT_MODELS_DIR
from app.measure.quality import CORPUS, TRAINING_FILES
from app.training.stories import SPLIT_SEED, held_out_openings, read_stories, split_stories


def write_corpus(path: Path, n: int) -> None:
    """Stories of two paragraphs, a blank line between paragraphs and between stories (like TinyStories a)."""
    path.write_text("\n\n".join(f"Once upon a time, kid {i} had a ball! It was red.\n\nOne day, kid {i} lost it."
                                for i in range(n)) + "\n")


def test_read_stories_splits_blank_line_corpora_at_story_openers(tmp_path: Path) -> None:
    corpus = tmp_path / "s.txt"
    write_corpus(corpus, 10)
    stories = read_stories([str(corpus)])
    assert len(stories) == 10 and all(s.startswith("Once upon a time") for s in stories)
    assert all("\n\nOne day" in s for s in stories)


def test_held_out_openings_are_the_first_sentences_of_the_stories_training_keeps_aside(tmp_path: Path) -> None:
    corpus = tmp_path / "s.txt"
    write_corpus(corpus, 100)
    train, held = split_stories(read_stories([str(corpus)]), SPLIT_SEED)
    openings = held_out_openings([str(corpus)])
    assert len(openings) == len(held) == 3 and not set(held) & set(train)
    assert openings == [h[: h.index("!") + 1] for h in held]  # up to the first sentence's end, whichever mark


def test_the_held_out_openings_are_the_stories_the_shipped_twins_never_trained_on() -> None:
    files = [str(CORPUS / f) for f in TRAINING_FILES]
    if not all(Path(f).is_file() for f in files):
        pytest.skip("the training stories (../shared/corpus) are not beside the repository")
    openings = held_out_openings(files)
    trained = json.loads((DEFAULT_MODELS_DIR / "diffusion.json").read_text())["training"]["data"]
    assert len(openings) == trained["stories_held_out"] == 56
    assert all(o and o[-1] in ".!?" and "\n" not in o for o in openings)


def test_load_streams_joins_files_with_story_starts_shifted_and_each_files_stats(tmp_path) -> None:
    from app.training.stories import joined_stats, load_streams, save_stream

    save_stream(tmp_path / "a.npz", [5, 6, 1, 7, 1], [0, 3], {"stories": 2, "tokens": 5, "seconds": 1.0})
    save_stream(tmp_path / "b.npz", [8, 9, 1], [0], {"stories": 1, "tokens": 3, "seconds": 2.5})
    tokens, starts, stats = load_streams([str(tmp_path / "a.npz"), str(tmp_path / "b.npz")])
    assert tokens.tolist() == [5, 6, 1, 7, 1, 8, 9, 1] and starts.tolist() == [0, 3, 5]
    assert joined_stats(stats[:1]) == stats[0]
    assert joined_stats(stats) == {"stories": 3, "tokens": 8, "seconds": 3.5, "parts": stats}
