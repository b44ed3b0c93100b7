"""The guard against repeated runs every twin sampler runs alike (app/engine/repeats.py): transformers' rule left to
right, the gap-aware rule for diffusion, one declaration on by default for each twin, and shown in the settings."""

from __future__ import annotations

import argparse

import numpy as np
import pytest

from app.engine import autoregressive, diffusion, uniform
from app.engine.autoregressive import TWIN_AR, ARSettings
from app.engine.diffusion import TWIN_DIFFUSION, DiffusionSettings
from app.engine.model import ModelConfig, random_model
from app.engine.options import TWIN_NO_REPEAT_NGRAM, TWIN_STUTTER_GUARD, declared, settings_spec
from app.engine.repeats import NoRepeatNGram
from app.engine.uniform import UniformSettings
from tests.fixtures import needs_twins

EOS = 0


def repeated_runs(ids: list[int], n: int) -> int:
    """Runs of n tokens (without end-of-text) that repeat an earlier one."""
    runs = [tuple(ids[i:i + n]) for i in range(len(ids) - n + 1) if EOS not in ids[i:i + n]]
    return len(runs) - len(set(runs))


def small(causal: bool) -> object:
    """A model of six usable tokens: runs of three repeat in any long answer unless something forbids them."""
    return random_model(ModelConfig(vocab_size=8, n_layer=1, n_head=2, n_embd=16, max_len=97, causal=causal,
                                    mask_id=1, eos_id=EOS, pad_id=2), seed=3)


def test_left_to_right_the_guard_bans_what_transformers_no_repeat_ngram_processor_bans() -> None:
    """On random sequences the tokens banned for the next position are exactly those of transformers'
    NoRepeatNGramLogitsProcessor (run here, the library itself), for runs of 2, 3 and 4."""
    torch = pytest.importorskip("torch")
    processors = pytest.importorskip("transformers.generation.logits_process")
    rng = np.random.default_rng(0)
    differed = 0
    for n in (2, 3, 4):
        for _ in range(40):
            seq = rng.integers(1, 6, size=int(rng.integers(n, 30))).tolist()
            ours = np.zeros((1, 6))
            NoRepeatNGram(n, eos_id=99).ban(ours, [*seq, -1], [True] * len(seq) + [False], [len(seq)])
            theirs = processors.NoRepeatNGramLogitsProcessor(n)(torch.tensor([seq]), torch.zeros(1, 6))
            assert (np.isinf(ours[0]) == torch.isinf(theirs[0]).numpy()).all(), (n, seq)
            differed += int(np.isinf(ours).any())
    assert differed > 0  # the test can fail: some sequences have a banned next token


def test_with_gaps_a_token_is_banned_only_where_it_completes_a_run_of_written_tokens() -> None:
    """Diffusion writes in any order: at a gap, a token is out when the run of n written positions through it would
    repeat a written run, from the left or the right; a run still holding an unwritten gap bans nothing."""
    guard = NoRepeatNGram(3, eos_id=EOS)
    tokens = [5, 6, 7, 4, -1, 6, 7, -1, 3]  # "5 6 7" is written; position 4 sits before "6 7", position 7 after them
    written = [t != -1 for t in tokens]
    z = np.zeros((2, 8))
    guard.ban(z, tokens, written, [4, 7])
    assert np.flatnonzero(np.isinf(z[0])).tolist() == [5]  # 5 at 4 would write "5 6 7" again
    assert np.flatnonzero(np.isinf(z[1])).tolist() == [4]  # 4 after "6 7" would write "6 7 4" again
    z = np.zeros((1, 8))
    guard.ban(z, [5, 6, 7, -1, -1, 6, 7], [True, True, True, False, False, True, True], [3])
    assert not np.isinf(z).any()  # the runs through position 3 all hold the gap at 4


def test_rows_written_together_keep_only_those_that_repeat_no_run_with_the_rows_kept_before() -> None:
    guard = NoRepeatNGram(2, eos_id=EOS)
    tokens, written = [5, 6, -1, -1, -1], [True, True, False, False, False]
    kept = guard.fresh([0, 1, 2], [5, 6, 7], tokens, written, [2, 3, 4])
    assert kept.tolist() == [0, 2]  # "6 5" and "5 6" would repeat "5 6": the second row waits
    assert NoRepeatNGram(0, eos_id=EOS).fresh([2, 0], [5, 6, 7], tokens, written, [2, 3, 4]).tolist() == [0, 2]


