"""The Board area: the built-in twins raced over held-out story openings, one race after another, the table (pandas)
and the curve of quality against tokens per pass (plotly) filling in as each race ends, and a what-to-notice line
whose numbers come from the table on screen (app/board/notes.py, which the static site's board says in JavaScript).

Boards have their own queue ("board", its budget in app/ui/budgets.py): one board runs at a time on the page, each
race in it bounded as a race is (a CPU slot a side, the race time limit), its sides made through the page's one
policy check (app/ui/visitor.py), and saved in the visitor's library as a race is (the same size cap and hourly disk
budget; a race the budget refuses runs unsaved). Clicking a row opens its race in the player. A board lesson
(app/lessons/guided.py `board`) runs its board here, at its settings, through the same queue and bounds.

On a page launched with the static site's folder (where the race box offers "Run on: your browser"), the area also
offers the twins' board in the visitor's browser (`browser_board`): fixed markup whose buttons app/ui/browser_race.js
wires, racing in the page's player and drawing the table, status and note with the static site's one drawing
(app/site/js/race.js `showBoard`). It has no handler on the server, which sends only the site's files; it is not saved.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

import gradio as gr
import pandas as pd

from app.board.notes import COLUMNS as SHOWN
from app.board.notes import NOTICE, PROMPTS, SIDES, cells, note
from app.board.prompts import prompt_set
from app.board.run import Board, Entrant, paired, plan, referee, takes_seed
from app.board.tables import curve, frame
from app.lessons.guided import LESSONS
from app.serving.policy import LOCAL, Policy
from app.trace.store import RUN_MAX_BYTES, DiskFull, make_room, user_dir, written
from app.ui.browser_race import BEGAN_ID
from app.ui.budgets import queued
from app.ui.events import HIDDEN, QUIET
from app.ui.library_ui import load_entry
from app.ui.sessions import visitor_of
from app.ui.site_files import SITE_ROUTE
from app.ui.visitor import Visitor, visitor_source
from app.view.board import curve_figure

COLUMNS = {**SHOWN, "recording": "race"}  # the table's columns (app/board/notes.py) and each row's race
INTRO = ("### Many prompts, one board\nOne race is one anecdote. The board races both twins at their defaults over "
         "{n} story openings they never trained on, one race after another, and fills in a row per opening and "
         "side: forward passes, answer tokens, tokens a pass, seconds on the side's own clock and the referee's "
         "perplexity of the answer (an AR twin trained with another seed; lower reads more like the stories). "
         "Each race the server runs for the board is saved in your library (one your hourly disk budget refuses "
         "runs unsaved, and its row says so); click a row to open its race in the player. `python -m app board` "
         "runs it on any two sources (docs/board.md).")

BROWSER_ID = "board-browser"  # the browser board's box; its parts' ids start with it (app/ui/browser_race.js)
BROWSER_RUN = "Run the twins' board in your browser"
BROWSER_SAYS = ("Or race the same board in your browser: the twins and the referee run on this device "
                "(onnxruntime-web), not on the server, each race drawn in the player above, and the board is not saved "
                "in your library.")
# fixed markup, no visitor's text in it: browser_race.js draws the table's cells and the lines with textContent
BROWSER_HTML = (f'<div id="{BROWSER_ID}-box" data-base="{{base}}" data-began="{{began}}">'
                f'<p id="{BROWSER_ID}-says">{BROWSER_SAYS}</p>'
                f'<button id="{BROWSER_ID}-run" type="button">{BROWSER_RUN}</button> '
                f'<button id="{BROWSER_ID}-stop" type="button" disabled>Stop the board</button>'
                f'<p id="{BROWSER_ID}-status" role="status">Not run yet.</p>'
                f'<table id="{BROWSER_ID}-table"><thead></thead><tbody></tbody></table>'
                f'<p id="{BROWSER_ID}-note"></p></div>')
BROWSER_JS = "window.ConvergeBrowserRace.board(element);"  # no quoted names: Gradio reads those as events


def shown(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """The rows as the page shows them (app/board/notes.py `cells`) and each one's race: its file's name or "not
    saved"."""
    return pd.DataFrame([[*cells(r), Path(r["recording"]).name if r["recording"] else "not saved"] for r in rows],
                        columns=list(COLUMNS.values()))


