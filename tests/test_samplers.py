"""The diffusion and AR samplers on small random numpy models: schedules, blocks, parallel decoding, caches, errors."""

from __future__ import annotations

import contextlib
import threading
from typing import Iterator

import numpy as np
import pytest

from app.engine import autoregressive, diffusion, stutter
from app.engine.autoregressive import ARSettings
from app.engine.base import MaskedLMBase
from app.engine.diffusion import DiffusionSettings
from app.engine.model import ModelConfig, random_model
from app.errors import UserError

PROMPT = [5, 6, 7, 8, 9, 10]


def config(causal: bool = False, n_layer: int = 2, eos_id: int = 0) -> ModelConfig:
    return ModelConfig(vocab_size=64, n_layer=n_layer, n_head=2, n_embd=32, max_len=97, causal=causal,
                       mask_id=1, eos_id=eos_id, pad_id=2)


@pytest.fixture(scope="module")
def mlm():
    return random_model(config(), seed=0)


def run(model, **kw) -> list[diffusion.Step]:
    kw.setdefault("stop_at_eos", False)
    kw.setdefault("threshold", None)
    return list(diffusion.generate(model, PROMPT, DiffusionSettings(**kw)))


def test_linear_schedule_fills_every_position_in_the_given_steps(mlm) -> None:
    steps = run(mlm, gen_length=32, steps=12, block_length=32)
    assert steps[0].step == 0 and steps[0].masked.all() and steps[0].nfe == 0
    assert [len(s.committed) for s in steps[1:]] == [3] * 8 + [2] * 4
    last = steps[-1]
    assert last.done and last.nfe == 12 and not last.masked.any()
    assert mlm.mask_id not in last.ids
    committed = [i for s in steps for i in s.committed]
    assert sorted(committed) == list(range(32))
    for s in steps[1:]:  # committed cells show the probability their token had when it was committed
        assert all(0 < s.confidence[i] <= 1 for i in s.committed)


def test_blocks_never_commit_right_of_the_current_block(mlm) -> None:
    steps = run(mlm, gen_length=32, steps=16, block_length=8, threshold=0.05)
    for before, after in zip(steps, steps[1:]):
        block = int(np.flatnonzero(before.masked)[0]) // 8
        assert after.committed and all(block * 8 <= i < (block + 1) * 8 for i in after.committed)
        assert after.masked[(block + 1) * 8:].all()


def test_threshold_decoding_commits_several_tokens_per_forward_pass(mlm) -> None:
    slow = run(mlm, gen_length=32, steps=32, block_length=8)
    fast = run(mlm, gen_length=32, steps=32, block_length=8, threshold=0.05)
    assert slow[-1].nfe == 32
    assert all(len(s.committed) >= 1 for s in fast[1:])
    assert fast[-1].nfe < 32 and not fast[-1].masked.any()
    assert max(len(s.committed) for s in fast) > 1
    factor = run(mlm, gen_length=32, steps=32, block_length=8, factor=4.0)
    assert factor[-1].nfe < 32 and all(len(s.committed) >= 1 for s in factor[1:])


def test_random_scoring_commits_in_a_different_order_than_confidence(mlm) -> None:
    order = {sc: [s.committed for s in run(mlm, gen_length=32, steps=32, block_length=32, scoring=sc)]
             for sc in ("confidence", "random", "margin", "entropy")}
    assert order["random"] != order["confidence"]
    assert all(len(o) == 33 for o in order.values())
    assert sorted(i for c in order["random"] for i in c) == list(range(32))


@pytest.mark.parametrize("scoring", ["random", "margin", "entropy"])
def test_whatever_the_order_the_threshold_judges_confidence_not_the_score(mlm, scoring: str) -> None:
    """Beyond the one scheduled pick, a step commits only positions the model is sure of."""
    for threshold in (0.9, 0.05):
        steps = run(mlm, gen_length=32, steps=32, block_length=32, scoring=scoring, threshold=threshold)
        for after in steps[1:]:
            sure = [i for i in after.committed if after.confidence[i] >= threshold]
            assert len(after.committed) - len(sure) <= 1, (threshold, after.step)
        assert not steps[-1].masked.any()
    assert len(steps) < 33  # at 0.05 the model is sure enough of several positions per step


