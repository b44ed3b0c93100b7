"""The uniform-state sampler on a small random numpy model: a canvas of noise, never a mask; accepted positions stay;
every network call is a pass; one seed, one run; the step budget holds."""

from __future__ import annotations

import numpy as np
import pytest

from app.engine import uniform
from app.engine.model import ModelConfig, random_model
from app.engine.uniform import UniformSettings
from app.errors import UserError

PROMPT = [5, 6, 7, 8, 9, 10]


class Counted:
    """The model with its network calls counted."""

    def __init__(self, model):
        self.model, self.calls = model, 0
        for name in ("vocab_size", "mask_id", "eos_id", "pad_id", "max_len", "repeatable"):
            setattr(self, name, getattr(model, name))

    def logits(self, ids, cache=None, start=0):
        self.calls += 1
        return self.model.logits(ids, cache, start)


@pytest.fixture(scope="module")
def mlm():
    return random_model(ModelConfig(vocab_size=64, n_layer=2, n_head=2, n_embd=32, max_len=97, causal=False,
                                    mask_id=1, eos_id=0, pad_id=2), seed=0)


def run(model, **kw) -> list[uniform.UniformStep]:
    """The sampler's plain rule: the guard and the stability stop off unless a test turns them on."""
    kw.setdefault("stop_at_eos", False)
    kw.setdefault("no_repeat", False)
    kw.setdefault("stable_passes", 0)
    return list(uniform.generate(model, PROMPT, UniformSettings(**kw)))


def test_the_canvas_starts_as_noise_and_never_holds_a_mask_or_a_special_token_as_noise(mlm) -> None:
    steps = run(mlm, gen_length=32, steps=32, block_length=8)
    first = steps[0]
    assert first.nfe == 0 and not first.accepted.any() and first.noise.all()
    assert len(set(first.ids.tolist())) > 8  # random tokens, not one repeated placeholder
    for s in steps:
        assert mlm.mask_id not in s.ids
        assert not np.isin(s.ids[s.noise], [mlm.mask_id, mlm.eos_id, mlm.pad_id]).any()
    assert steps[-1].done and steps[-1].accepted.all()


def test_accepted_positions_never_change_and_noise_is_redrawn(mlm) -> None:
    steps = run(mlm, gen_length=32, steps=24, block_length=16, entropy_bound=None)
    redrawn = 0
    for before, after in zip(steps, steps[1:]):
        assert (after.accepted | ~before.accepted).all()  # nothing accepted is ever given back
        assert (after.ids[before.accepted] == before.ids[before.accepted]).all()
        assert set(after.newly) == set(np.flatnonzero(after.accepted & ~before.accepted).tolist())
        lo, hi = after.block
        still = np.flatnonzero(after.noise[lo:hi]) + lo
        redrawn += int((after.ids[still] != before.ids[still]).sum())
        assert (after.ids[hi:] == before.ids[hi:]).all()  # later blocks keep the noise they started with
        assert after.accepted[:lo].all() and not after.accepted[hi:].any()
    assert redrawn > 0


def test_nfe_counts_every_network_call(mlm) -> None:
    counted = Counted(mlm)
    steps = list(uniform.generate(counted, PROMPT, UniformSettings(gen_length=32, steps=32, block_length=8,
                                                                     stop_at_eos=False)))
    assert steps[-1].nfe == counted.calls == len(steps) - 1
    assert [s.nfe for s in steps] == list(range(len(steps)))


def test_one_seed_gives_one_run_and_another_seed_another(mlm) -> None:
    a, b = run(mlm, gen_length=16, steps=16, block_length=8, seed=3), run(mlm, gen_length=16, steps=16,
                                                                          block_length=8, seed=3)
    assert len(a) == len(b) and all((x.ids == y.ids).all() and (x.accepted == y.accepted).all() for x, y in zip(a, b))
    c = run(mlm, gen_length=16, steps=16, block_length=8, seed=4)
    assert not (c[0].ids == a[0].ids).all()
    hot = run(mlm, gen_length=16, steps=16, block_length=8, seed=3, temperature=1.0)
    again = run(mlm, gen_length=16, steps=16, block_length=8, seed=3, temperature=1.0)
    assert all((x.ids == y.ids).all() for x, y in zip(hot, again))


