"""A board drawn: the curve of quality against tokens per pass as a plotly figure, one line a method, from the
board's tables (app/board/tables.py builds them; this only draws what it is handed). Labels are escaped, so a setting
a user typed is shown as text, never read as markup by plotly."""

from __future__ import annotations

import html
from typing import Any

import pandas as pd
import plotly.graph_objects as go

QUALITY_TITLES = {"referee_ppl": "referee perplexity (lower is better)", "match": "accuracy, % (higher is better)"}


def curve_figure(points: pd.DataFrame, kind: str) -> Any:
    """Quality (`kind`: "referee_ppl" plots median perplexity, "match" accuracy) against tokens per forward pass."""
    fig = go.Figure()
    column = "accuracy" if kind == "match" else "quality"
    for method, group in points.groupby("method", sort=False):
        group = group.dropna(subset=["tokens_per_pass", column]).sort_values("tokens_per_pass")
        fig.add_trace(go.Scatter(x=group["tokens_per_pass"].tolist(), y=group[column].tolist(),
                                 mode="lines+markers+text", name=html.escape(str(method)),
                                 text=[html.escape(str(label)) for label in group["label"]],
                                 textposition="top center"))
    fig.update_layout(xaxis_title="answer tokens per forward pass", yaxis_title=QUALITY_TITLES.get(kind, kind),
                      template="plotly_white", height=420, margin={"l": 60, "r": 20, "t": 30, "b": 50})
    return fig
