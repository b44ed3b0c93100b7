"""The Board area: the built-in twins raced over held-out story openings, one race after another, the table (pandas)
and the curve of quality against tokens per pass (plotly) filling in as each race ends, and a what-to-notice line
whose numbers come from the table on screen.

Boards have their own queue ("board", its budget in app/ui/budgets.py): one board runs at a time on the page, each
race in it bounded as a race is (a CPU slot a side, the race time limit), its sides made through the page's one
policy check (app/ui/visitor.py), and nothing saved (`max_bytes=0`), so a board writes nothing to disk.
"""

from __future__ import annotations

from typing import Any, Callable, Iterator

import gradio as gr
import pandas as pd

from app.board.prompts import prompt_set
from app.board.run import Board, Entrant, paired, plan, referee, takes_seed
from app.board.tables import curve, frame, summary
from app.serving.policy import LOCAL, Policy
from app.ui.budgets import queued
from app.ui.visitor import Visitor, visitor_source
from app.view.board import curve_figure

PROMPTS = 6  # openings a page's board races: a minute or two of the twins on this machine
SIDES = (("local-diffusion", "diffusion twin"), ("local-ar", "AR twin"))
COLUMNS = {"prompt_index": "opening", "label": "side", "passes": "passes", "answer_tokens": "answer tokens",
           "tokens_per_pass": "tokens a pass", "seconds": "seconds", "quality": "referee perplexity"}
INTRO = ("### Many prompts, one board\nOne race is one anecdote. The board races both twins at their defaults over "
         "{n} story openings they never trained on, one race after another, and fills in a row per opening and "
         "side: forward passes, answer tokens, tokens a pass, seconds on the side's own clock and the referee's "
         "perplexity of the answer (an AR twin trained with another seed; lower reads more like the stories). "
         "`python -m app board` runs it on any two sources (docs/board.md).")


def shown(table: pd.DataFrame) -> pd.DataFrame:
    """The rows as the page shows them: the columns it names, sides by their names, openings counted from 1."""
    out = table[list(COLUMNS)].rename(columns=COLUMNS)
    out["opening"] = pd.to_numeric(out["opening"]) + 1
    out["side"] = out["side"].map(dict(SIDES)).fillna(out["side"])
    return out.round({"tokens a pass": 2, "seconds": 2})


def openings(numbers: list[int]) -> str:
    """Openings named for a sentence, counted from 1: "none", "2", "1 and 3", "1, 3 and 4"."""
    named = [str(n + 1) for n in numbers]
    return "none" if not named else named[0] if len(named) == 1 else ", ".join(named[:-1]) + " and " + named[-1]


def note(table: pd.DataFrame) -> str:
    """What to notice, from the rows: each twin's tokens a pass and median and worst perplexity, and on which
    openings the diffusion twin's more tokens a pass cost quality (its perplexity above the AR twin's) and on which
    they did not."""
    sides = summary(table).set_index("label")
    d, a = (sides.loc[spec] for spec, _ in SIDES)
    both = table.pivot_table(index="prompt_index", columns="label", values="quality").dropna()
    both.index = pd.to_numeric(both.index)
    worse = both[SIDES[0][0]] > both[SIDES[1][0]]
    return (f"**What to notice:** over {len(both)} openings the diffusion twin wrote {d['tokens_per_pass']:.2f} "
            f"tokens a pass (median perplexity {d['median_quality']:.2f}, worst {d['worst_quality']:.2f}) and the AR "
            f"twin {a['tokens_per_pass']:.2f} (median {a['median_quality']:.2f}, worst {a['worst_quality']:.2f}). "
            f"More tokens a pass cost quality on {int(worse.sum())} of {len(both)} openings (the diffusion twin's "
            f"perplexity above the AR twin's: {openings(sorted(both.index[worse]))}) and did not on "
            f"{int((~worse).sum())} ({openings(sorted(both.index[~worse]))}): one race would have told either story.")


def run_handler(prompts: int = PROMPTS, policy: Policy = LOCAL) -> Callable[[], Iterator[tuple[Any, Any, str]]]:
    """The Run button: races the board, yielding the chart, the table and a line after every race."""
    def run() -> Iterator[tuple[Any, Any, str]]:
        heats = plan(paired(*(Entrant(spec, spec, spec) for spec, _ in SIDES)), prompt_set("stories")[:prompts], 1)
        board = Board(heats, None, referee(), takes_seed,
                      race_options={"make": visitor_source(Visitor(policy)), "max_bytes": 0})
        yield gr.skip(), gr.skip(), f"Racing opening 1 of {len(heats)}..."
        for done, _ in enumerate(board.run(), start=1):
            table = frame(board.rows)
            line = note(table) if done == len(heats) else f"Racing opening {done + 1} of {len(heats)}..."
            yield curve_figure(curve(table), "referee_ppl"), shown(table), line

    return run


def board_tab(prompts: int = PROMPTS, policy: Policy = LOCAL) -> None:
    """Builds the Board area inside the open gr.Blocks under the page's `policy` (`prompts`: openings raced)."""
    gr.Markdown(INTRO.format(n=prompts), elem_id="board-intro")
    button = gr.Button("Run the twins' board", elem_id="board-run")
    plot = gr.Plot(label="Quality against tokens per pass", show_label=False, elem_id="board-plot")
    table = gr.Dataframe(headers=list(COLUMNS.values()), interactive=False, elem_id="board-table")
    line = gr.Markdown("Not run yet: press **Run the twins' board**.", elem_id="board-note")
    button.click(run_handler(prompts, policy), outputs=[plot, table, line], **queued("board"), show_progress="hidden",
                 api_name=False)