@pytest.mark.parametrize("steps,block", [(4, 16), (8, 8), (5, 16)])
def test_the_step_budget_holds_and_the_last_pass_of_a_block_accepts_everything(mlm, steps, block) -> None:
    out = run(mlm, gen_length=32, steps=steps, block_length=block, entropy_bound=None)
    assert out[-1].nfe <= steps and out[-1].accepted.all() and out[-1].done
    shares = uniform.budgets(UniformSettings(gen_length=32, steps=steps, block_length=block))
    assert sum(shares) == steps
    per_block: dict = {}
    for s in out[1:]:
        per_block[s.block] = per_block.get(s.block, 0) + 1
    assert all(n <= shares[lo // block] for (lo, _), n in per_block.items())


def test_with_no_bound_each_pass_accepts_one_position_and_a_loose_bound_accepts_many(mlm) -> None:
    one = run(mlm, gen_length=16, steps=16, block_length=16, entropy_bound=None)
    assert all(len(s.newly) == 1 for s in one[1:]) and one[-1].nfe == 16
    many = run(mlm, gen_length=16, steps=16, block_length=16, entropy_bound=50.0)
    assert max(len(s.newly) for s in many[1:-1]) > 1 and many[-1].nfe < 16 and many[-1].accepted.all()


def test_the_bound_is_diffusiongemmas_the_lowest_entropies_summed_less_their_largest() -> None:
    from app.engine.uniform import accept_rows

    entropy = np.array([0.9, 0.1, 0.3, 2.0, 0.2])
    assert accept_rows(entropy, 1 - entropy, 0.35, last=False).tolist() == [1, 2, 4]  # 0.1 + 0.2 <= 0.35
    assert accept_rows(entropy, 1 - entropy, 0.05, last=False).tolist() == [1]  # at least the least uncertain
    assert accept_rows(entropy, 1 - entropy, None, last=False).tolist() == [1]
    assert accept_rows(entropy, 1 - entropy, 0.05, last=True).tolist() == [0, 1, 2, 3, 4]


def test_it_stops_after_the_block_that_accepted_an_end_of_text(mlm) -> None:
    class Ends(Counted):
        def logits(self, ids, cache=None, start=0):
            out = super().logits(ids, cache, start).copy()
            out[:, self.eos_id] = 50.0
            return out

    steps = list(uniform.generate(Ends(mlm), PROMPT, UniformSettings(gen_length=32, steps=32, block_length=8)))
    assert steps[-1].done and steps[-1].block == (0, 8) and len(uniform.answer(steps[-1], mlm.eos_id)) == 0


def test_settings_that_cannot_work_name_the_fix(mlm) -> None:
    with pytest.raises(UserError, match="does not divide"):
        UniformSettings(gen_length=32, steps=32, block_length=12).validate()
    with pytest.raises(UserError, match="cannot cover"):
        UniformSettings(gen_length=32, steps=2, block_length=8).validate()


class Favours(Counted):
    """The model with one token far likelier than any other at every position: left alone it writes it twice."""

    def __init__(self, model, token: int):
        super().__init__(model)
        self.token = token

    def logits(self, ids, cache=None, start=0):
        out = super().logits(ids, cache, start).copy()
        out[:, self.token] += 8.0
        return out


class Still(Counted):
    """The model with the same logits whatever the canvas holds: its guesses hold still from the first pass."""

    def logits(self, ids, cache=None, start=0):
        self.calls += 1
        return self.model.logits(np.arange(len(ids)) % 50 + 3)


def doubled(ids: np.ndarray) -> int:
    seq = [PROMPT[-1], *ids.tolist()]
    return sum(a == b for a, b in zip(seq, seq[1:]))


@pytest.mark.parametrize("bound", [None, 0.5, 50.0])
def test_the_stutter_guard_never_accepts_a_token_beside_the_same_token(mlm, bound) -> None:
    model = Favours(mlm, 20)
    kw = dict(gen_length=32, steps=32, block_length=8, entropy_bound=bound, stop_at_eos=False, stable_passes=0)
    plain = list(uniform.generate(model, PROMPT, UniformSettings(no_repeat=False, **kw)))[-1]
    guarded = list(uniform.generate(model, PROMPT, UniformSettings(no_repeat=True, **kw)))
    assert doubled(plain.ids) > 10  # without the guard, the favoured token fills the answer
    assert doubled(guarded[-1].ids) == 0 and guarded[-1].accepted.all()
    assert (guarded[-1].ids == 20).sum() >= 12  # it still writes the favoured token, every other place


def test_the_temperature_falls_from_temperature_to_final_temperature_over_each_blocks_steps(mlm) -> None:
    s = UniformSettings(gen_length=32, steps=32, block_length=16, temperature=0.8, final_temperature=0.4)
    assert [round(uniform.temperature_at(s, k, 16), 3) for k in (0, 15)] == [0.8, 0.4]
    assert uniform.temperature_at(UniformSettings(temperature=0.7), 5, 16) == 0.7  # off: it stays

    def likeliest_at_the_last_pass(final: float | None) -> list[bool]:
        out = []
        for seed in range(6):
            steps = run(mlm, gen_length=8, steps=4, block_length=8, temperature=2.0, final_temperature=final,
                        seed=seed, entropy_bound=None)
            before, last = steps[-2], steps[-1]
            logits = mlm.logits(np.concatenate([PROMPT, before.ids]))[len(PROMPT):]
            out.append(bool((last.ids[last.newly] == logits[last.newly].argmax(axis=-1)).all()))
        return out

    assert all(likeliest_at_the_last_pass(0.001))  # fallen to near 0: the likeliest token at every open place
    assert not all(likeliest_at_the_last_pass(None))  # kept at 2: sampled, often not the likeliest


def test_the_stability_stop_accepts_the_block_once_the_guesses_hold_still(mlm) -> None:
    kw = dict(gen_length=32, steps=32, block_length=8, entropy_bound=None, stop_at_eos=False, no_repeat=False)
    patient = list(uniform.generate(Still(mlm), PROMPT, UniformSettings(stable_passes=0, **kw)))
    assert patient[-1].nfe == 32  # one position a pass, eight passes a block
    stopped = list(uniform.generate(Still(mlm), PROMPT, UniformSettings(stable_passes=1, **kw)))
    assert stopped[-1].nfe == 8 and stopped[-1].accepted.all()  # the second pass of each block saw the first's guesses
    assert [len(s.newly) for s in stopped[1:3]] == [1, 7]
    wary = list(uniform.generate(Still(mlm), PROMPT, UniformSettings(stable_passes=2, **kw)))
    assert wary[-1].nfe == 12
    noisy = list(uniform.generate(mlm, PROMPT, UniformSettings(stable_passes=1, **kw)))
    assert noisy[-1].nfe > 8  # a model that reads the fresh noise changes its guesses, so blocks take longer


def test_the_doubled_tokens_measure_counts_a_token_that_repeats_the_one_before_it_but_not_layout() -> None:
    from app.measure.quality import doubled

    repeatable = np.zeros(64, dtype=bool)
    repeatable[9] = True  # a newline, say: two make a paragraph break
    assert doubled([([5, 6], [6, 7, 7, 8])], repeatable) == (2, 4)  # against the prompt's last token too
    assert doubled([([5, 6], [9, 9, 8, 8]), ([1], [])], repeatable) == (1, 4)
    assert doubled([([5, 6], [9, 9])], None) == (1, 2)  # without a list, every token counts
