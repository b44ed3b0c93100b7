"""Drafts with planted mistakes (app/measure/drafts.py): the share planted, and repairs read word by word."""

from __future__ import annotations

from app.measure.drafts import plant, repairs, words

STORY = ("Lily went to the park with her mom. She saw a big red ball under a tree. "
         "She kicked the ball and it rolled into the pond. Her mom laughed and helped her get it back.")


def test_plant_replaces_the_share_of_words_with_other_words_of_the_text() -> None:
    p = plant(STORY, 0.3, seed=4)
    n = len(words(STORY))
    assert len(p.mistakes) == round(0.3 * n) and abs(p.share - 0.3) < 0.03
    drafted = words(p.text)
    assert len(drafted) == n
    for i, old, new in p.mistakes:
        assert words(STORY)[i] == old and drafted[i] == new and new.lower() != old.lower()
        assert new.lower() in {w.lower() for w in words(STORY)}
    assert plant(STORY, 0.3, seed=4) == p and plant(STORY, 0.3, seed=5) != p
    assert plant(STORY, 0.0).text == STORY


def test_restoring_the_story_repairs_and_restores_every_mistake() -> None:
    p = plant(STORY, 0.3, seed=1)
    assert repairs(p, STORY) == (len(p.mistakes), len(p.mistakes))
    assert repairs(p, p.text) == (0, 0)


def test_a_mistake_replaced_by_a_third_word_is_repaired_not_restored() -> None:
    p = plant("The cat sat on the mat.", 0.0)
    p = type(p)(p.original, "The dog sat on the mat.", ((1, "cat", "dog"),))
    assert repairs(p, "The bird sat on the mat.") == (1, 0)
    assert repairs(p, "The big cat sat on the mat.") == (1, 0)  # an inserted word shifts the alignment, not the read
    assert repairs(p, "The dog sat on the mat.") == (0, 0)