def test_remasking_reopens_committed_tokens_and_still_finishes(mlm) -> None:
    steps = run(mlm, gen_length=16, steps=16, block_length=16, remask=1.0)
    reopened = [(before, after) for before, after in zip(steps, steps[1:]) if after.remasked]
    assert reopened
    for before, after in reopened:
        assert all(not before.masked[i] and after.masked[i] for i in after.remasked)
        assert not set(after.remasked) & set(after.committed)
    assert steps[-1].nfe == 16 and not steps[-1].masked.any() and not steps[-1].remasked


def test_each_commit_and_reopening_keeps_the_top_candidates_it_was_chosen_from(mlm) -> None:
    steps = run(mlm, gen_length=16, steps=16, block_length=16, remask=1.0)
    for s in steps[1:]:
        assert set(s.candidates) == set(s.committed) | set(s.remasked)
        for pos in s.committed:  # greedy: the committed token is the best candidate, with its confidence
            (best, p), *rest = s.candidates[pos]
            assert best == s.ids[pos] and p == pytest.approx(s.confidence[pos])
            assert len(rest) == 2 and all(q <= p for _, q in rest) and mlm.mask_id not in [i for i, _ in rest]


def test_prefix_cache_gives_the_uncached_result_when_each_block_takes_one_step(mlm) -> None:
    kw = dict(gen_length=32, steps=8, block_length=4, threshold=None, dual_cache=False)
    cached, plain = run(mlm, prefix_cache=True, **kw), run(mlm, prefix_cache=False, **kw)
    assert [s.ids.tolist() for s in cached] == [s.ids.tolist() for s in plain]
    np.testing.assert_allclose(cached[-1].confidence, plain[-1].confidence, rtol=1e-4)
    # with several steps per block the cache is stale inside the block, but the first step of each block is exact
    c2 = run(mlm, gen_length=32, steps=16, block_length=8, dual_cache=False)
    p2 = run(mlm, gen_length=32, steps=16, block_length=8, prefix_cache=False)
    assert [c2[i].ids.tolist() for i in (1, 3)] == [p2[i].ids.tolist() for i in (1, 3)]


def test_dual_cache_recomputes_only_the_block_and_is_exact_at_each_blocks_first_step(mlm) -> None:
    kw = dict(gen_length=32, steps=8, block_length=4)
    dual, plain = run(mlm, dual_cache=True, **kw), run(mlm, prefix_cache=False, **kw)
    assert [s.ids.tolist() for s in dual] == [s.ids.tolist() for s in plain]
    np.testing.assert_allclose(dual[-1].confidence, plain[-1].confidence, rtol=1e-4)
    seen: list[int] = []  # rows the model was asked for, per call
    logits = mlm.logits

    def spy(ids, cache=None, start=0, stop=None):
        out = logits(ids, cache, start, stop)
        seen.append(len(out))
        return out

    mlm.logits = spy  # type: ignore[method-assign]
    try:
        steps = run(mlm, dual_cache=True, gen_length=32, steps=16, block_length=8)
    finally:
        del mlm.logits
    # each block's first step comes from the refresh over the whole sequence; the other 3 recompute its 8 rows
    assert seen == [8] * 12 and not steps[-1].masked.any()


@contextlib.contextmanager
def network_calls(model) -> Iterator[list[int]]:
    """Counts every call of a numpy twin's network (`net.hidden`) while the block runs: [count]."""
    calls = [0]
    hidden = model.net.hidden

    def counting(*args, **kwargs):
        calls[0] += 1
        return hidden(*args, **kwargs)

    model.net.hidden = counting
    try:
        yield calls
    finally:
        del model.net.hidden


