"""A board's CSV is safe to open in a spreadsheet: text that would start a formula is written behind a quote and read
back as the text it was, so a prompt or an answer never runs as a formula and a resumed board still finds its rows."""

from __future__ import annotations

import csv
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from app.board.cells import read_cell, safe_cell, safe_table
from app.board.prompts import Prompt
from app.board.run import Board, Entrant, paired, plan, takes_seed
from tests.fixtures import needs_twins

FORMULAS = ('=HYPERLINK("http://example.com","click")', "+1+1", "-2+3", "@SUM(A1)", "\t=1", "\r=1", "'quoted")


def test_text_that_starts_a_formula_is_written_behind_a_quote_and_numbers_as_they_are() -> None:
    for text in FORMULAS:
        assert safe_cell(text) == "'" + text and read_cell(safe_cell(text)) == text
    assert safe_cell("Once upon a time") == "Once upon a time"
    assert safe_cell(-1.5) == -1.5 and safe_cell(3) == 3 and safe_cell(None) is None


@given(st.text())
def test_any_text_reads_back_as_it_was_written(text: str) -> None:
    assert read_cell(safe_cell(text)) == text


def test_a_summary_tables_text_columns_are_made_safe_and_its_numbers_kept() -> None:
    import pandas as pd

    table = pd.DataFrame({"label": ["=cmd", "ok"], "quality": [-1.0, 2.0]})
    out = safe_table(table)
    assert out["label"].tolist() == ["'=cmd", "ok"] and out["quality"].tolist() == [-1.0, 2.0]
    assert table["label"].tolist() == ["=cmd", "ok"]  # the table shown is not changed


@needs_twins
def test_a_boards_csv_holds_a_formula_prompt_as_text_and_resumes_from_it(tmp_path: Path) -> None:
    prompt = Prompt('=HYPERLINK("http://example.com","Once upon a time")', None)
    settings = {"gen_length": 8}
    heats = plan(paired(Entrant("local-ar", "local-ar", "local-ar", settings),
                        Entrant("local-ar", "local-ar", "local-ar", settings)), [prompt], seeds=1)
    out = tmp_path / "board.csv"
    board = Board(heats, out, lambda prompt, answer: None, takes_seed)
    assert len(list(board.run())) == 1
    with out.open(encoding="utf-8", newline="") as f:
        written = list(csv.DictReader(f))
    assert [row["prompt"] for row in written] == ["'" + prompt.text] * 2  # a spreadsheet shows it as text
    assert all(not row[name].startswith(("=", "+", "@")) for row in written for name in row)
    again = Board(heats, out, lambda prompt, answer: None, takes_seed)
    assert [row["prompt"] for row in again.rows] == [prompt.text] * 2 and again.pending() == []
