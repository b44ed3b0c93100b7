"""What each bundled example's caption says, checked on the recording the page plays (recorded with the shipped twins
by scripts/make_examples.py): blocks, random order, passes, several commits a pass, and no recital."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from app.measure.quality import recited, training_ngrams
from app.trace.frames import Frame
from app.trace.reading import read_recording
from app.trace.store import EXAMPLES_DIR

MODELS = Path(__file__).resolve().parent.parent / "assets" / "models"


def example(name: str) -> dict[str, list[Frame]]:
    return read_recording(EXAMPLES_DIR / f"{name}.jsonl").frames


def commits(frames: list[Frame]) -> list[tuple[list[int], list[bool]]]:
    """(positions committed by a frame, which positions were masked just before it), frame by frame."""
    return [(f.committed or [], before.masked or []) for before, f in zip(frames, frames[1:])]


def not_leftmost(frames: list[Frame], block: int) -> float:
    """The share of commits that were not the leftmost masked position of their block when made."""
    total = away = 0
    for done, masked in commits(frames):
        for pos in done:
            lo = pos // block * block
            left = next(i for i in range(lo, lo + block) if masked[i])
            total, away = total + 1, away + (pos != left)
    return away / total


def test_confidence_blocks_commit_block_by_block_while_the_ar_twin_types_left_to_right() -> None:
    frames = example("01-confidence-blocks")
    blocks = [{pos // 16 for pos in done} for done, _ in commits(frames["left"]) if done]
    assert all(len(b) == 1 for b in blocks) and [min(b) for b in blocks] == sorted(min(b) for b in blocks)
    right = [f.tokens for f in frames["right"] if f.tokens]
    assert all(len(b) == len(a) + 1 and b[:len(a)] == a for a, b in zip(right, right[1:]))


def test_random_order_with_no_blocks_opens_positions_anywhere() -> None:
    assert not_leftmost(example("02-random-order-no-blocks")["left"], 64) > 0.8


def test_sixteen_steps_for_64_tokens_take_a_quarter_of_the_passes_at_a_cost_in_text() -> None:
    from app.engine import diffusion
    from app.engine.diffusion import TWIN_DIFFUSION
    from app.engine.model import load_twin
    from app.measure.quality import quality
    from app.sources.local import twin

    rec = read_recording(EXAMPLES_DIR / "03-few-steps-parallel.jsonl")
    left = rec.frames["left"]
    assert left[-1].nfe == 16 and all(len(done) == 4 for done, _ in commits(left) if done)
    dm, tok = twin("diffusion")
    referee, _ = load_twin("referee", MODELS)
    prompt = tok.encode(rec.header["prompt"])
    s = rec.header["sources"]["left"]["settings"]
    one_a_pass = list(diffusion.generate(dm, prompt, replace(TWIN_DIFFUSION, gen_length=64, steps=64, filter=None,
                                                             threshold=None, scoring=s["scoring"], no_repeat_ngram=0)))
    slow = [int(i) for i in one_a_pass[-1].ids]
    fast = tok.encode("".join(left[-1].tokens))
    assert (quality(referee, tok, [(prompt, fast)])[0]["referee_ppl"]
            > quality(referee, tok, [(prompt, slow)])[0]["referee_ppl"])


def test_the_learned_filter_lands_several_tokens_in_one_pass_not_always_the_leftmost() -> None:
    left = example("05-learned-filter")["left"]
    assert max(len(done) for done, _ in commits(left)) >= 2
    assert not_leftmost(left, 16) > 0.1


def test_the_learned_filter_at_05_costs_text_quality_against_the_page_default() -> None:
    from app.engine.diffusion import TWIN_DIFFUSION
    from app.engine.model import load_twin
    from app.measure.quality import quality, run_diffusion
    from app.sources.local import twin

    rec = read_recording(EXAMPLES_DIR / "05-learned-filter.jsonl")
    assert rec.header["sources"]["left"]["settings"]["filter"] == 0.5 < TWIN_DIFFUSION.filter
    dm, tok = twin("diffusion")
    referee, _ = load_twin("referee", MODELS)
    prompt = tok.encode(rec.header["prompt"])
    default = run_diffusion(dm, prompt, replace(TWIN_DIFFUSION, gen_length=128))[0]
    bolder = tok.encode("".join(rec.frames["left"][-1].tokens))  # the caption: bolder levels cost text quality
    assert (quality(referee, tok, [(prompt, bolder)])[0]["referee_ppl"]
            > quality(referee, tok, [(prompt, default)])[0]["referee_ppl"])


def test_no_example_recites_the_training_stories() -> None:
    known = training_ngrams()
    if known is None:
        pytest.skip("the training stories (../shared/corpus) are not beside the checkout")
    for path in sorted(EXAMPLES_DIR.glob("0[1235]-*.jsonl")):
        for side, frames in read_recording(path).frames.items():
            found, total = recited(["".join(frames[-1].tokens)], known)
            assert total and found / total < 0.05, (path.name, side, found, total)