@pytest.mark.parametrize("cache", [dict(prefix_cache=False), dict(dual_cache=False), dict(dual_cache=True)])
def test_forward_passes_count_every_call_of_the_network(mlm, cache) -> None:
    with network_calls(mlm) as calls:
        steps = run(mlm, gen_length=32, steps=16, block_length=8, **cache)
    assert calls[0] == steps[-1].nfe == len(steps) - 1
    assert steps[-1].refreshes == (0 if cache.get("prefix_cache") is False else 4)


class Uncached(MaskedLMBase):
    """A real twin seen as a model that keeps no cache and says so (as a Hugging Face masked LM): the base's `caches`
    (False) and `prefix_cache` (refused), and `logits` refuses one; its dual cache alone is no cache."""

    def __init__(self, model) -> None:
        self.model, self.dual_cache = model, True
        self.vocab_size, self.mask_id, self.eos_id, self.max_len = (model.vocab_size, model.mask_id, model.eos_id,
                                                                    model.max_len)

    def logits(self, ids, cache=None, start=0):
        assert cache is None
        return self.model.logits(ids, None, start)


@pytest.mark.parametrize("cache", [dict(), dict(dual_cache=False)])
def test_a_model_that_keeps_no_cache_runs_without_one_and_counts_one_pass_a_step(mlm, cache) -> None:
    model = Uncached(mlm)
    with network_calls(mlm) as calls:
        steps = run(model, gen_length=32, steps=16, block_length=8, **cache)
    assert calls[0] == steps[-1].nfe == 16 and steps[-1].refreshes == 0
    s = diffusion.honoured(model, DiffusionSettings(**cache))
    assert (s.prefix_cache, s.dual_cache) == (False, False)  # what its recording says
    assert diffusion.honoured(mlm, DiffusionSettings(prefix_cache=False)).dual_cache is False  # no dual without it


def test_temperature_sampling_is_seeded(mlm) -> None:
    a = run(mlm, gen_length=16, steps=16, block_length=16, temperature=1.0, seed=3)[-1].ids.tolist()
    b = run(mlm, gen_length=16, steps=16, block_length=16, temperature=1.0, seed=3)[-1].ids.tolist()
    c = run(mlm, gen_length=16, steps=16, block_length=16, temperature=1.0, seed=4)[-1].ids.tolist()
    greedy = run(mlm, gen_length=16, steps=16, block_length=16)[-1].ids.tolist()
    assert a == b and a != c and a != greedy


def writes_eos(causal: bool):
    """A random model whose own end-of-text id shows up in its greedy output (found by trying ids)."""
    for eos in range(3, 64):
        model = random_model(config(causal=causal, eos_id=eos), seed=0)
        if causal:
            out = list(autoregressive.generate(model, PROMPT, ARSettings(gen_length=12, stop_at_eos=False)))[-1].ids
            if eos in out[2:]:
                return model
        elif (run(model, gen_length=32, steps=32, block_length=32)[-1].ids == eos).sum() > 1:
            return model
    raise AssertionError("no id works as end-of-text")


def test_stop_at_eos_ends_once_the_answer_before_end_of_text_is_complete() -> None:
    model = writes_eos(causal=False)
    favourite = model.eos_id
    stopped = list(diffusion.generate(model, PROMPT, DiffusionSettings(gen_length=32, steps=32, block_length=8,
                                                                              threshold=None)))
    last = stopped[-1]
    n = diffusion.answer_length(last.ids, last.masked, favourite)
    assert last.done and n < 32 and not last.masked[:n].any() and last.ids[n] == favourite
    assert last.nfe < 32
    flooded = run(model, gen_length=32, steps=32, block_length=32)
    assert flooded[-1].nfe == 32 and (flooded[-1].ids == favourite).sum() > 1

    held = run(model, gen_length=32, steps=32, block_length=8, eos_discount=0.0)
    for b in range(4):  # with EOS scored 0, a block commits end-of-text only after all its other tokens
        picks = [int(held[-1].ids[i]) for s in held for i in s.committed if b * 8 <= i < (b + 1) * 8]
        first_eos = next((k for k, t in enumerate(picks) if t == favourite), len(picks))
        assert all(t == favourite for t in picks[first_eos:])
    plain = run(model, gen_length=32, steps=32, block_length=8)
    assert (held[-1].ids == favourite).sum() < (plain[-1].ids == favourite).sum()


