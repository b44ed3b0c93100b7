"""The learned commit rule (Learn2PD): fitting, saving, and the sampler committing what the filter calls safe."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from app.engine import commit_filter, diffusion
from app.engine.diffusion import DiffusionSettings
from app.engine.model import ModelConfig, load_twin, random_model
from app.errors import UserError


def masked_lm():
    """A small random bidirectional model (eos 63, so random text rarely ends early)."""
    return random_model(ModelConfig(vocab_size=64, n_layer=1, n_head=2, n_embd=32, max_len=97, causal=False,
                                    mask_id=1, eos_id=63, pad_id=2), seed=0)


class Always:
    """A filter that calls every masked position safe (or none), recording what it was shown."""

    def __init__(self, score: float):
        self.value, self.seen = score, 0

    def observe(self, rows: np.ndarray, positions: np.ndarray, guesses: np.ndarray) -> np.ndarray:
        assert rows.shape == (len(positions), len(commit_filter.FEATURES))
        self.seen += len(rows)
        return np.full(len(rows), self.value)


def test_fit_learns_a_rule_the_features_carry() -> None:
    rng = np.random.default_rng(0)
    X = rng.random((4000, len(commit_filter.FEATURES))).astype(np.float32)
    y = (X[:, 0] + 0.5 * X[:, -2] > 0.8).astype(np.float64)  # sure and long-held guesses are final
    f = commit_filter.fit(X, y)
    assert ((f.score(X) > 0.5) == (y > 0.5)).mean() > 0.95


def test_a_saved_filter_scores_the_same_after_loading(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    X = rng.random((500, len(commit_filter.FEATURES))).astype(np.float32)
    f = commit_filter.fit(X, (X[:, 1] > 0.5).astype(np.float64), epochs=20)
    f.about = {"rows": 500}
    f.save(tmp_path / "diffusion.filter.safetensors")
    g = commit_filter.load(tmp_path / "diffusion.filter.safetensors")
    assert np.allclose(f.score(X), g.score(X)) and g.about == {"rows": 500}


def test_the_sampler_commits_every_position_the_filter_calls_safe() -> None:
    model = masked_lm()
    s = DiffusionSettings(gen_length=32, steps=32, block_length=16, threshold=None, filter=0.9, stop_at_eos=False)
    sure = Always(1.0)
    steps = list(diffusion.generate(model, [5, 6, 7], s, commit_filter=sure))
    assert steps[-1].nfe == 2 and [len(st.committed) for st in steps[1:]] == [16, 16]  # a whole block per pass
    unsure = Always(0.0)
    steps = list(diffusion.generate(model, [5, 6, 7], s, commit_filter=unsure))
    assert steps[-1].nfe == 32 and unsure.seen > 0  # nothing safe: the schedule's one token per pass


def test_a_filter_on_a_model_without_one_is_refused_with_the_fix() -> None:
    with pytest.raises(UserError, match="no learned commit filter.*turn the filter off"):
        list(diffusion.generate(masked_lm(), [5, 6],
                                DiffusionSettings(gen_length=16, steps=16, block_length=16, filter=0.8)))
    with pytest.raises(UserError, match="filter must be above 0"):
        DiffusionSettings(filter=1.5).validate()


def test_the_built_in_twin_loads_with_its_filter_and_uses_it() -> None:
    model, tok = load_twin("diffusion")
    assert model.commit_filter is not None and model.commit_filter.about["rows"] > 1000
    prompt = tok.encode("Once upon a time")
    plain = list(diffusion.generate(model, prompt,
                                    DiffusionSettings(gen_length=32, steps=32, block_length=16, threshold=None)))
    filtered = list(diffusion.generate(model, prompt, DiffusionSettings(gen_length=32, steps=32, block_length=16,
                                                                        threshold=None, filter=0.5)))
    assert filtered[-1].nfe < plain[-1].nfe  # the filter commits some positions together


def test_the_twins_bench_reports_the_defaults_beside_the_filter_and_guards_on_and_off() -> None:
    from app.bench.twins import EVAL_PROMPTS, GUARD_ROW, SPACING, bench
    from app.engine.diffusion import TWIN_DIFFUSION

    out = bench(prompts=EVAL_PROMPTS[:2], seeds=(0, 1), held_out_stories=2)
    assert out["diffusion_default"]["settings"]["filter"] == TWIN_DIFFUSION.filter
    assert out["diffusion_filter_0.6"]["settings"]["filter"] == 0.6
    assert out["diffusion_without_no_repeat_runs"]["settings"]["no_repeat_ngram"] == 0
    assert out[GUARD_ROW]["settings"]["no_repeat"] is not TWIN_DIFFUSION.no_repeat
    guard = out["guard"]  # issue 51: both twins before and after the guard they share, in the same run
    assert guard["ar_after"]["settings"]["no_repeat_ngram"] == TWIN_DIFFUSION.no_repeat_ngram > 0
    assert guard["ar_before"]["settings"]["no_repeat_ngram"] == 0
    for key in ("no_repeat_ngram", "no_repeat"):  # the same guards on both sides of the race
        assert guard["ar_after"]["settings"][key] == guard["diffusion_after"]["settings"][key]
    for row in ("ar_before", "ar_after", "diffusion_before", "diffusion_after"):
        assert guard[row]["answers"] == 6 and guard[row]["referee_ppl"] > 1  # two openings and the race prompt
        assert guard[row]["worst_seed"]["seed"] in (0, 1) and set(guard[row]["referee_ppl_by_seed"]) == {0, 1}
    assert guard["ar_before"]["answers_repeating_a_sentence"] > guard["ar_after"]["answers_repeating_a_sentence"] == 0
    assert out[f"diffusion_min_gap_{SPACING}"]["settings"]["min_gap"] == SPACING != TWIN_DIFFUSION.min_gap
    for row in ("diffusion_default", "diffusion_previous_defaults", "diffusion_filter_0.5", "diffusion_48_steps"):
        assert out[row]["passes"] >= out[row]["refreshes"] > 0 and out[row]["referee_ppl"] > 1
        assert out[row]["word_pairs"] > 0 and out[row]["answers"] == 4
    curve = {tuple(sorted(p["moved"].items())): p for p in out["curve"]}
    fewest_steps = curve[(("filter", None), ("steps", 32))]
    assert fewest_steps["answer_tokens_per_pass"] > 3 > curve[(("filter", 0.9),)]["answer_tokens_per_pass"]
    assert all(p["referee_ppl"] > 1 for p in curve.values())
    stories = out["held_out_story_openings"]
    if "skipped" not in stories:  # greedy defaults: one seed stands for all, on held-out stories' first sentences
        d, a = stories["diffusion_default"], stories["ar_default"]
        assert stories["prompts"] == 2 and d["seeds"] == a["seeds"] == [0]
        assert d["answers"] == a["answers"] == 2 and d["referee_ppl"] > 1 and a["stutter"] is not None


def test_the_page_names_the_shipped_twins_data_early_stopping_self_distillation_and_hardware() -> None:
    from app.ui.about import twins_note

    headline, details = twins_note()
    assert "different training budgets" in headline and "trained from random weights" in details
    assert "early stopping" in details and "40 copies" in details and "H200" in details
    assert "learns from its own stories (self-distillation)" in headline and "AR twin wrote" not in headline
    assert "tokens of its own stories with certainty forcing" in details and "writing its own" in details
    assert "laid out as the states their decodes passed through" in details and "WiSE-FT" in details


def fit_in(folder: Path, *flags: str) -> Any:
    """Runs the fitting command on a copy of the shipped twin in `folder` (on two openings); returns the filter the
    twin then loads. Skips where the training stories are missing."""
    import shutil

    from app.engine.model import DEFAULT_MODELS_DIR
    from app.measure.quality import CORPUS
    from app.training import fit_filter

    files = sorted(str(p) for p in CORPUS.glob("tinystories-*.txt"))
    if not files:
        pytest.skip("the training stories (../shared/corpus) are not beside the repository")
    folder.mkdir(exist_ok=True)
    for name in ("diffusion.safetensors", "diffusion.json", "tokenizer.json"):
        shutil.copy(DEFAULT_MODELS_DIR / name, folder / name)
    fit_filter.main(["--models", str(folder), "--corpus", *files, "--prompts", "2", *flags])
    return load_twin("diffusion", folder)[0].commit_filter


@pytest.fixture(scope="module")
def fitted_one_job(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The fitting command run once in one process (its default, `--jobs 1`), for both tests that read it."""
    return fit_in(tmp_path_factory.mktemp("fit") / "1")


def test_fit_filter_writes_a_filter_the_twin_then_loads(fitted_one_job: Any) -> None:
    about = fitted_one_job.about
    assert about["prompts"] == 2 and about["rows"] > 0 and about["jobs"] == 1


def test_fit_filter_decodes_as_the_page_does_and_in_several_processes_finds_the_same_rows(
        tmp_path: Path, fitted_one_job: Any) -> None:
    """The filter learns the page's own one-token-per-pass decoding of the twin, and --jobs splits the openings
    over processes without losing or adding a row."""
    from app.engine.diffusion import TWIN_DIFFUSION
    from app.training import fit_filter

    s = fit_filter.reference_settings()
    assert (s.scoring, s.block_length, s.no_repeat_ngram) == (TWIN_DIFFUSION.scoring, TWIN_DIFFUSION.block_length,
                                                               TWIN_DIFFUSION.no_repeat_ngram)
    assert s.threshold is None and s.steps == s.gen_length
    rows = {1: fitted_one_job.about["rows"], 2: fit_in(tmp_path / "2", "--jobs", "2").about["rows"]}
    assert rows[1] == rows[2] > 0
