"""A board as one self-contained HTML page: each side's summary, the curve (plotly, its script inlined) and every row
with a link to its recording; every cell escaped, so no model or user text becomes markup."""

from __future__ import annotations

import html
from typing import Any

import pandas as pd

from app.view.board import curve_figure

ROW_COLUMNS = ("prompt_index", "seed", "label", "passes", "answer_tokens", "tokens_per_pass", "seconds", "quality",
               "match", "answer")


def _cell(value: Any) -> str:
    """A table cell: blank for a missing figure, else the value as escaped text."""
    return "" if value is None or (isinstance(value, float) and pd.isna(value)) else html.escape(str(value))


def _table(frame: pd.DataFrame, columns: tuple[str, ...], link: bool = False) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns) + ("<th>recording</th>" if link else "")
    body = []
    for _, row in frame.iterrows():
        cells = "".join(f"<td>{_cell(row.get(c))}</td>" for c in columns)
        if link:
            href = html.escape(str(row.get("recording") or ""), quote=True)
            cells += f'<td><a href="{href}">{href}</a></td>' if href else "<td></td>"
        body.append(f"<tr>{cells}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def board_page(table: pd.DataFrame, sides: pd.DataFrame, points: pd.DataFrame) -> str:
    """The page: the summary per side, one curve per quality kind on the board, and the rows."""
    charts: list[str] = []
    for kind in ("match", "referee_ppl"):
        if (table["quality_kind"] == kind).any():
            charts.append(curve_figure(points, kind).to_html(full_html=False, include_plotlyjs=not charts))
    style = ("body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;font-size:13px}"
             "td,th{border:1px solid #ccc;padding:3px 6px;vertical-align:top}td:last-child{max-width:40em}")
    return ("<!doctype html><html><head><meta charset='utf-8'><title>Converge board</title>"
            f"<style>{style}</style></head><body><h1>Converge board</h1>"
            f"<h2>Each side</h2>{_table(sides, tuple(sides.columns))}"
            "<p>AUP: d3LLM's accuracy under parallelism over the checkable prompts (docs/board.md).</p>"
            f"<h2>Quality against tokens per pass</h2>{''.join(charts)}"
            f"<h2>Every race</h2>{_table(table, ROW_COLUMNS, link=True)}</body></html>")