def test_cancel_stops_between_steps(mlm) -> None:
    cancel = threading.Event()
    seen = []
    for s in diffusion.generate(mlm, PROMPT, DiffusionSettings(gen_length=32, steps=32, block_length=8, threshold=None),
                                cancel):
        seen.append(s)
        if s.nfe == 3:
            cancel.set()
    assert seen[-1].nfe == 3 and not seen[-1].done
    ar = random_model(config(causal=True), seed=1)
    cancel = threading.Event()
    got = []
    for s in autoregressive.generate(ar, PROMPT, ARSettings(gen_length=20, stop_at_eos=False), cancel):
        got.append(s)
        cancel.set()
    assert len(got) == 1


@pytest.mark.parametrize("kw, words", [
    (dict(steps=0), "Steps"),
    (dict(gen_length=32, steps=64), "Steps"),
    (dict(gen_length=32, block_length=12, steps=8), "does not divide"),
    (dict(gen_length=32, block_length=4, steps=4), "blocks"),
    (dict(scoring="loudest"), "scoring"),
    (dict(threshold=0.9, factor=1.0), "not both"),
    (dict(threshold=1.5), "threshold"),
    (dict(remask=2.0), "Remask"),
    (dict(temperature=-1.0), "Temperature"),
    (dict(gen_length=0), "length"),
])
def test_bad_diffusion_settings_name_the_fix(mlm, kw: dict, words: str) -> None:
    with pytest.raises(UserError, match=words):
        list(diffusion.generate(mlm, PROMPT, DiffusionSettings(**{"gen_length": 32, "steps": 16, "block_length": 8,
                                                                  "threshold": None, **kw})))


def test_prompt_errors(mlm) -> None:
    with pytest.raises(UserError, match="empty"):
        next(diffusion.generate(mlm, [], DiffusionSettings(gen_length=32, steps=8, block_length=8)))
    with pytest.raises(UserError, match="shorten the prompt"):
        next(diffusion.generate(mlm, list(range(3, 80)), DiffusionSettings(gen_length=32, steps=8, block_length=8)))
    with pytest.raises(UserError, match="Top-p"):
        next(autoregressive.generate(random_model(config(causal=True)), PROMPT, ARSettings(top_p=0.0)))


def test_ar_kv_cache_matches_recomputing_and_counts_one_pass_per_token() -> None:
    ar = random_model(config(causal=True), seed=2)
    with network_calls(ar) as calls:
        steps = list(autoregressive.generate(ar, PROMPT, ARSettings(gen_length=12, stop_at_eos=False)))
    assert [s.nfe for s in steps] == list(range(1, 13)) and [len(s.ids) for s in steps] == list(range(1, 13))
    assert calls[0] == 12  # the prefill, then one cached decode a token
    ids = [ar.eos_id, *PROMPT]  # the twins run with a leading end-of-text, as in training
    for _ in range(12):
        ids.append(int(np.argmax(ar.net.forward(np.array(ids))[-1])))
    assert steps[-1].ids == ids[1 + len(PROMPT):]
    top1 = list(autoregressive.generate(ar, PROMPT, ARSettings(gen_length=12, stop_at_eos=False, temperature=0.8,
                                                                top_k=1, seed=9)))
    assert top1[-1].ids == steps[-1].ids
    sampled = list(autoregressive.generate(ar, PROMPT, ARSettings(gen_length=12, stop_at_eos=False, temperature=1.5,
                                                                  seed=9)))
    assert sampled[-1].ids != steps[-1].ids


