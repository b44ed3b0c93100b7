"""`python -m app generate`: the final text, or one JSON object; bad input is one sentence on stderr and exit 2."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from app.cli.generate import main, parser, shown
from app.engine.autoregressive import ARSettings
from app.engine.diffusion import DiffusionSettings
from app.engine.options import declared
from app.sources.base import make_source
from tests.fixtures import needs_twins

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    pytest.importorskip("transformers", reason="transformers is not installed")
    from tests.test_hf import build_tiny_models

    return build_tiny_models(tmp_path_factory.mktemp("hf"))


def test_json_output_through_python_dash_m(tiny: dict[str, Path]) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "app", "generate", "--source", f"hf-diffusion:{tiny['bert']}",
         "--prompt", "once upon a time", "--length", "16", "--steps", "8", "--block-length", "8",
         "--stop-at-eos", "false", "--device", "cpu", "--json"],
        cwd=ROOT, capture_output=True, text=True, timeout=120, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["text"] and out["nfe"] == 8 and out["frames"] == 9 and out["tokens"] == 16  # one call of BERT a step
    assert out["seconds"] > 0 and out["tokens_per_forward"] == 2.0
    assert not {"prefix_cache", "dual_cache"} & set(out["settings"])  # BERT keeps no cache: none offered or claimed
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


@needs_twins
def test_local_twins_generate(capsys) -> None:
    for source in ("local-diffusion", "local-ar"):
        assert main(["--source", source, "--prompt", "Once upon a time", "--json"]) == 0
        out = json.loads(capsys.readouterr().out)
        assert out["text"] and out["nfe"] >= 1 and out["frames"] >= 1 and out["seconds"] > 0


def options_help() -> dict[str, str]:
    """Each option of `generate --help` (its last flag) and its help as rendered on a terminal wide enough that argparse
    breaks no word (it wraps after a hyphen), words joined by single spaces."""
    p = parser()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("COLUMNS", "2000")
        words = " ".join(p.format_help().split("options:", 1)[1].split())
    flags = [a.option_strings[-1] for a in p._actions if a.option_strings]
    starts = [words.index(f"{flag} ") if f"{flag} " in words else words.index(flag) for flag in flags]
    ends = starts[1:] + [len(words)]
    return {flag: words[start:end] for flag, start, end in zip(flags, starts, ends)}


def defaults_shown(text: str) -> dict[str, str]:
    """The sources named in an option's "(default: ...)" and the value each starts from; "*" when all share one."""
    found = re.search(r"\(default: ([^)]*)\)", text)
    assert found, text
    parts = [part.rsplit(" for ", 1) for part in found.group(1).split("; ")]
    if len(parts) == 1 and len(parts[0]) == 1:
        return {"*": parts[0][0]}
    return {source: value for value, sources in parts for source in sources.split(", ")}


def test_generate_help_shows_every_options_default_and_says_what_the_prompt_is() -> None:
    helps = options_help()
    assert "the text the model answers" in helps["--prompt"]
    flags_and_required = {"--help", "--json", "--trace", "--prompt"}
    for flag, text in helps.items():
        if flag not in flags_and_required:
            assert "(default: " in text, text


def check_defaults(source: str, settings: dict[str, object], cls: type) -> None:
    """Every setting of `cls` that `source` honours (and so recorded) shows, in `generate --help`, as the value the
    source ran with."""
    from app.sources.base import REGISTRY

    helps = options_help()
    flags = {a.dest: a.option_strings[-1] for a in parser()._actions if a.option_strings}
    honours = REGISTRY[source].backends[0].names
    for name, (_, o) in declared(cls).items():
        if name not in honours:
            assert name not in settings, (source, name)
            continue
        table = defaults_shown(helps[flags[name]])
        assert table.get(source, table.get("*")) == shown(settings[name], o), (source, name, table)


def test_the_defaults_in_generate_help_are_the_ones_the_built_in_twins_run_with() -> None:
    for source, cls in (("local-diffusion", DiffusionSettings), ("local-ar", ARSettings)):
        check_defaults(source, make_source(source).settings(), cls)


def test_the_defaults_in_generate_help_are_the_ones_hugging_face_sources_run_with(tiny: dict[str, Path]) -> None:
    """As the sources run them; the cache switches, which no Hugging Face diffusion model is offered, are neither
    shown for hf-diffusion nor recorded."""
    bert = make_source(f"hf-diffusion:{tiny['bert']}").settings()
    assert not {"prefix_cache", "dual_cache"} & set(bert)
    check_defaults("hf-diffusion", bert, DiffusionSettings)
    check_defaults("hf-ar", make_source(f"hf-ar:{tiny['gpt2']}").settings(), ARSettings)