@pytest.mark.parametrize("kind", ["ar", "diffusion", "uniform"])
def test_each_twin_sampler_never_repeats_a_run_with_the_guard_and_does_without_it(kind: str) -> None:
    found = {}
    for n in (0, 3):
        found[n] = 0
        for seed in range(4):
            if kind == "ar":
                last = list(autoregressive.generate(small(True), [5, 6, 7], ARSettings(
                    gen_length=40, temperature=1.0, seed=seed, no_repeat_ngram=n, stop_at_eos=False)))[-1]
                ids = last.ids
            elif kind == "diffusion":
                ids = list(diffusion.generate(small(False), [5, 6, 7], DiffusionSettings(
                    gen_length=32, steps=32, block_length=16, threshold=None, temperature=1.0, seed=seed,
                    no_repeat_ngram=n, stop_at_eos=False)))[-1].ids.tolist()
            else:
                ids = uniform.decode(small(False), [5, 6, 7], UniformSettings(
                    gen_length=32, steps=32, block_length=16, temperature=1.0, seed=seed, no_repeat_ngram=n,
                    stop_at_eos=False)).ids.tolist()
            found[n] += repeated_runs([5, 6, 7, *ids], 3)
    assert found[0] > 0  # the test can fail: with six usable tokens, runs of three repeat without the guard
    assert found[3] == 0


def test_the_ar_twins_shortest_answer_keeps_end_of_text_out_of_its_first_tokens() -> None:
    """This random model repeats its last token, so after a prompt ending in its end-of-text id it ends at once: an
    empty answer, unless the shortest-answer setting (the twins' default: 1) holds end-of-text off."""
    model = random_model(ModelConfig(vocab_size=8, n_layer=1, n_head=2, n_embd=16, max_len=97, causal=True,
                                     mask_id=1, eos_id=4, pad_id=2), seed=3)
    answers = {n: list(autoregressive.generate(model, [5, 4], ARSettings(gen_length=8, min_length=n)))[-1].ids
               for n in (0, 1)}
    assert answers[0] == [] and len(answers[1]) >= 1
    assert TWIN_AR.min_length == TWIN_DIFFUSION.min_length == 1


def test_every_twin_declares_the_one_guard_alike_and_on_by_default() -> None:
    """One declaration (app/engine/options.py `no_repeat_ngram`) for the AR, masked and uniform twins, the same run
    length on by default for each twin, and the page shows it in each twin's settings."""
    options = [declared(cls)["no_repeat_ngram"][1] for cls in (ARSettings, DiffusionSettings, UniformSettings)]
    assert options[0] == options[1] == options[2]
    assert TWIN_NO_REPEAT_NGRAM >= 2
    for twin in (TWIN_AR, TWIN_DIFFUSION, UniformSettings()):
        assert twin.no_repeat_ngram == TWIN_NO_REPEAT_NGRAM
        spec = settings_spec(twin)["no_repeat_ngram"]
        assert spec["default"] == TWIN_NO_REPEAT_NGRAM and "no_repeat_ngram_size" in spec["info"]
    assert ARSettings().no_repeat_ngram == DiffusionSettings().no_repeat_ngram == 0  # Hugging Face models: off


def test_every_twin_declares_the_stutter_guard_alike_and_runs_it_by_default() -> None:
    """The stutter guard (`no_repeat`) is one declaration for the AR, masked and uniform twins, at the same default for
    each (no guard one side lacks), shown in each twin's settings; Hugging Face models keep it off."""
    options = [declared(cls)["no_repeat"][1] for cls in (ARSettings, DiffusionSettings, UniformSettings)]
    assert options[0] == options[1] == options[2]
    assert TWIN_STUTTER_GUARD
    for twin in (TWIN_AR, TWIN_DIFFUSION, UniformSettings()):
        assert twin.no_repeat is TWIN_STUTTER_GUARD
        assert settings_spec(twin)["no_repeat"]["label"] == "Stutter guard"
    assert not ARSettings().no_repeat and not DiffusionSettings().no_repeat


def test_a_word_written_twice_with_no_space_counts_as_a_glued_double() -> None:
    """The stutter guard keeps " They" from following " They" but not "They" (another token): "TheyThey" is the
    stutter the word pairs miss, so the guard's rows count it."""
    from app.measure.quality import glued, stutter

    texts = ["They TheyThey played.", "Mama said the book book was fun.", "TheThe end"]
    assert glued(texts) == 2  # "theythey" and "thethe"; "mama" is a word
    assert stutter(["They TheyThey played."])[0] == 0  # what the word pairs alone would say


@needs_twins
def test_twin_guard_compare_gives_both_twins_each_guard_alike() -> None:
    """`python -m scripts.twin_guard --compare`: one row per twin and guard, both twins under the same run length
    and stutter guard, with the guard rows' figures."""
    from app.bench.twins import EVAL_PROMPTS, GUARD_KEYS, bench
    from scripts.twin_guard import guard_config

    guards = (guard_config("4:off"), guard_config("4:on"))
    assert guards == ((4, False), (4, True))
    with pytest.raises(argparse.ArgumentTypeError, match="RUN:on"):
        guard_config("4:maybe")
    out = bench(prompts=EVAL_PROMPTS[:1], seeds=(0,), guard_only=True, guards=guards)["guard"]
    for name, (n, on) in (("runs_of_4", guards[0]), ("runs_of_4_and_stutter_guard", guards[1])):
        for kind in ("ar", "diffusion"):
            row = out[f"{kind}_{name}"]
            assert (row["settings"]["no_repeat_ngram"], row["settings"]["no_repeat"]) == (n, on)
            assert row["answers"] == 2 and set(GUARD_KEYS) <= set(row)
