"""Start from a draft in the twins' samplers (issue 53): the masked twin commits the draft but for its re-noised
positions, the uniform twin lays it on the noise, and `unsure` reads the model's doubt in one forward pass."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from app.engine import autoregressive, diffusion, uniform
from app.engine.autoregressive import TWIN_AR
from app.engine.diffusion import TWIN_DIFFUSION, DiffusionSettings
from app.engine.draft import Plan, Revision, causal_surprisal, choose, surprisal
from app.engine.model import random_model
from app.engine.uniform import UniformSettings
from app.errors import UserError
from tests.test_samplers import PROMPT, config

DRAFT = tuple(range(20, 44))  # 24 ordinary tokens of the test model
RENOISED = (2, 5, 6, 11, 17, 23)


def masked_settings(**over: object) -> DiffusionSettings:
    base = dict(gen_length=32, steps=32, block_length=8, threshold=None, stop_at_eos=False, seed=1)
    return DiffusionSettings(**{**base, **over})  # type: ignore[arg-type]


def test_the_masked_twin_starts_from_the_draft_with_the_re_noised_positions_masked() -> None:
    model = random_model(config(), seed=0)
    steps = list(diffusion.generate(model, PROMPT, masked_settings(), draft=Plan(DRAFT, RENOISED, nfe=1)))
    first, last = steps[0], steps[-1]
    kept = [i for i in range(len(DRAFT)) if i not in RENOISED]
    assert first.masked[list(RENOISED)].all() and not first.masked[kept].any() and first.masked[len(DRAFT):].all()
    assert first.ids[kept].tolist() == [DRAFT[i] for i in kept] and first.nfe == 1
    for st in steps:  # without remask the kept draft stands, and only the open positions are committed
        assert st.ids[kept].tolist() == [DRAFT[i] for i in kept]
        assert not set(st.committed) & set(kept)
    assert last.done and not last.masked.any()
    assert last.nfe == 1 + len(steps) - 1  # the choosing pass, then one pass a step


def test_remask_may_reopen_a_draft_token_the_model_doubts() -> None:
    model = random_model(config(), seed=0)
    s = masked_settings(remask=1.0, temperature=1.0, steps=24)
    steps = list(diffusion.generate(model, PROMPT, s, draft=Plan(DRAFT, RENOISED)))
    reopened = {p for st in steps for p in st.remasked}
    assert reopened & (set(range(len(DRAFT))) - set(RENOISED))  # a draft token, never re-noised, was reopened


def test_a_draft_that_fills_the_answer_with_nothing_re_noised_ends_in_no_pass() -> None:
    model = random_model(config(), seed=0)
    full = tuple(range(20, 52))
    steps = list(diffusion.generate(model, PROMPT, masked_settings(), draft=Plan(full, ())))
    assert len(steps) == 2 and steps[-1].done and steps[-1].nfe == 0 and steps[-1].ids.tolist() == list(full)
    ust = list(uniform.generate(model, PROMPT, UniformSettings(gen_length=32, steps=32, block_length=8),
                                draft=Plan(full, ())))
    assert ust[-1].done and ust[-1].nfe == 0 and ust[-1].ids.tolist() == list(full)


def test_the_uniform_twin_lays_the_draft_on_noise_and_keeps_it() -> None:
    model = random_model(config(), seed=0)
    s = UniformSettings(gen_length=32, steps=32, block_length=8, stop_at_eos=False, seed=4)
    steps = list(uniform.generate(model, PROMPT, s, draft=Plan(DRAFT, RENOISED, nfe=1)))
    first, last = steps[0], steps[-1]
    kept = [i for i in range(len(DRAFT)) if i not in RENOISED]
    assert first.accepted[kept].all() and not first.accepted[list(RENOISED)].any()
    assert not first.accepted[len(DRAFT):].any() and first.nfe == 1
    assert first.ids[kept].tolist() == [DRAFT[i] for i in kept]
    noise = set(uniform.noise_ids(model).tolist())
    assert all(int(t) in noise for t in first.ids[list(RENOISED)])  # re-noised: ordinary tokens, never masks
    assert last.done and last.accepted.all() and last.ids[kept].tolist() == [DRAFT[i] for i in kept]
    assert last.nfe == 1 + len(steps) - 1


@pytest.mark.parametrize("sampler", ["masked", "uniform"])
def test_a_draft_longer_than_the_answer_is_refused_naming_the_fix(sampler: str) -> None:
    model = random_model(config(), seed=0)
    long = Plan(tuple(range(20, 60)), ())
    run = (diffusion.generate(model, PROMPT, masked_settings(), draft=long) if sampler == "masked" else
           uniform.generate(model, PROMPT, UniformSettings(gen_length=32, steps=32), draft=long))
    with pytest.raises(UserError, match="raise the answer length to 40"):
        next(run)


def test_pins_and_a_draft_together_are_refused() -> None:
    model = random_model(config(), seed=0)
    with pytest.raises(UserError, match="not both"):
        next(diffusion.generate(model, PROMPT, masked_settings(), pins={3: 11}, draft=Plan(DRAFT, RENOISED)))


def test_unsure_finds_planted_mistakes_in_a_draft_the_ar_twin_wrote() -> None:
    """On the shipped twins: the AR twin writes a draft, six of its tokens are replaced by other words, and each
    diffusion twin's one forward pass (and the AR twin's own reading) ranks most of them among its six least sure."""
    from app.sources.local import twin

    am, tok = twin("ar")
    prompt = tok.encode("Tom had a small boat. He took it to the lake every morning.")
    written = list(autoregressive.generate(am, prompt, dataclasses.replace(TWIN_AR, gen_length=40)))[-1]
    tokens = list(written.ids)
    rng = np.random.default_rng(7)
    planted = sorted(int(p) for p in rng.choice(len(tokens), size=6, replace=False))
    words = [t for t in tok.encode(" table window purple seven music cloud") if t not in tokens]
    for p, w in zip(planted, words):
        tokens[p] = w
    revision = Revision(tok.decode(tokens), share=6 / len(tokens), where="unsure")
    for kind in ("diffusion", "uniform"):
        model, _ = twin(kind)
        found = set(choose(len(tokens), revision, surprisal(model, prompt, tokens))) & set(planted)
        assert len(found) >= 4, (kind, found, planted)
    found = set(choose(len(tokens), revision, causal_surprisal(am, prompt, tokens))) & set(planted)
    assert len(found) >= 4, ("ar", found, planted)


def test_the_twin_defaults_revise_a_draft_end_to_end() -> None:
    """The shipped masked twin at its page defaults fills a re-noised draft and keeps the rest."""
    from app.sources.local import twin

    model, tok = twin("diffusion")
    prompt = tok.encode("Once upon a time, there was a little girl named Lily.")
    draft = tuple(tok.encode(" She liked to play in the park with her red ball. One day, she saw a big dog."))
    plan = Plan(draft, choose(len(draft), Revision("d", share=0.3, seed=2)))
    s = DiffusionSettings(**{**TWIN_DIFFUSION.to_json(), "gen_length": 32, "steps": 32})
    last = list(diffusion.generate(model, prompt, s, draft=plan))[-1]
    kept = np.flatnonzero(plan.kept)
    assert last.done and last.ids[kept].tolist() == [draft[i] for i in kept]