def race_options(visitor: Visitor) -> Callable[[], dict[str, Any]]:
    """Each race's options, as the page's race takes them: the visitor's `make`, their library folder and the size cap,
    after making room on disk (a race the hourly budget refuses runs unsaved)."""
    def options() -> dict[str, Any]:
        try:
            make_room(visitor.owner, visitor.address)
        except DiskFull:
            return {"make": visitor_source(visitor), "max_bytes": 0}
        cap = RUN_MAX_BYTES if visitor.owner is not None else None
        return {"make": visitor_source(visitor), "folder": user_dir(visitor.owner), "max_bytes": cap}
    return options


def run_handler(prompts: int = PROMPTS, sides: dict[str, tuple[str, dict[str, Any]]] | None = None
                ) -> Callable[[Visitor], Iterator[tuple[Any, Any, str, list[str]]]]:
    """The Run button (for `as_visitor`): races the board, yielding the chart, the table, a line and the races' names
    after every race. `sides`: each side's (spec, settings), as a lesson gives them; None: both twins at defaults."""
    given = list((sides or {side: (spec, {}) for side, (spec, _) in zip(("left", "right"), SIDES)}).values())

    def run(visitor: Visitor) -> Iterator[tuple[Any, Any, str, list[str]]]:
        heats = plan(paired(*(Entrant(spec, spec, spec, settings) for spec, settings in given)),
                     prompt_set("stories")[:prompts], 1)
        board = Board(heats, None, referee(), takes_seed, race_options=race_options(visitor),
                      on_saved=lambda path: written(visitor.owner, visitor.address, path))
        yield gr.skip(), gr.skip(), f"Racing opening 1 of {len(heats)}...", []
        for done, _ in enumerate(board.run(), start=1):
            table = frame(board.rows)
            line = (f"**{NOTICE}** {note(board.rows)}" if done == len(heats)
                    else f"Racing opening {done + 1} of {len(heats)}...")
            names = [Path(r["recording"]).name for r in board.rows if r["recording"]]
            yield curve_figure(curve(table), "referee_ppl"), shown(board.rows), line, names

    return run


def open_row(visitor: Visitor, names: list[str], evt: gr.SelectData) -> tuple[Any, Any, str]:
    """Clicking a row opens its race in the player: the race named in the row, if this board saved it."""
    values = evt.row_value if isinstance(evt.row_value, list) else []
    name = str(values[-1]) if values else ""
    if name not in (names or []):
        return gr.skip(), gr.skip(), "That race was not saved; run the board again to open its races."
    return load_entry(visitor, f"user/{name}")


def runner(policy: Policy, prompts: int) -> Callable[..., Iterator[tuple[Any, Any, str, list[str]]]]:
    """`run_handler` as a Gradio generator handler: the session's visitor from its owner state and request."""
    run = run_handler(prompts)

    def run_board(request: gr.Request, owner: Any) -> Iterator[tuple[Any, Any, str, list[str]]]:
        yield from run(visitor_of(policy, owner, request))
    return run_board


def opener(policy: Policy) -> Callable[..., tuple[Any, Any, str]]:
    """`open_row` as a Gradio select handler: the session's visitor, the board's race names and the clicked row."""
    def open_board_row(request: gr.Request, owner: Any, names: list[str], evt: gr.SelectData) -> tuple[Any, Any, str]:
        return open_row(visitor_of(policy, owner, request), names, evt)
    return open_board_row


