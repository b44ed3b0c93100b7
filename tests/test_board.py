"""The board (issue 54): d3LLM's AUP as its authors define it, the prompt sets (the stories never the twins' training
text), answer checking, the races it plans, and a board of the twins run for real: a row per prompt and side,
figures that agree with the recordings it links, resuming from its CSV and Ctrl-C keeping what finished."""

from __future__ import annotations

import csv
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from app.board.prompts import QUESTIONS_FILE, STORIES_FILE, Prompt, check, prompt_set, read_prompts
from app.board.run import COLUMNS, Board, Entrant, paired, plan, referee, takes_seed, varied
from app.board.tables import aup, curve, frame, summary, weight
from app.errors import UserError
from tests.fixtures import needs_twins

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT.parent / "shared" / "corpus"


def test_aup_is_d3llms_weighted_area_with_its_five_point_floor() -> None:
    # sorted by tokens per pass; the point 12 points below the least parallel one's accuracy is left out
    points = [(3.0, 68.0), (1.0, 80.0), (2.0, 78.0)]
    by_hand = 1.0 * 80.0 + 0.5 * (2.0 - 1.0) * (78.0 * math.exp(-3 * (1 - 78 / 80)) + 80.0 * 1.0)
    assert aup(points, y_max=80.0) == pytest.approx(by_hand)
    assert weight(80.0, 80.0) == 1.0 and weight(90.0, 80.0) == 1.0  # W is capped at 1
    assert aup([(2.5, 40.0)], y_max=50.0) == pytest.approx(100.0)  # one point: rho_1 y_1
    assert aup([(None, 40.0)], y_max=50.0) is None  # no passes counted (an API side): no AUP


def test_a_worse_accuracy_at_the_same_parallelism_scores_a_lower_aup() -> None:
    kept = aup([(1.0, 80.0), (3.0, 79.0)], y_max=80.0)
    dropped = aup([(1.0, 80.0), (3.0, 76.0)], y_max=80.0)
    assert kept is not None and dropped is not None and dropped < kept


def test_answers_are_checked_exactly_or_as_whole_words() -> None:
    assert check("Paris.", "paris") == "exact"
    assert check("The answer is 42!", "42") == "found"
    assert check("It is 420.", "42") == "no"
    assert check("", "7") == "no"


def test_a_prompts_file_takes_an_optional_answer_after_a_tab(tmp_path: Path) -> None:
    path = tmp_path / "mine.txt"
    path.write_text("What is 2 + 2?\t4\n\nTell me a story.\n", encoding="utf-8")
    assert read_prompts(path) == [Prompt("What is 2 + 2?", "4"), Prompt("Tell me a story.", None)]
    (tmp_path / "empty.txt").write_text("\n \n", encoding="utf-8")
    with pytest.raises(UserError, match="no prompt"):
        read_prompts(tmp_path / "empty.txt")
    with pytest.raises(UserError, match="Cannot read"):
        read_prompts(tmp_path / "absent.txt")


def test_every_bundled_question_has_a_checkable_answer_and_no_story_does() -> None:
    questions, stories = prompt_set("questions"), prompt_set("stories")
    assert all(q.expected for q in questions) and all(s.expected is None for s in stories)
    assert prompt_set(str(QUESTIONS_FILE)) == questions
    docs = (ROOT / "docs" / "board.md").read_text(encoding="utf-8")  # the counts docs/board.md quotes
    assert f"{len(stories)} story openings the twins never trained on" in docs
    assert f"{len(questions)} short questions with one checkable answer each" in docs


@pytest.mark.skipif(not (CORPUS / "tinystories-a.txt").is_file(), reason="../shared/corpus is not beside the checkout")
def test_the_bundled_story_openings_are_held_out_from_the_twins_training_text() -> None:
    from app.bench.twins import EVAL_PROMPTS
    from app.lessons.prompts import EXAMPLE_PROMPTS
    from app.measure.quality import TRAINING_FILES

    trained = " ".join((CORPUS / f).read_text(encoding="utf-8") for f in TRAINING_FILES).lower()
    stories = [p.text for p in prompt_set("stories")]
    assert [s for s in stories if s.lower() in trained] == []
    assert not set(stories) & set(EXAMPLE_PROMPTS.values())
    # the bench's held-out openings are reused, but for any the training text holds verbatim
    assert {p for p in EVAL_PROMPTS if p.lower() not in trained} <= set(stories)
    assert STORIES_FILE.read_text(encoding="utf-8").count("\n") == len(stories)


def test_vary_makes_one_method_a_value_and_refuses_a_single_value() -> None:
    entrants = varied("local-diffusion", "filter=0.9,0.5,null", {"steps": 64})
    assert [e.label for e in entrants] == ["filter=0.9", "filter=0.5", "filter=null"]
    assert [e.settings for e in entrants] == [{"steps": 64, "filter": 0.9}, {"steps": 64, "filter": 0.5},
                                              {"steps": 64, "filter": None}]
    assert {e.method for e in entrants} == {"local-diffusion"}
    for bad in ("filter=0.9", "filter", "Filter Level=1,2"):
        with pytest.raises(UserError, match="--vary"):
            varied("local-diffusion", bad)


def test_the_plan_races_entrants_two_at_a_time_over_every_prompt_and_seed() -> None:
    entrants = varied("local-diffusion", "filter=0.9,0.7,0.5")
    heats = plan(entrants, [Prompt("a"), Prompt("b")], seeds=2)
    assert len(heats) == 2 * 2 * 2
    assert [(h.left.label, h.right.label) for h in heats[:2]] == [("filter=0.9", "filter=0.7"),
                                                                   ("filter=0.5", "filter=0.9")]
    same = paired(Entrant("local-ar", "local-ar", "local-ar"), Entrant("local-ar", "local-ar", "local-ar"))
    assert [e.label for e in same] == ["local-ar (left)", "local-ar (right)"]
    assert takes_seed("local-diffusion") and not takes_seed("openai:gpt-test")


