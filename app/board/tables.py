"""A board's rows as pandas tables: per side (or setting) the medians and the worst, d3LLM's AUP, and the curve of
quality against tokens per pass. Reads rows only, runs no model, so the page, the exports and the bench share it."""

from __future__ import annotations

import math
from typing import Any, Iterable, Sequence

import pandas as pd

# d3LLM's AUP (https://hao-ai-lab.github.io/blogs/text-diffusion/, their leaderboard's aup_utils.py): the penalty
# factor and how far below the least parallel point's accuracy a point may fall and still count, in percent
AUP_ALPHA = 3.0
AUP_OFFSET = 5.0
NUMBERS = ("passes", "answer_tokens", "tokens_per_pass", "seconds", "quality")


def weight(y: float, y_max: float, alpha: float = AUP_ALPHA) -> float:
    """d3LLM's W(y) = min(exp(-alpha (1 - y / y_max)), 1): a point's accuracy weighed against the best on the task."""
    return min(math.exp(-alpha * (1 - y / y_max)), 1.0) if y_max > 0 else 0.0


def aup(points: Iterable[tuple[float, float]], y_max: float, alpha: float = AUP_ALPHA,
        offset: float = AUP_OFFSET) -> float | None:
    """Accuracy Under Parallelism of (tokens per forward pass, accuracy in percent) points, as d3LLM defines it:
    sorted by parallelism, only points within `offset` of the least parallel one's accuracy kept, then
    rho_1 y_1 + 1/2 sum (rho_i - rho_{i-1}) (y_i W(y_i) + y_{i-1} W(y_{i-1})). None without a point of rho > 0."""
    kept = sorted((float(r), float(y)) for r, y in points if r is not None and y is not None and r > 0)
    if not kept:
        return None
    floor = kept[0][1] - offset
    kept = [(r, y) for r, y in kept if y >= floor]
    total = kept[0][0] * kept[0][1]
    for (r0, y0), (r1, y1) in zip(kept, kept[1:]):
        total += 0.5 * (r1 - r0) * (y1 * weight(y1, y_max, alpha) + y0 * weight(y0, y_max, alpha))
    return total


def frame(rows: Sequence[dict[str, Any]]) -> pd.DataFrame:
    """The board's rows as a table, its figures as numbers (blank where a side could not say)."""
    table = pd.DataFrame(list(rows))
    for name in NUMBERS:
        table[name] = pd.to_numeric(table[name], errors="coerce") if name in table else float("nan")
    return table


def _pooled_rate(group: pd.DataFrame) -> float | None:
    """Answer tokens over forward passes, summed over the rows that count both: the side's tokens per pass."""
    both = group.dropna(subset=["passes", "answer_tokens"])
    passes = both["passes"].sum()
    return round(float(both["answer_tokens"].sum() / passes), 3) if passes else None


def _accuracy(group: pd.DataFrame) -> float | None:
    """The share of checkable prompts answered right, in percent (None when none is checkable)."""
    checked = group[group["quality_kind"] == "match"]
    return round(float(checked["quality"].mean()), 2) if len(checked) else None


def _worst(group: pd.DataFrame) -> float | None:
    """The worst quality of the rows: the highest perplexity, or the lowest match (0: a question missed)."""
    kinds = set(group["quality_kind"].dropna())
    values = group["quality"].dropna()
    if values.empty:
        return None
    return float(values.max() if kinds == {"referee_ppl"} else values.min())


def curve(table: pd.DataFrame) -> pd.DataFrame:
    """One point per side or setting: its method, tokens per pass (pooled), median quality and accuracy."""
    points = []
    for label, group in table.groupby("label", sort=False):
        points.append({"method": group["method"].iloc[0], "label": label, "tokens_per_pass": _pooled_rate(group),
                       "quality": _median(group["quality"]), "accuracy": _accuracy(group)})
    return pd.DataFrame(points, columns=["method", "label", "tokens_per_pass", "quality", "accuracy"])


def summary(table: pd.DataFrame) -> pd.DataFrame:
    """Per side or setting: races, the medians, the worst seconds and quality, accuracy, and its method's AUP."""
    if table.empty:
        return pd.DataFrame()
    points = curve(table)
    accuracies = points["accuracy"].dropna()
    y_max = float(accuracies.max()) if len(accuracies) else 0.0
    scores = {method: aup(zip(group["tokens_per_pass"], group["accuracy"]), y_max)
              if group["accuracy"].notna().any() else None for method, group in points.groupby("method", sort=False)}
    out = []
    for label, group in table.groupby("label", sort=False):
        method = group["method"].iloc[0]
        score = scores.get(method)
        out.append({"label": label, "method": method, "races": len(group),
                    **{f"median_{n}": _median(group[n]) for n in NUMBERS},
                    "tokens_per_pass": _pooled_rate(group), "worst_seconds": _max(group["seconds"]),
                    "worst_quality": _worst(group), "quality_kind": "/".join(sorted(set(group["quality_kind"]))),
                    "accuracy": _accuracy(group), "aup": None if score is None else round(score, 2)})
    return pd.DataFrame(out)


def _median(values: pd.Series) -> float | None:
    kept = values.dropna()
    return round(float(kept.median()), 3) if len(kept) else None


def _max(values: pd.Series) -> float | None:
    kept = values.dropna()
    return round(float(kept.max()), 3) if len(kept) else None
