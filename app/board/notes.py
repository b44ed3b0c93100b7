"""The twins' board as the page shows it, from its rows alone: the openings it races, the columns and side names of its
table and the what-to-notice line. Plain Python over the rows (no pandas), so the page's board (app/ui/board_tab.py)
and the site's board in the browser (app/site/js/board.js, its JavaScript copy) say the same thing of the same rows."""

from __future__ import annotations

import statistics
from typing import Any, Sequence

PROMPTS = 6  # openings a page's board races: a minute or two of the twins on this machine
SIDES = (("local-diffusion", "diffusion twin"), ("local-ar", "AR twin"))
COLUMNS = {"prompt_index": "opening", "label": "side", "passes": "passes", "answer_tokens": "answer tokens",
           "tokens_per_pass": "tokens a pass", "seconds": "seconds", "quality": "referee perplexity"}
NOTICE = "What to notice:"  # the line's lead, bold on the page


def number(value: Any) -> float | None:
    """A row's figure as a number: None where the row has none (blank, None or not a number)."""
    try:
        out = float(value)
    except (TypeError, ValueError):
        return None
    return None if out != out else out


def cells(row: dict[str, Any]) -> list[Any]:
    """A row as the table shows it, in COLUMNS' order: its opening counted from 1, its side by name, tokens a pass and
    seconds to 2 places (Python's round), a blank figure as None."""
    def figure(key: str, places: int | None = None) -> Any:
        value = row[key] if isinstance(row[key], (int, float)) else number(row[key])
        if value is None or value != value:
            return None
        return value if places is None else round(value, places)

    return [int(row["prompt_index"]) + 1, dict(SIDES).get(row["label"], row["label"]), figure("passes"),
            figure("answer_tokens"), figure("tokens_per_pass", 2), figure("seconds", 2), figure("quality")]


def openings(numbers: Sequence[int]) -> str:
    """Openings named for a sentence, counted from 1: "none", "2", "1 and 3", "1, 3 and 4"."""
    named = [str(n + 1) for n in numbers]
    return "none" if not named else named[0] if len(named) == 1 else ", ".join(named[:-1]) + " and " + named[-1]


def figures(rows: Sequence[dict[str, Any]], label: str) -> tuple[float, float, float]:
    """A side's tokens a pass (all its answer tokens over all its passes, of the rows that count both) and its median
    and worst perplexity, unrounded, so the line rounds once."""
    mine = [r for r in rows if r["label"] == label]
    tokens = passes = 0.0
    for r in mine:
        t, p = number(r["answer_tokens"]), number(r["passes"])
        if t is not None and p is not None:
            tokens, passes = tokens + t, passes + p
    quality = [q for q in (number(r["quality"]) for r in mine) if q is not None]
    return tokens / passes, statistics.median(quality), max(quality)


def compared(rows: Sequence[dict[str, Any]]) -> tuple[list[int], list[int]]:
    """The openings (0-based, in order) where both twins have a perplexity: those where the diffusion twin's is above
    the AR twin's, and the others."""
    by: dict[int, dict[str, float]] = {}
    for r in rows:
        q = number(r["quality"])
        if q is not None:
            by.setdefault(int(r["prompt_index"]), {})[r["label"]] = q
    both = sorted(i for i, sides in by.items() if all(spec in sides for spec, _ in SIDES))
    worse = [i for i in both if by[i][SIDES[0][0]] > by[i][SIDES[1][0]]]
    return worse, [i for i in both if i not in worse]


def note(rows: Sequence[dict[str, Any]]) -> str:
    """What to notice (after NOTICE), from the rows: each twin's tokens a pass and median and worst perplexity, and on
    which openings the diffusion twin's more tokens a pass cost quality (its perplexity above the AR twin's) and on
    which they did not."""
    (d_rate, d_median, d_worst), (a_rate, a_median, a_worst) = (figures(rows, spec) for spec, _ in SIDES)
    worse, fine = compared(rows)
    n = len(worse) + len(fine)
    return (f"over {n} openings the diffusion twin wrote {d_rate:.2f} "
            f"tokens a pass (median perplexity {d_median:.2f}, worst {d_worst:.2f}) and the AR "
            f"twin {a_rate:.2f} (median {a_median:.2f}, worst {a_worst:.2f}). "
            f"More tokens a pass cost quality on {len(worse)} of {n} openings (the diffusion twin's "
            f"perplexity above the AR twin's: {openings(worse)}) and did not on "
            f"{len(fine)} ({openings(fine)}): one race would have told either story.")


def site_data(texts: Sequence[str]) -> dict[str, Any]:
    """What the site's board reads (twins.json `board`): the openings it races, the table's columns and side names."""
    return {"openings": list(texts), "columns": [[k, v] for k, v in COLUMNS.items()],
            "sides": [list(s) for s in SIDES], "notice": NOTICE}