def test_ar_stops_at_end_of_text_without_showing_it() -> None:
    ar = writes_eos(causal=True)
    eos = ar.eos_id
    steps = list(autoregressive.generate(ar, PROMPT, ARSettings(gen_length=12)))
    assert steps[-1].done and eos not in steps[-1].ids and len(steps[-1].ids) < 12
    assert steps[-1].nfe == len(steps[-1].ids) + 1


class Seen(MaskedLMBase):
    """A real model that also remembers how many ids each forward pass was given."""

    def __init__(self, model) -> None:
        self.model, self.lengths = model, []
        self.vocab_size, self.mask_id, self.eos_id, self.max_len = (model.vocab_size, model.mask_id, model.eos_id,
                                                                    model.max_len)

    def logits(self, ids, cache=None, start=0):
        self.lengths.append(len(ids))
        return self.model.logits(ids, cache, start)

    caches = True  # the real model's cache, passed through
    exact_prefix = True  # it passes `upto` on to the real model's cache

    def prefix_cache(self, ids, upto=None):
        return self.model.prefix_cache(ids, upto)


def test_lookahead_limits_what_the_model_sees_right_of_the_block(mlm) -> None:
    whole = run(mlm, gen_length=32, steps=16, block_length=8)
    assert [s.ids.tolist() for s in run(mlm, gen_length=32, steps=16, block_length=8, lookahead=32)] == \
        [s.ids.tolist() for s in whole]
    seen = Seen(mlm)
    steps = run(seen, gen_length=32, steps=16, block_length=8, lookahead=8)
    assert seen.lengths == [len(PROMPT) + min(32, 8 * (b + 2)) for b in range(4) for _ in range(4)]
    assert not steps[-1].masked.any() and steps[1].confidence[16:].max() == 0


def test_bench_quality_figures_agree_with_the_cached_decoder() -> None:
    from app.measure.quality import distinct2, nll

    ar = random_model(config(causal=True), seed=4)
    answer = [11, 12, 13, 11, 12]
    cache, logits = ar.prefill(np.array(PROMPT))
    expected = 0.0
    for token in answer:  # the same likelihood through the KV-cache path, token by token
        z = logits.astype(np.float64)
        expected -= z[token] - z.max() - np.log(np.exp(z - z.max()).sum())
        logits = ar.decode(cache, token)
    assert nll(ar, PROMPT, answer) == pytest.approx(expected, rel=1e-4)
    assert distinct2("a b a b a b") == pytest.approx(2 / 5) and distinct2("one") is None


def test_threshold_bench_picks_the_fastest_setting_within_the_quality_bound() -> None:
    from app.bench.engine import best_within

    rows = {"one_per_step": {"tokens_per_forward": 1.0, "ppl_vs_one_per_step": 1.0, "distinct2": 0.5},
            "threshold_0.3": {"tokens_per_forward": 1.4, "ppl_vs_one_per_step": 1.08, "distinct2": 0.4},
            "threshold_0.1": {"tokens_per_forward": 3.7, "ppl_vs_one_per_step": 3.2, "distinct2": 0.3}}
    assert best_within(rows, 1.1) == {"setting": "threshold_0.3", "tokens_per_forward": 1.4,
                                      "ppl_vs_one_per_step": 1.08, "distinct2": 0.4}
    assert best_within(rows, 0.5) is None


def _adjacent_repeats(ids: np.ndarray, eos_id: int) -> int:
    return int(sum(a == b and a != eos_id for a, b in zip(ids, ids[1:])))