def rows_for(label: str, method: str, tpp: float, right: int, of: int) -> list[dict[str, object]]:
    return [{"label": label, "method": method, "passes": 10, "answer_tokens": 10 * tpp, "seconds": 1.0 + i,
             "quality": 100.0 if i < right else 0.0, "quality_kind": "match"} for i in range(of)]


def test_the_summary_gives_medians_the_worst_accuracy_and_one_aup_per_method() -> None:
    table = frame(rows_for("filter=0.9", "twin", 1.0, 4, 5) + rows_for("filter=0.5", "twin", 3.0, 3, 5)
                  + rows_for("ar", "ar", 1.0, 5, 5))
    sides = summary(table).set_index("label")
    assert sides.loc["filter=0.9", "accuracy"] == 80.0 and sides.loc["filter=0.5", "accuracy"] == 60.0
    assert sides.loc["filter=0.9", "tokens_per_pass"] == 1.0 and sides.loc["filter=0.5", "tokens_per_pass"] == 3.0
    assert sides.loc["ar", "worst_seconds"] == 5.0 and sides.loc["ar", "median_seconds"] == 3.0
    assert sides.loc["filter=0.9", "worst_quality"] == 0.0
    # the twin's curve: 60% is more than five points below 80%, so only its first point counts; y_max is the ar's 100
    assert sides.loc["filter=0.9", "aup"] == sides.loc["filter=0.5", "aup"] == round(aup([(1.0, 80.0)], 100.0), 2)
    assert sides.loc["ar", "aup"] == 100.0
    points = curve(table)
    assert points["label"].tolist() == ["filter=0.9", "filter=0.5", "ar"]


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


@needs_twins
def test_a_board_of_the_twins_writes_a_row_per_prompt_and_side_agreeing_with_its_recordings(tmp_path: Path) -> None:
    from app.analysis.changes import metrics
    from app.trace.reading import read_recording

    prompts = prompt_set("stories")[:2]
    heats = plan(paired(Entrant("local-diffusion", "local-diffusion", "local-diffusion"),
                        Entrant("local-ar", "local-ar", "local-ar")), prompts, seeds=1)
    out = tmp_path / "board.csv"
    board = Board(heats, out, referee(), takes_seed)
    assert len(list(board.run())) == 2
    rows = read_csv(out)
    assert [(r["prompt_index"], r["label"]) for r in rows] == [("0", "local-diffusion"), ("0", "local-ar"),
                                                               ("1", "local-diffusion"), ("1", "local-ar")]
    assert set(rows[0]) == set(COLUMNS)
    for row in rows:
        recording = read_recording(out.parent / row["recording"])
        side = "left" if row["label"] == "local-diffusion" else "right"
        m = metrics(recording.frames[side])
        assert int(row["passes"]) == m["nfe"] and int(row["answer_tokens"]) == m["answer_tokens"]
        assert float(row["seconds"]) == pytest.approx(m["t_final"])
        assert float(row["quality"]) > 1.0 and row["quality_kind"] == "referee_ppl"
    ar = [r for r in rows if r["label"] == "local-ar"]
    assert all(r["passes"] == r["answer_tokens"] and float(r["tokens_per_pass"]) == 1.0 for r in ar)
    before = out.read_text(encoding="utf-8")
    again = Board(heats, out, referee(), takes_seed)
    assert again.pending() == [] and list(again.run()) == [] and out.read_text(encoding="utf-8") == before


def board_cli(*args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen([sys.executable, "-m", "app", "board", *args], cwd=ROOT, text=True, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


@needs_twins
def test_ctrl_c_keeps_the_races_that_finished_and_the_same_command_resumes(tmp_path: Path) -> None:
    out = tmp_path / "board.csv"
    args = ("--limit", "6", "--out", str(out))
    proc = board_cli(*args)
    deadline = time.monotonic() + 240
    while len(read_csv(out) if out.is_file() else []) < 2:  # the first race's rows are on disk
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    kept = read_csv(out)
    if proc.returncode == 130:  # stopped before the board was done: what finished is kept whole
        assert "keeps the" in err and 2 <= len(kept) < 12 and len(kept) % 2 == 0
    else:  # the last race ended before the signal landed
        assert proc.returncode == 0 and len(kept) == 12
    proc = board_cli(*args)
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err
    rows = read_csv(out)
    assert rows[:len(kept)] == kept and len(rows) == 12
    assert len({(r["prompt_index"], r["seed"], r["label"]) for r in rows}) == 12
    assert f"/{(12 - len(kept)) // 2} races" in err  # the rerun raced only what was missing


@needs_twins
def test_the_bench_section_times_the_board_against_the_same_races_alone() -> None:
    from app.bench import SECTIONS, section

    assert SECTIONS["board"] == "app.bench.board"
    out = section("board")(repeats=1, prompts=1)
    assert out["races"] == 1 and out["rounds"] == 1
    assert len(out["races_alone_wall_seconds"]) == len(out["board_wall_seconds"]) == 1
    assert 0 < out["scoring_cpu_share_median"] <= out["own_cpu_share_median"] <= out["own_cpu_share_worst"]
    assert 0 < out["own_share_median"] <= out["own_share_worst"]
    assert out["wall_overhead_median"] <= out["wall_overhead_worst"]
    assert out["met"] == (max(out["wall_overhead_worst"], out["own_cpu_share_worst"]) < 0.05)
