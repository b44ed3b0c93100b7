"""The site's board (app/site/js/board.js) says what the page's board says, without a browser: Python writes golden
vectors (the referee's logits and perplexity for (prompt, answer) pairs, the frames and rows of two races of the
twins over the board's first openings, and tables of rows with their cells and what-to-notice line, from
app/board/notes.py and app/board/run.py) and Node checks board.js against them (tests/node/board.mjs): the perplexity
within 1e-9, the same sequence scored, every row, cell and line equal. Skipped with the reason where Node.js is
missing. (The board run in Chromium on the built site is in tests/test_site.py, which builds the site once.)"""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.fixtures import needs_twins

pytestmark = needs_twins
ROOT = Path(__file__).resolve().parent.parent
CHECK = ROOT / "tests" / "node" / "board.mjs"
RACED = 2  # openings raced for the rows (the board's first)
PAIRS = (("Once upon a time", " a cat sat.\n\nThe end"), ("Tom  ", "  caf\u00e9 \u201cquotes\u201d \u2014 ok"),
         ("A dog ran.", ""))  # besides the raced answers: spaces, non-ASCII, and an empty answer (no perplexity)


def row(index: int, label: str, passes: Any, tokens: Any, quality: Any, seconds: Any = 1.0) -> dict[str, Any]:
    """A board row with the figures the table and the note read (as a CSV gives them, or as a race does)."""
    rate = tokens / passes if isinstance(tokens, int) and isinstance(passes, int) and passes else ""
    return {"prompt_index": index, "label": label, "passes": passes, "answer_tokens": tokens, "tokens_per_pass": rate,
            "seconds": seconds, "quality": quality}


D, A = "local-diffusion", "local-ar"
TABLES: tuple[list[dict[str, Any]], ...] = (
    # four openings: a tie (not worse), worse on two, one AR perplexity blank, 9 tokens over 8 passes (1.125: a tie
    # Python's round and format break to even) and seconds on such a tie
    [row(0, D, 8, 9, 7.5, 0.125), row(0, A, 128, 128, 7.5), row(1, D, 30, 100, 12.345), row(1, A, 128, 128, 9.87),
     row(2, D, 40, 90, 11.0), row(2, A, 128, 128, ""), row(3, D, 33, 100, 10.005, 2.675), row(3, A, 128, 128, 8.125)],
    # as a CSV reads them back: text, a blank passes
    [row(0, D, "4", "10", "13.96", "0.287"), row(0, A, "128", "128", "7.894", "1.5"),
     row(1, D, "", "100", "7.916"), row(1, A, "128", "128", "9.97")],
    # one opening, the diffusion twin worse
    [row(4, D, 10, 40, 20.0), row(4, A, 128, 128, 9.0)],
)
NAMED = ([], [0], [1, 2], [0, 2, 3], [5, 1])