def test_the_stutter_guard_never_writes_a_token_next_to_itself() -> None:
    """A random model with a tiny vocabulary repeats its neighbours often; with the guard, no answer does, whatever
    the order and however many tokens a pass commits together (positions committed together cannot see each other)."""
    small = random_model(ModelConfig(vocab_size=8, n_layer=1, n_head=2, n_embd=16, max_len=97, causal=False,
                                     mask_id=1, eos_id=0, pad_id=2), seed=3)
    prompt = [5, 6, 7]
    found = {False: 0, True: 0}
    for guard in (False, True):
        for seed, (steps, scoring) in enumerate([(32, "confidence"), (8, "confidence"), (8, "random"), (4, "entropy")]):
            s = DiffusionSettings(gen_length=32, steps=steps, block_length=16, scoring=scoring, threshold=None,
                                  temperature=1.0, seed=seed, no_repeat=guard, stop_at_eos=False)
            last = list(diffusion.generate(small, prompt, s))[-1]
            assert not last.masked.any()
            found[guard] += _adjacent_repeats(np.concatenate([[prompt[-1]], last.ids]), small.eos_id)
    assert found[False] > 5  # the test can fail: without the guard this model stutters
    assert found[True] == 0


def test_the_ar_twins_stutter_guard_never_writes_the_token_just_written() -> None:
    """The guard left to right: a random causal model with a tiny vocabulary repeats its last token often (the
    prompt's last included); with the guard no answer does."""
    small = random_model(ModelConfig(vocab_size=8, n_layer=1, n_head=2, n_embd=16, max_len=97, causal=True,
                                     mask_id=1, eos_id=0, pad_id=2), seed=3)
    prompt = [5, 6, 7]
    found = {False: 0, True: 0}
    for guard in (False, True):
        for seed in range(4):
            s = ARSettings(gen_length=40, temperature=1.0, seed=seed, no_repeat=guard, stop_at_eos=False)
            ids = list(autoregressive.generate(small, prompt, s))[-1].ids
            found[guard] += _adjacent_repeats(np.array([prompt[-1], *ids]), small.eos_id)
    assert found[False] > 5  # the test can fail: without the guard this model stutters
    assert found[True] == 0


def test_the_ar_twins_stutter_guard_lets_newlines_punctuation_and_end_of_text_repeat() -> None:
    repeatable = stutter.wordless(["", "\n", "!", " book", "a"])
    for left, banned in ((3, [3]), (4, [4]), (1, []), (2, []), (0, []), (None, [])):
        z = np.zeros(5)
        stutter.no_repeat_left(z, left, eos_id=0, repeatable=repeatable)
        assert np.flatnonzero(np.isinf(z)).tolist() == banned, left
    z = np.zeros(5)
    stutter.no_repeat_left(z, 2, eos_id=0)  # a model that declares nothing repeatable: every token but end-of-text
    assert np.isinf(z[2])


def test_the_stutter_guard_commits_only_the_left_of_two_equal_guesses_side_by_side() -> None:
    chosen = np.array([3, 3, 3, 4])
    assert stutter.apart(np.array([0, 1, 2, 3]), chosen, eos_id=0).tolist() == [0, 3]
    assert stutter.apart(np.array([1, 3]), chosen, eos_id=0).tolist() == [1, 3]  # not side by side in this pass
    assert stutter.apart(np.array([0, 1]), np.array([0, 0, 5, 5]), eos_id=0).tolist() == [0, 1]  # end-of-text may


def test_the_shortest_answer_setting_keeps_end_of_text_out_of_the_first_positions() -> None:
    small = random_model(ModelConfig(vocab_size=8, n_layer=1, n_head=2, n_embd=16, max_len=97, causal=False,
                                     mask_id=1, eos_id=0, pad_id=2), seed=3)
    early = {0: 0, 6: 0}
    for shortest in early:
        for seed in range(8):
            s = DiffusionSettings(gen_length=32, steps=16, block_length=16, threshold=None, temperature=1.0, seed=seed,
                                  min_length=shortest, stop_at_eos=False)
            last = list(diffusion.generate(small, [5, 6, 7], s))[-1]
            early[shortest] += int((last.ids[:6] == small.eos_id).sum())
    assert early[0] > 0  # the test can fail: this model writes end-of-text anywhere
    assert early[6] == 0


