"""`generate` and `record` with `--start-from TEXT|@RECORDING[#side] --renoise SHARE [--renoise-where ...]`
(issue 53): the run starts from the draft, and bad flags are one sentence on stderr and exit 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from app.cli.drafts import parse_share
from app.cli.generate import main as generate
from app.cli.record import main as record
from app.errors import UserError
from app.trace.reading import read_recording

ROOT = Path(__file__).resolve().parent.parent
PROMPT = "Once upon a time, there was a little girl named Lily."
DRAFT = " She liked to play in the park with her red ball. One day, she saw a big dog."
SMALL = ["--length", "32", "--steps", "32", "--block-length", "16"]


@pytest.mark.parametrize(("text", "share"), [("0.3", 0.3), ("30%", 0.3), ("100%", 1.0), ("0", 0.0), (" 45 % ", 0.45)])
def test_a_share_is_written_as_a_fraction_or_a_percentage(text: str, share: float) -> None:
    assert parse_share(text) == pytest.approx(share)


def test_generate_starts_from_a_typed_draft(capsys: pytest.CaptureFixture[str]) -> None:
    code = generate(["--source", "local-diffusion", "--prompt", PROMPT, *SMALL, "--start-from", DRAFT,
                     "--renoise", "25%", "--renoise-where", "unsure", "--json", "--trace"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    assert out["draft"]["share"] == 0.25 and out["draft"]["where"] == "unsure" and out["draft"]["text"] == DRAFT
    plan = out["draft"]["plan"]
    assert plan["mode"] == "revise" and len(plan["renoised"]) == round(0.25 * plan["length"]) and plan["nfe"] == 1
    first = out["trace"][0]
    assert [i for i, m in enumerate(first["masked"][: plan["length"]]) if m] == plan["renoised"]
    assert out["nfe"] == out["trace"][-1]["nfe"] and "r" not in out["trace"][-1]["revision"]


def test_generate_on_the_ar_twin_says_it_keeps_a_prefix(capsys: pytest.CaptureFixture[str]) -> None:
    code = generate(["--source", "local-ar", "--prompt", PROMPT, "--length", "32", "--start-from", DRAFT,
                     "--renoise", "1", "--renoise-where", "5:7"])
    captured = capsys.readouterr()
    assert code == 0 and captured.out.startswith(" She liked to play in")
    assert "local-ar cannot revise in place: it keeps the draft's first 5 tokens" in captured.err


def test_record_starts_both_sides_from_a_recordings_answer(tmp_path: Path) -> None:
    first, second = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    assert record(["--prompt", PROMPT, "--out", str(first), "--left", "local-ar", "--right", "local-ar",
                   "--left-settings", '{"gen_length": 24}', "--right-settings", '{"gen_length": 16}']) == 0
    answer = read_recording(first).frames["right"][-1].text
    assert record(["--prompt", PROMPT, "--out", str(second), "--left-settings", '{"gen_length": 32, "steps": 32, '
                   '"block_length": 16}', "--right-settings", '{"gen_length": 32}', "--start-from",
                   f"@{first}#right", "--renoise", "0.5"]) == 0
    header = read_recording(second).header
    assert header["draft"]["text"] == answer and header["draft"]["share"] == 0.5
    assert header["sources"]["left"]["draft"]["mode"] == "revise"
    assert header["sources"]["right"]["draft"]["mode"] == "prefix"


@pytest.mark.parametrize(("flags", "says"), [
    (["--renoise", "30%"], "need --start-from"),
    (["--start-from", DRAFT, "--renoise", "lots"], "is not a share: write it like 0.3 or 30%"),
    (["--start-from", DRAFT, "--renoise", "150%"], "not between 0 and 1"),
    (["--start-from", DRAFT, "--renoise-where", "middle"], "is not random, unsure or START:END"),
    (["--start-from", DRAFT, "--renoise-where", "40:50"], "starts past the draft"),
    (["--start-from", "   "], "The draft is empty"),
    (["--start-from", "@nowhere.jsonl"], "No recording at nowhere.jsonl"),
    (["--start-from", "@example/x.jsonl#middle"], "Side must be left or right"),
    (["--start-from", DRAFT * 4], "raise the answer length to"),
    (["--start-from", DRAFT, "--renoise-seed", "-1"], "is not a whole number"),
])
def test_bad_draft_flags_are_one_sentence_and_exit_2(flags: list[str], says: str,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    assert generate(["--source", "local-diffusion", "--prompt", PROMPT, *SMALL, *flags]) == 2
    err = capsys.readouterr().err
    assert says in err and len(err.strip().splitlines()) == 1


def test_record_refuses_bad_draft_flags_before_anything_runs(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "never.jsonl"
    assert record(["--prompt", PROMPT, "--out", str(out), "--renoise", "0.3"]) == 2
    assert "need --start-from" in capsys.readouterr().err and not out.exists()


def test_a_recorded_side_that_never_finished_is_refused(tmp_path: Path) -> None:
    from app.sources.revise import recorded_answer
    from app.trace.frames import make_header

    path = tmp_path / "cut.jsonl"
    frame = {"type": "frame", "side": "left", "t": 0.1, "step": 1, "tokens": ["a"], "final": False}
    path.write_text(json.dumps(make_header("p", {})) + "\n" + json.dumps(frame) + "\n")
    with pytest.raises(UserError, match="has no finished answer"):
        recorded_answer(str(path))


def test_the_flags_through_python_dash_m() -> None:
    proc = subprocess.run([sys.executable, "-m", "app", "generate", "--source", "local-uniform", "--prompt", PROMPT,
                           *SMALL, "--start-from", DRAFT, "--renoise", "30%", "--json"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["draft"]["plan"]["mode"] == "revise" and out["text"]
