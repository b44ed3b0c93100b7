"""The twin's own stories for self-distillation: written at the page's defaults after training-story openings, in the
token stream the training command reads with --kd-data."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from app.engine import diffusion
from app.engine.model import DEFAULT_MODELS_DIR, load_twin
from app.measure.quality import CORPUS, TRAINING_FILES, run_diffusion
from app.training import self_distill, stories


def test_the_twin_writes_its_own_answers_after_training_openings_each_ending_with_end_of_text(tmp_path: Path) -> None:
    files = [str(CORPUS / f) for f in TRAINING_FILES]
    if not all(Path(f).is_file() for f in files):
        pytest.skip("the training stories (../shared/corpus) are not beside the repository")
    out = tmp_path / "self.npz"
    stats = self_distill.main(["--corpus", *files, "--out", str(out), "--stories", "2", "--gen-length", "16"])
    data = np.load(out)
    assert stats["stories"] == len(data["starts"]) == 2
    assert json.loads(str(data["stats"]))["command"] == stats["command"]
    model, tok = load_twin("diffusion", DEFAULT_MODELS_DIR)
    prompts = self_distill.training_openings(tok, files, 2, 0)
    settings = replace(diffusion.TWIN_DIFFUSION, gen_length=16, steps=16)
    for story, prompt in zip(np.split(data["tokens"], data["starts"][1:]), prompts):
        last = list(diffusion.generate(model, prompt, settings))[-1]
        answer = last.ids[: diffusion.answer_length(last.ids, last.masked, model.eos_id)].tolist()
        assert story.tolist() == [*prompt, *answer, model.eos_id]  # the page's answer, then end-of-text


def test_with_a_temperature_each_story_is_the_twins_sampled_answer_with_its_own_seed(tmp_path: Path) -> None:
    files = [str(CORPUS / f) for f in TRAINING_FILES]
    if not all(Path(f).is_file() for f in files):
        pytest.skip("the training stories (../shared/corpus) are not beside the repository")
    out = tmp_path / "sampled.npz"
    stats = self_distill.main(["--corpus", *files, "--out", str(out), "--stories", "3", "--gen-length", "16",
                               "--temperature", "1.0"])
    assert stats["temperature"] == 1.0
    data = np.load(out)
    model, tok = load_twin("diffusion", DEFAULT_MODELS_DIR)
    prompts = self_distill.training_openings(tok, files, 3, 0)
    sampled = replace(diffusion.TWIN_DIFFUSION, gen_length=16, steps=16, temperature=1.0)
    differs = False
    for i, (story, prompt) in enumerate(zip(np.split(data["tokens"], data["starts"][1:]), prompts)):
        answer = run_diffusion(model, prompt, replace(sampled, seed=i))[0]
        assert story.tolist() == [*prompt, *answer, model.eos_id]
        differs |= run_diffusion(model, prompt, replace(sampled, temperature=0.0))[0] != answer
    assert differs  # sampling changed at least one story: the temperature reached the sampler


def test_each_story_keeps_the_trajectory_of_the_decode_that_wrote_it(tmp_path: Path) -> None:
    files = [str(CORPUS / f) for f in TRAINING_FILES]
    if not all(Path(f).is_file() for f in files):
        pytest.skip("the training stories (../shared/corpus) are not beside the repository")
    out = tmp_path / "self.npz"
    self_distill.main(["--corpus", *files, "--out", str(out), "--stories", "2", "--gen-length", "32"])
    data = np.load(out)
    assert len(data["orders"]) == len(data["tokens"])
    model, tok = load_twin("diffusion", DEFAULT_MODELS_DIR)
    prompts = self_distill.training_openings(tok, files, 2, 0)
    settings = replace(diffusion.TWIN_DIFFUSION, gen_length=32, steps=32)
    for order, prompt in zip(np.split(data["orders"], data["starts"][1:]), prompts):
        steps = list(diffusion.generate(model, prompt, settings))
        n = len(order) - len(prompt) - 1
        assert order[: len(prompt)].tolist() == [stories.PROMPT] * len(prompt)
        answer = order[len(prompt) :]
        assert answer[-1] == stories.NEVER or answer[-1] >= 1  # the end-of-text: written by a step, or appended
        for s, step in enumerate(steps):  # replaying the trajectory: the tokens written by step s are step s's
            assert ((answer[:n] <= s) == ~step.masked[:n]).all()
        assert len(set(answer[:n].tolist())) < n  # some step wrote several tokens of this story
