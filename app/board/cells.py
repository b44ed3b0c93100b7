"""A board's CSV cells as a spreadsheet may open them: text that a spreadsheet would read as a formula (it starts with
=, +, -, @, a tab or a carriage return: OWASP's CSV injection list) is written after a single quote, which spreadsheets
show as text; a cell that starts with a quote gets one more, so reading strips exactly one and gives back the text."""

from __future__ import annotations

from typing import Any

import pandas as pd

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
QUOTE = "'"


def safe_cell(value: Any) -> Any:
    """`value` as it is written: text that could start a formula, or that starts with a quote, behind a quote;
    numbers (a negative one included) and blanks as they are."""
    if isinstance(value, str) and value.startswith((*FORMULA_STARTS, QUOTE)):
        return QUOTE + value
    return value


def read_cell(text: str) -> str:
    """A cell as written by `safe_cell`, back to the text it was."""
    return text[1:] if text.startswith(QUOTE) else text


def safe_row(row: dict[str, Any]) -> dict[str, Any]:
    """A row's every cell through `safe_cell`."""
    return {name: safe_cell(value) for name, value in row.items()}


def read_row(row: dict[str, str]) -> dict[str, str]:
    """A row as read from a board's CSV, each cell back to its text."""
    return {name: read_cell(value) if isinstance(value, str) else value for name, value in row.items()}


def safe_table(table: pd.DataFrame) -> pd.DataFrame:
    """A table whose text cells are safe to write (a copy; its numbers untouched)."""
    out = table.copy()
    for name in out.columns:
        if not pd.api.types.is_numeric_dtype(out[name]):  # text (object or pandas' string dtype)
            out[name] = out[name].map(safe_cell)
    return out
