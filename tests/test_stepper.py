"""Be the sampler, in the engine: a learner's picks commit exactly what they chose, letting the model choose commits
what the configured rule would, pins stay put, and every call of the network counts as a forward pass."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from app.engine import diffusion, stepper
from app.engine.diffusion import TWIN_DIFFUSION, DiffusionSettings
from app.engine.model import ModelConfig, random_model
from app.errors import UserError
from app.sources.local import twin
from tests.test_samplers import network_calls

PROMPT = [5, 6, 7, 8, 9, 10]


@pytest.fixture(scope="module")
def mlm():
    return random_model(ModelConfig(vocab_size=64, n_layer=2, n_head=2, n_embd=32, max_len=97, causal=False,
                                    mask_id=1, eos_id=0, pad_id=2), seed=0)


def settings(**kw) -> DiffusionSettings:
    base = dict(gen_length=16, steps=16, block_length=8, threshold=None, stop_at_eos=False)
    return DiffusionSettings(**{**base, **kw})


def same_step(a: diffusion.Step, b: diffusion.Step) -> None:
    assert (a.ids == b.ids).all() and (a.masked == b.masked).all() and np.allclose(a.confidence, b.confidence)
    assert (a.committed, a.remasked, a.nfe, a.done, a.candidates, a.refreshes) == (
        b.committed, b.remasked, b.nfe, b.done, b.candidates, b.refreshes)


def test_start_offers_candidates_for_every_masked_position_of_the_first_block(mlm) -> None:
    state = stepper.start(mlm, PROMPT, settings())
    assert state.open == list(range(8)) and not state.done and state.chosen_by is None
    cands = state.candidates()
    assert sorted(cands) == state.open
    for pos, top in cands.items():
        assert len(top) == stepper.SHOWN
        probs = [p for _, p in top]
        assert probs == sorted(probs, reverse=True) and top[0][1] == pytest.approx(state.confidence()[pos])
        assert all(token != mlm.mask_id for token, _ in top)


def test_user_picks_commit_exactly_those_positions_and_tokens(mlm) -> None:
    state = stepper.start(mlm, PROMPT, settings(remask=0.9))
    second = state.candidates()[5][1][0]  # not the model's guess at position 5
    after = stepper.advance(mlm, state, {2: None, 5: second})
    assert after.chosen_by == stepper.USER
    assert after.step.committed == [2, 5] and after.step.remasked == []
    assert after.step.ids[2] == state.guesses()[2] and after.step.ids[5] == second
    assert np.flatnonzero(~after.step.masked).tolist() == [2, 5]
    assert after.step.confidence[5] == pytest.approx(state.candidates()[5][1][1])
    assert after.open == [0, 1, 3, 4, 6, 7]


def test_a_state_is_never_changed_by_the_steps_after_it(mlm) -> None:
    state = stepper.start(mlm, PROMPT, settings())
    before = (state.run.x.copy(), state.run.masked.copy(), state.run.nfe, state.open)
    stepper.advance(mlm, state, {0: None})
    stepper.advance(mlm, state, None)
    assert (state.run.x == before[0]).all() and (state.run.masked == before[1]).all()
    assert (state.run.nfe, state.open) == before[2:]


@pytest.mark.parametrize("kw", [dict(), dict(scoring="margin", remask=0.6, temperature=0.8, seed=3),
                                dict(scoring="random", steps=6, block_length=16), dict(threshold=0.2)])
def test_letting_the_model_choose_each_time_is_the_samplers_own_run(mlm, kw) -> None:
    s = settings(**kw)
    expected = list(diffusion.generate(mlm, PROMPT, s))
    state = stepper.start(mlm, PROMPT, s)
    got = [state.step]
    while not state.done:
        rule = state.rule()
        state = stepper.advance(mlm, state)
        assert state.chosen_by == stepper.MODEL and state.step.committed == rule
        got.append(state.step)
    assert len(got) == len(expected)
    for a, b in zip(got, expected):
        same_step(a, b)


def test_the_model_choice_follows_the_twins_configured_rule_and_filter() -> None:
    model, tok = twin("diffusion")
    s = dataclasses.replace(TWIN_DIFFUSION, gen_length=32, steps=32, filter=0.6)  # the twin ships a filter: use it
    prompt = tok.encode("Once upon a time, there was a little girl named Lily.")
    expected = list(diffusion.generate(model, prompt, s))
    state = stepper.start(model, prompt, s)
    got = [state.step]
    while not state.done:
        state = stepper.advance(model, state)
        got.append(state.step)
    assert len(got) == len(expected) and any(len(st.committed) > 1 for st in got)  # the filter committed several
    for a, b in zip(got, expected):
        same_step(a, b)


def test_after_the_learners_picks_the_model_goes_on_by_its_rule(mlm) -> None:
    state = stepper.advance(mlm, stepper.start(mlm, PROMPT, settings()), {7: None, 6: None, 5: None})
    rule = state.rule()
    assert len(rule) == 1 and rule[0] in state.open  # 5 left in the block, 15 passes left: one a pass
    after = stepper.advance(mlm, state)
    assert after.step.committed == rule and after.chosen_by == stepper.MODEL


def test_the_learner_may_take_more_passes_than_the_schedule_and_the_rule_then_commits_the_rest(mlm) -> None:
    state = stepper.start(mlm, PROMPT, settings(steps=2, block_length=8))  # one pass a block
    assert len(state.rule()) == 8
    state = stepper.advance(mlm, state, {0: None})
    assert len(state.rule()) == 7  # the block's budget is spent: the rule commits everything left
    state = stepper.advance(mlm, state)
    assert state.open == list(range(8, 16)) and state.run.block == 1


def test_pins_are_never_offered_and_never_move(mlm) -> None:
    pins = {3: 40, 4: 41, 12: 42}
    state = stepper.start(mlm, PROMPT, settings(), pins)
    assert 3 not in state.open and 4 not in state.open
    with pytest.raises(UserError, match="not a masked position"):
        stepper.advance(mlm, state, {3: None})
    while not state.done:
        state = (stepper.advance(mlm, state, {state.open[-1]: None}) if len(state.open) % 2
                 else stepper.advance(mlm, state))
        assert all(state.step.ids[p] == t and not state.step.masked[p] for p, t in pins.items())
    assert not state.step.masked.any()


def test_every_call_of_the_network_counts_as_a_forward_pass(mlm) -> None:
    with network_calls(mlm) as calls:
        state = stepper.start(mlm, PROMPT, settings(dual_cache=False))
        assert calls[0] == state.run.nfe == 1 and state.step.nfe == 0  # the start shows the pass's candidates
        passes = [state.step.nfe]
        while not state.done:
            state = stepper.advance(mlm, state, {state.open[0]: None} if len(state.open) > 4 else None)
            passes.append(state.step.nfe)
    assert passes == list(range(len(passes)))  # each commit takes the pass before it
    assert calls[0] == state.run.nfe == passes[-1]


def test_picks_the_pass_cannot_take_are_refused_with_the_fix(mlm) -> None:
    state = stepper.start(mlm, PROMPT, settings())
    with pytest.raises(UserError, match="Pick at least one"):
        stepper.advance(mlm, state, {})
    with pytest.raises(UserError, match="current block"):
        stepper.advance(mlm, state, {9: None})
    with pytest.raises(UserError, match="rules out token"):
        stepper.advance(mlm, state, {0: mlm.mask_id})
    with pytest.raises(UserError, match="rules out token"):
        stepper.advance(mlm, state, {0: 10_000})
    done = state
    while not done.done:
        done = stepper.advance(mlm, done)
    with pytest.raises(UserError, match="complete"):
        stepper.advance(mlm, done)
