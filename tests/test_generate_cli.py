"""`python -m app generate`: the final text, or one JSON object; bad input is one sentence on stderr and exit 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from app.generate import main

ROOT = Path(__file__).resolve().parent.parent
HAVE_TWINS = all((ROOT / "assets" / "models" / f"{k}.safetensors").is_file() for k in ("diffusion", "ar"))


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    pytest.importorskip("transformers", reason="transformers is not installed")
    from tests.test_hf import build_tiny_models

    return build_tiny_models(tmp_path_factory.mktemp("hf"))


def test_json_output_through_python_dash_m(tiny: dict[str, Path]) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "app", "generate", "--source", f"hf-diffusion:{tiny['bert']}", "--prompt", "once upon a time",
         "--length", "16", "--steps", "8", "--block-length", "8", "--stop-at-eos", "false", "--device", "cpu", "--json"],
        cwd=ROOT, capture_output=True, text=True, timeout=120, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["text"] and out["nfe"] == 8 and out["frames"] == 9 and out["tokens"] == 16
    assert out["seconds"] > 0 and out["tokens_per_forward"] == 2.0
    assert out["settings"]["block_length"] == 8
    assert (out["settings"]["device"], out["settings"]["dtype"]) == ("cpu", "float32")  # dtype auto on the CPU


def test_plain_output_is_the_final_text_and_trace_keeps_every_frame(tiny: dict[str, Path], capsys) -> None:
    args = ["--source", f"hf-ar:{tiny['gpt2']}", "--prompt", "the cat", "--length", "5", "--stop-at-eos", "false"]
    assert main(args) == 0
    text = capsys.readouterr().out.rstrip("\n")
    assert main(args + ["--json", "--trace"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["text"] == text and len(text.split()) == 5
    assert len(out["trace"]) == out["frames"] == 5 and out["trace"][-1]["final"] and out["nfe"] == 5


@pytest.mark.parametrize("args, words", [
    (["--length", "16", "--block-length", "5"], "does not divide"),
    (["--length", "16", "--steps", "40"], "Steps"),
    (["--steps", "many"], "whole number"),
    (["--top-p", "0.5"], "no setting 'top_p'"),
    (["--prompt", "   "], "empty"),
    (["--prompt", "the cat " * 60], "shorten the prompt"),
])
def test_bad_input_is_one_sentence_and_exit_2(tiny: dict[str, Path], capsys, args: list[str], words: str) -> None:
    base = ["--source", f"hf-diffusion:{tiny['bert']}", "--prompt", "once upon a time"]
    assert main(base + args) == 2
    err = capsys.readouterr().err.strip()
    assert words in err and "\n" not in err and "Traceback" not in err


def test_unknown_source_and_unknown_model(capsys, monkeypatch: pytest.MonkeyPatch) -> None:
    assert main(["--source", "nowhere", "--prompt", "hi"]) == 2
    assert "Known sources" in capsys.readouterr().err
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert main(["--source", "hf-ar:nobody/nothing-here", "--prompt", "hi"]) == 2
    assert "local folder" in capsys.readouterr().err


@pytest.mark.skipif(not HAVE_TWINS, reason="assets/models/*.safetensors are absent (train the twins first)")
def test_local_twins_generate(capsys) -> None:
    for source in ("local-diffusion", "local-ar"):
        assert main(["--source", source, "--prompt", "Once upon a time", "--json"]) == 0
        out = json.loads(capsys.readouterr().out)
        assert out["text"] and out["nfe"] >= 1 and out["frames"] >= 1 and out["seconds"] > 0
