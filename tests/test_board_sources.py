"""The board over real sources: the OpenAI-compatible and Mercury sources through the openai SDK against the loopback
wire server (no mocks), a user's questions checked, its page escaping every answer, and no key on disk; and one
source under several settings, the twin's curve of quality against tokens per pass."""

from __future__ import annotations

import csv
import threading
from pathlib import Path
from typing import Any

import pytest

from app.board.prompts import Prompt
from app.board.run import Board, Entrant, paired, plan
from app.cli.board import main
from tests.fixtures import needs_twins
from tests.wire_server import DEFAULT_KEY, script

HOSTILE = "<script>alert(1)</script><img src=x onerror=alert(2)>"


def read(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


def test_a_board_of_two_api_sources_checks_each_answer_and_escapes_it(fast_env: str, tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    questions = tmp_path / "mine.txt"
    questions.write_text(f"ECHO:5\t5\nECHO:The answer is 42.\t42\nECHO:I do not know.\t7\nECHO:{HOSTILE}\tzebra\n",
                         encoding="utf-8")
    out = tmp_path / "chat.html"
    assert main(["--left", "openai:gpt-test", "--right", "mercury:mercury-2", "--prompts", str(questions),
                 "--out", str(out)]) == 0
    rows = read(tmp_path / "chat.csv")
    assert [(r["label"], r["match"]) for r in rows] == [
        ("openai:gpt-test", "exact"), ("mercury:mercury-2", "exact"), ("openai:gpt-test", "found"),
        ("mercury:mercury-2", "found"), ("openai:gpt-test", "no"), ("mercury:mercury-2", "no"),
        ("openai:gpt-test", "no"), ("mercury:mercury-2", "no")]
    assert rows[-1]["answer"] == HOSTILE and all(r["status"] == "done" for r in rows)
    assert all(r["passes"] == "" and r["tokens_per_pass"] == "" for r in rows)  # an API does not say its passes
    assert all(float(r["seconds"]) > 0 and int(r["answer_tokens"]) > 0 for r in rows)
    sides = read(tmp_path / "chat-summary.csv")
    assert [(s["label"], s["accuracy"], s["aup"]) for s in sides] == [("openai:gpt-test", "50.0", ""),
                                                                      ("mercury:mercury-2", "50.0", "")]
    page = out.read_text(encoding="utf-8")
    assert HOSTILE not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert 'href="chat-races/p000-s0-openai_gpt-test-mercury_mercury-2.jsonl"' in page
    for path in (tmp_path / "chat.csv", out, *(tmp_path / "chat-races").iterdir()):
        assert DEFAULT_KEY not in path.read_text(encoding="utf-8")
    assert "openai:gpt-test" in capsys.readouterr().out


def test_a_setting_the_source_does_not_take_is_refused_before_anything_runs(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "b.csv"
    assert main(["--source", "local-ar", "--vary", "no_such=1,2", "--out", str(out)]) == 2
    assert "no_such" in capsys.readouterr().err and not out.exists()
    assert main(["--vary", "steps=8,16", "--out", str(out)]) == 2
    assert "--source and --vary go together" in capsys.readouterr().err and not out.exists()
    out.write_text("name,score\nx,1\n", encoding="utf-8")  # a CSV that is not a board's is never appended to
    assert main(["--out", str(out)]) == 2
    assert "is not a board's CSV" in capsys.readouterr().err and out.read_text(encoding="utf-8") == "name,score\nx,1\n"


@needs_twins
def test_one_twin_under_several_settings_draws_its_curve(tmp_path: Path) -> None:
    out = tmp_path / "curve.html"
    assert main(["--source", "local-diffusion", "--vary", "steps=128,32", "--limit", "2", "--out", str(out)]) == 0
    points = {p["label"]: p for p in read(tmp_path / "curve-curve.csv")}
    assert set(points) == {"steps=128", "steps=32"} and {p["method"] for p in points.values()} == {"local-diffusion"}
    rows = read(tmp_path / "curve.csv")
    for label, point in points.items():
        mine = [r for r in rows if r["label"] == label]
        assert float(point["tokens_per_pass"]) == pytest.approx(
            sum(int(r["answer_tokens"]) for r in mine) / sum(int(r["passes"]) for r in mine), abs=1e-3)
    # fewer steps for the same length: more tokens a pass, the curve's point to the right
    assert float(points["steps=32"]["tokens_per_pass"]) > float(points["steps=128"]["tokens_per_pass"])
    page = out.read_text(encoding="utf-8")
    assert "referee perplexity (lower is better)" in page and "steps=32" in page


def test_a_board_of_tiny_hugging_face_models_counts_each_sides_passes(tmp_path: Path) -> None:
    pytest.importorskip("torch", reason="torch is not installed")
    pytest.importorskip("transformers", reason="transformers is not installed")
    from tests.test_hf import build_tiny_models

    tiny = build_tiny_models(tmp_path / "models")
    questions = tmp_path / "q.txt"
    questions.write_text("once upon a time there was a\tcat\nshe had a red\tball\n", encoding="utf-8")
    out = tmp_path / "hf.csv"
    assert main(["--left", f"hf-diffusion:{tiny['bert']}", "--right", f"hf-ar:{tiny['gpt2']}",
                 "--left-settings", '{"gen_length": 8, "steps": 4, "block_length": 8, "stop_at_eos": false}',
                 "--right-settings", '{"gen_length": 8, "stop_at_eos": false}', "--prompts", str(questions),
                 "--out", str(out)]) == 0
    rows = read(out)
    assert len(rows) == 4 and all(r["status"] == "done" for r in rows)
    diffusion = [r for r in rows if r["spec"].startswith("hf-diffusion:")]
    ar = [r for r in rows if r["spec"].startswith("hf-ar:")]
    assert all(int(r["passes"]) == 4 and float(r["tokens_per_pass"]) == 2.0 for r in diffusion)
    assert all(int(r["passes"]) == int(r["answer_tokens"]) == 8 for r in ar)
    assert {r["match"] for r in rows} <= {"exact", "found", "no"}


def test_a_key_given_as_a_setting_is_scrubbed_from_every_answer_and_never_written(
        fast_env: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "INCEPTION_API_KEY"):  # the key reaches the sources only as a setting
        monkeypatch.delenv(name)
    questions = tmp_path / "echo.txt"
    questions.write_text("ECHO:hello\thello\n", encoding="utf-8")
    out = tmp_path / "keys.html"
    given = f'{{"api_key": "{DEFAULT_KEY}"}}'
    assert main(["--left", "openai:gpt-test", "--right", "mercury:mercury-2", "--left-settings", given,
                 "--right-settings", given, "--prompts", str(questions), "--out", str(out)]) == 0
    rows = read(tmp_path / "keys.csv")
    assert [(r["status"], r["match"]) for r in rows] == [("done", "exact"), ("done", "exact")]
    assert all(r["settings"] == "{}" for r in rows)
    for path in (tmp_path / "keys.csv", out, tmp_path / "keys-summary.csv", *(tmp_path / "keys-races").iterdir()):
        assert DEFAULT_KEY not in path.read_text(encoding="utf-8"), path


def chunk(text: str, finish: str = "null") -> bytes:
    return b'data: {"choices": [{"index": 0, "delta": {"content": "%s"}, "finish_reason": %s}]}\n\n' % (
        text.encode(), finish.encode())


def test_a_side_is_judged_as_soon_as_it_ends_while_the_other_still_runs(fast_env: str, tmp_path: Path) -> None:
    """The held side's stream waits on a gate that only the first judgement opens: the board must judge the quick
    side while the held one is still running (a board that judged after both ended would find the gate shut)."""
    gate = threading.Event()
    held = script([chunk("Hold on. "), gate, chunk("It is 5.", '"stop"'), b"data: [DONE]\n\n"])
    shut_when_judged: list[bool] = []

    class Watching(Board):
        def judge(self, *args: Any, **kwargs: Any) -> Any:
            shut_when_judged.append(not gate.is_set())
            gate.set()
            return super().judge(*args, **kwargs)

    heats = plan(paired(Entrant("held", "held", f"openai:{held}"), Entrant("quick", "quick", "openai:gpt-test")),
                 [Prompt("ECHO:5", "5")], seeds=1)
    safety = threading.Timer(120, gate.set)  # a board that waits for both sides fails below instead of hanging
    safety.start()
    try:
        assert len(list(Watching(heats, tmp_path / "b.csv", lambda prompt, answer: None).run())) == 1
    finally:
        safety.cancel()
    assert shut_when_judged == [True, False]
    rows = read(tmp_path / "b.csv")
    assert [(r["label"], r["status"], r["match"]) for r in rows] == [("held", "done", "found"),
                                                                    ("quick", "done", "exact")]