def golden(folder: Path) -> int:
    """Writes twins.json (as the site writes it), board.json and referee.f32 into `folder`; returns the cases."""
    from app.board.notes import cells, note, openings
    from app.board.prompts import prompt_set
    from app.board.run import Board, Entrant, Heat, referee
    from app.engine.model import load_twin
    from app.measure.quality import answer_logits
    from app.site.build import twins_data
    from app.sources.local import make_local_ar, make_local_diffusion

    score = referee()
    judge, tok = load_twin("referee")
    board = Board([], None, score)
    sides: list[dict[str, Any]] = []
    for index, prompt in enumerate(prompt_set("stories")[:RACED]):
        for spec, make in ((D, make_local_diffusion), (A, make_local_ar)):
            frames = list(make().stream(prompt.text, threading.Event()))
            entrant = Entrant(spec, spec, spec)
            made = board.row(Heat(index, prompt, 0, entrant, entrant), entrant, frames, "done", None, "")
            sides.append({"index": index, "label": spec, "prompt": prompt.text, "frames": [f.to_json() for f in frames],
                          "row": {k: made[k] for k in ("prompt_index", "label", "passes", "answer_tokens",
                                                       "tokens_per_pass", "seconds", "quality", "answer")}})
    pairs = [(s["prompt"], s["row"]["answer"]) for s in sides] + list(PAIRS)
    blob: list[np.ndarray] = []
    cases = []
    for prompt_text, answer in pairs:
        ids, p = tok.encode(answer), tok.encode(prompt_text)
        seq = [judge.eos_id, *p, *ids]
        logits = answer_logits(judge, p, ids) if ids else np.zeros((0, judge.net.config.vocab_size))
        cases.append({"prompt": prompt_text, "answer": answer, "ids": seq if ids else None, "first": len(p),
                      "rows": len(ids), "offset": sum(b.size for b in blob), "ppl": score(prompt_text, answer)})
        blob.append(np.ascontiguousarray(logits, dtype=np.float32).ravel())
    real = [{**s["row"], "answer": None} for s in sides]
    tables = [{"rows": rows, "cells": [cells(r) for r in rows], "note": note(rows)} for rows in (real, *TABLES)]
    data = {"referee": cases, "sides": sides, "tables": tables, "openings": [[n, openings(n)] for n in NAMED]}
    (folder / "twins.json").write_text(json.dumps(twins_data()), encoding="utf-8")
    (folder / "board.json").write_text(json.dumps(data), encoding="utf-8")
    np.concatenate(blob).astype("<f4").tofile(folder / "referee.f32")
    return len(cases) + len(sides) + len(tables) + len(NAMED)


@pytest.fixture(scope="module")
def vectors(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    """The golden vectors, made once for the module from the shipped twins and referee."""
    folder = tmp_path_factory.mktemp("board-golden")
    return folder, golden(folder)


def check(folder: Path) -> subprocess.CompletedProcess[str]:
    """tests/node/board.mjs over the vectors in `folder`."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("Node.js is not installed to check app/site/js/board.js against the golden vectors")
    return subprocess.run([node, str(CHECK), str(folder)], capture_output=True, text=True, timeout=300)


def test_the_sites_board_scores_rows_and_notes_as_python_in_node(vectors: tuple[Path, int]) -> None:
    """The referee's perplexity of the raced answers and of odd ones, each side's row from its frames, and each
    table's cells and line: all equal to Python's."""
    folder, cases = vectors
    data = json.loads((folder / "board.json").read_text(encoding="utf-8"))
    assert [c["ppl"] is None for c in data["referee"]] == [False] * (len(data["referee"]) - 1) + [True]
    assert all(math.isfinite(c["ppl"]) for c in data["referee"][:-1])
    done = check(folder)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip() == f"checked {cases} cases, every perplexity, row, cell and note equal", done.stdout


def test_the_check_names_a_perplexity_or_a_note_that_differs(vectors: tuple[Path, int], tmp_path: Path) -> None:
    """One logit of the first answer's first scored row moved, or one row's perplexity changed: the check fails and
    names the case."""
    folder, _ = vectors
    for name in ("twins.json", "board.json"):
        shutil.copyfile(folder / name, tmp_path / name)
    logits = np.fromfile(folder / "referee.f32", dtype="<f4")
    first = json.loads((folder / "board.json").read_text(encoding="utf-8"))["referee"][0]
    logits[first["offset"] + tok_of(first)] += 0.5  # the answer's first token made likelier
    logits.tofile(tmp_path / "referee.f32")
    done = check(tmp_path)
    assert done.returncode == 1 and done.stdout.startswith("referee ") and "perplexity" in done.stdout, done.stdout
    data = json.loads((folder / "board.json").read_text(encoding="utf-8"))
    data["tables"][1]["rows"][0]["quality"] = 99.0  # its cell and the note would say other figures
    (tmp_path / "board.json").write_text(json.dumps(data), encoding="utf-8")
    shutil.copyfile(folder / "referee.f32", tmp_path / "referee.f32")
    done = check(tmp_path)
    assert done.returncode == 1 and done.stdout.startswith("table 1: "), done.stdout


def tok_of(case: dict[str, Any]) -> int:
    """The id of a referee case's first answer token (its first scored row is the one that scores it)."""
    return int(case["ids"][case["first"] + 1])