def lesson_runner(policy: Policy, tried: bool) -> Callable[..., Iterator[tuple[Any, Any, str, list[str]]]]:
    """A board lesson's board (app/lessons/guided.py `board`) as a Gradio generator handler: its openings, its sides at
    the lesson's settings (after its "Try it" change when `tried`), into the Board area as the Run button's are."""
    def run_lesson_board(request: gr.Request, owner: Any, i: Any) -> Iterator[tuple[Any, Any, str, list[str]]]:
        lesson = LESSONS[int(i)]
        if not lesson.board:
            return
        run = run_handler(min(lesson.board, PROMPTS), lesson.changed() if tried else lesson.sources())  # bounded
        yield from run(visitor_of(policy, owner, request))
    return run_lesson_board


@dataclass(frozen=True)
class BoardArea:
    """The Board area's parts a lesson's board fills: the curve, the table, the line under it and the races' names."""

    plot: Any
    table: Any
    line: Any
    names: Any

    def outputs(self) -> list[Any]:
        """The parts in the order the handlers yield them."""
        return [self.plot, self.table, self.line, self.names]


def board_starter(policy: Policy, owner: Any, area: BoardArea, shell: Any) -> Callable[[Any, Any, bool], Any]:
    """`start_board(event, lesson, tried)`: chains after `event` the opening of the Board area's accordion (`shell`)
    and the board of the lesson whose index the input `lesson` holds; returns the board's event."""
    def start_board(event: Any, lesson: Any, tried: bool) -> Any:
        opened = event.then(lambda: gr.update(open=True), outputs=[shell], queue=False, **HIDDEN,
                            api_name=False)
        return opened.then(lesson_runner(policy, tried), inputs=[owner, lesson], outputs=area.outputs(),
                           **queued("board"), **QUIET)
    return start_board


def browser_board() -> Any:
    """The twins' board in the visitor's browser, where it is called: fixed markup (`BROWSER_HTML`) with the site's
    address and the hidden button a browser race clicks as it begins (app/ui/browser_race.py `BEGAN_ID`: the session's
    race on the server stops), which app/ui/browser_race.js wires with no handler on the server."""
    html = BROWSER_HTML.format(base=SITE_ROUTE.lstrip("/"), began=BEGAN_ID)
    return gr.HTML(value="", html_template=html, js_on_load=BROWSER_JS, apply_default_css=False, elem_id=BROWSER_ID)


def board_tab(prompts: int = PROMPTS, policy: Policy = LOCAL, owner: Any = None, shown_in: list[Any] | None = None,
              browser: bool = False) -> BoardArea:
    """Builds the Board area inside the open gr.Blocks under the page's `policy` (`prompts`: openings raced); `owner`
    is the session's owner state, `shown_in` the player and the recording it holds, where a clicked row's race opens.
    With `browser` (the race box offers "Run on: your browser"), it offers the twins' board in the browser too
    (`browser_board`). Returns its parts, for a lesson's board
    (`board_starter`)."""
    owner = owner if owner is not None else gr.State(None)
    gr.Markdown(INTRO.format(n=prompts), elem_id="board-intro")
    button = gr.Button("Run the twins' board", elem_id="board-run")
    plot = gr.Plot(label="Quality against tokens per pass", show_label=False, elem_id="board-plot")
    table = gr.Dataframe(headers=list(COLUMNS.values()), interactive=False, elem_id="board-table")
    line = gr.Markdown("Not run yet: press **Run the twins' board**.", elem_id="board-note")
    opened = gr.Markdown("", elem_id="board-opened")
    names = gr.State([])
    if browser:
        browser_board()
    button.click(runner(policy, prompts), inputs=[owner], outputs=[plot, table, line, names],
                 **queued("board"), **QUIET)
    if shown_in is not None:
        table.select(opener(policy), inputs=[owner, names], outputs=[*shown_in, opened],
                     **queued("recording"), **QUIET)
    return BoardArea(plot, table, line, names)