def test_no_repeated_runs_never_writes_the_same_run_of_tokens_twice() -> None:
    small = random_model(ModelConfig(vocab_size=8, n_layer=1, n_head=2, n_embd=16, max_len=97, causal=False,
                                     mask_id=1, eos_id=0, pad_id=2), seed=3)

    def repeated_runs(ids: list[int], n: int) -> int:
        runs = [tuple(ids[i:i + n]) for i in range(len(ids) - n + 1) if 0 not in ids[i:i + n]]
        return len(runs) - len(set(runs))

    found = {}
    for n in (0, 3):
        found[n] = 0
        for seed in range(4):
            s = DiffusionSettings(gen_length=32, steps=32, block_length=16, threshold=None, temperature=1.0, seed=seed,
                                  no_repeat_ngram=n, stop_at_eos=False)
            last = list(diffusion.generate(small, [5, 6, 7], s))[-1]
            found[n] += repeated_runs([5, 6, 7, *last.ids.tolist()], 3)
    assert found[0] > 0  # the test can fail: with six usable tokens, runs of three repeat without the setting
    assert found[3] == 0


def test_commit_spacing_keeps_the_commits_of_one_pass_apart(mlm) -> None:
    """With a low threshold a pass commits neighbours together; with min_gap none of one pass's commits are nearer
    than the gap, the answer is still complete, and it takes more passes than without the spacing."""
    near, passes = {}, {}
    for gap in (1, 3):
        steps = run(mlm, gen_length=32, steps=32, block_length=16, threshold=0.02, min_gap=gap)
        assert not steps[-1].masked.any()
        near[gap] = sum(b - a < 3 for s in steps for a, b in zip(s.committed, s.committed[1:]))
        passes[gap] = steps[-1].nfe
    assert near[1] > 0  # the test can fail: without the spacing this threshold commits neighbours together
    assert near[3] == 0 and passes[3] > passes[1]


def test_commit_spacing_keeps_the_schedules_rows_and_takes_the_surest_extra_rows_first() -> None:
    sure = np.array([0.2, 0.9, 0.95, 0.5, 0.8, 0.7])
    assert diffusion.spaced(np.array([0]), np.array([1, 2, 3, 4, 5]), sure, 2).tolist() == [0, 2, 4]
    assert diffusion.spaced(np.array([0]), np.array([1, 2, 3, 4, 5]), sure, 1).tolist() == [0, 1, 2, 3, 4, 5]
    assert diffusion.spaced(np.array([0, 1]), np.array([], dtype=np.int64), sure, 3).tolist() == [0, 1]


def test_the_stutter_guard_lets_newlines_and_punctuation_repeat() -> None:
    """A paragraph break is two newline tokens and "!!" two marks: layout, not a repeated word."""
    repeatable = stutter.wordless(["", "\n", "!", " book", "a"])  # end-of-text decodes to nothing
    assert repeatable.tolist() == [True, True, True, False, False]
    x = np.array([3, 1, 2, 9, 9])  # prompt " book", then the answer: "\n", "!", two masked rows
    masked = np.array([False, False, True, True])
    z = np.zeros((2, 5))
    stutter.no_repeat(z, x, masked, 1, 2, eos_id=0, repeatable=repeatable)
    assert np.isfinite(z).all()  # the rows beside "!" may guess "!" again
    z = np.zeros((4, 5))
    stutter.no_repeat(z, x, np.ones(4, dtype=bool), 1, 0, eos_id=0, repeatable=repeatable)
    assert np.isinf(z[0, 3]) and np.isfinite(z[0, 1])  # the first row beside the prompt's " book" may not repeat it
    chosen = np.array([1, 1, 3, 3])
    assert stutter.apart(np.arange(4), chosen, eos_id=0, repeatable=repeatable).tolist() == [0, 1, 2]
