"""Converge under transformers 5 against each family's reference sampler under the transformers its authors pinned,
run in an environment of its own, so a load path that runs but computes wrongly cannot agree with itself.

The environments are built once by scripts/reference_env.sh (transformers 4.46.2 for LLaDA and Dream, 4.57.0 for
dllm's families, beside this machine's torch); set CONVERGE_REF_PYTHON / CONVERGE_DLLM_REF_PYTHON to use other
interpreters. Without one a family's tests skip and say how to build it.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from app.sources.base import make_source

torch = pytest.importorskip("torch", reason="torch is not installed")
transformers = pytest.importorskip("transformers", reason="transformers is not installed")

from tests.hf_families import build_a2d, build_dream, build_llada, build_modernbert_chat  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
REF_PYTHON = Path(os.environ.get("CONVERGE_REF_PYTHON") or ROOT / ".ref-envs" / "transformers-4.46" / "bin" / "python")
DLLM_REF_PYTHON = Path(os.environ.get("CONVERGE_DLLM_REF_PYTHON")
                       or ROOT / ".ref-envs" / "transformers-4.57" / "bin" / "python")
PROMPT = "the cat had a red ball"

needs_env = pytest.mark.skipif(not REF_PYTHON.exists(), reason=(
    f"no reference environment at {REF_PYTHON}: build it with scripts/reference_env.sh (or set CONVERGE_REF_PYTHON)"))
needs_dllm_env = pytest.mark.skipif(not DLLM_REF_PYTHON.exists(), reason=(
    f"no dllm reference environment at {DLLM_REF_PYTHON}: build it with scripts/reference_env.sh (or set "
    "CONVERGE_DLLM_REF_PYTHON)"))


def reference(job: dict, python: Path = REF_PYTHON) -> dict:
    """What the family's own sampler answers in the reference environment."""
    out = subprocess.run([str(python), str(ROOT / "tests" / "reference_runner.py"), json.dumps(job)],
                         capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["transformers"].startswith("4."), got  # really the authors' major version, not ours
    return got


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("reference")
    return {"llada": build_llada(root), "dream": build_dream(root)}


@needs_env
def test_llada_under_transformers_5_matches_its_generate_under_4(models: dict[str, Path]) -> None:
    from app.engine import diffusion

    src = make_source(f"hf-diffusion:{models['llada']}", trust_remote_code=True, device="cpu", gen_length=32,
                      steps=8, block_length=16, temperature=0.0, threshold=None, stop_at_eos=False)
    prompt = src.encode(PROMPT)
    ours = list(diffusion.generate(src.model, prompt, src.opts))[-1].ids.tolist()
    theirs = reference({"family": "llada", "folder": str(models["llada"]), "prompt": prompt, "length": 32,
                        "steps": 8, "block": 16})["ids"]
    assert ours == theirs and len(set(ours)) > 4


@needs_env
@pytest.mark.parametrize(("alg", "scoring"), [("maskgit_plus", "confidence"), ("entropy", "entropy")])
def test_dream_under_transformers_5_matches_its_diffusion_generate_under_4(models: dict[str, Path], alg: str,
                                                                          scoring: str) -> None:
    """Dream's documented call takes transformers' default top_k of 50 into its generation config, so even at
    temperature 0 it chooses and scores among each position's 50 likeliest tokens: Converge's top_k=50 does too."""
    from app.engine import diffusion

    src = make_source(f"hf-diffusion:{models['dream']}", trust_remote_code=True, device="cpu", gen_length=16,
                      steps=8, block_length=16, temperature=0.0, threshold=None, stop_at_eos=False, scoring=scoring,
                      schedule="dream", top_k=50)
    prompt = src.encode(PROMPT)
    ours = list(diffusion.generate(src.model, prompt, src.opts))[-1].ids.tolist()
    theirs = reference({"family": "dream", "folder": str(models["dream"]), "prompt": prompt, "length": 16,
                        "steps": 8, "alg": alg})["ids"]
    assert ours == theirs and len(set(ours)) > 4


@pytest.fixture(scope="module")
def dllm_models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("dllm-reference")
    return {"a2d": build_a2d(root), "modernbert": build_modernbert_chat(root)}


@needs_dllm_env
@pytest.mark.parametrize(("family", "model", "settings"), [
    ("a2d-mdlm", "a2d", {"trust_remote_code": True}),
    ("a2d-bd3lm", "a2d", {"trust_remote_code": True, "block_attention": True}),
    ("modernbert", "modernbert", {})])
def test_dllm_families_under_transformers_5_match_dllms_samplers_under_4_57(dllm_models: dict[str, Path], family: str,
                                                                           model: str, settings: dict) -> None:
    """dllm's samplers run on the model loaded with its own code under the transformers dllm pins, told the ids of
    the tokenizer's mask, BOS, end-of-text and padding."""
    from app.engine import diffusion

    src = make_source(f"hf-diffusion:{dllm_models[model]}", device="cpu", gen_length=32, steps=8, block_length=16,
                      temperature=0.0, threshold=None, stop_at_eos=False, schedule="dllm", **settings)
    prompt = src.encode(PROMPT)
    ours = list(diffusion.generate(src.model, prompt, src.opts))[-1].ids.tolist()
    t = src.tok.tok
    tokens = {"mask_token_id": t.mask_token_id, "bos_token_id": t.bos_token_id, "eos_token_id": t.eos_token_id,
              "pad_token_id": t.pad_token_id}
    theirs = reference({"family": family, "folder": str(dllm_models[model]), "prompt": prompt, "length": 32,
                        "steps": 8, "block": 16, "tokens": tokens}, DLLM_REF_PYTHON)["ids"]
    assert ours[:len(theirs)] == theirs and len(theirs) >= 16 and len(set(theirs)) > 4
