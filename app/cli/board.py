"""`python -m app board`: many prompts, one board. Two sources (`--left/--right`) or one source under several settings
(`--source S --vary SETTING=V1,V2,...`) raced over a prompt set, a row per prompt and side in a CSV (and an HTML
page when --out ends in .html), with each side's medians, worst, AUP and the curve of quality against tokens a
pass."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any, TextIO

from app.cli import COMMANDS
from app.cli.parsers import command_parser

EPILOG = """examples:
  python -m app board --out board.csv                                  the twins over the held-out openings
  python -m app board --source local-diffusion --vary filter=0.9,0.7,0.5,0.3 --out curve.html
  python -m app board --left openai:gpt-4o-mini --right mercury:mercury-2 --prompts questions --out chat.csv
  python -m app board --left local-diffusion --right local-ar --prompts mine.txt --seeds 3 --out mine.csv

A rerun with the same --out skips the rows its CSV already holds; Ctrl-C keeps every race that finished.
docs/board.md says what each column means and how AUP is computed."""


def main(argv: list[str]) -> int:
    """Runs the board, printing progress on stderr and each side's summary on stdout; 130 when stopped by Ctrl-C."""
    parser = command_parser("board", COMMANDS["board"], EPILOG)
    parser.add_argument("--left", default=None, help="source for the left side (default: local-diffusion)")
    parser.add_argument("--right", default=None, help="source for the right side (default: local-ar)")
    parser.add_argument("--left-settings", default="{}", help="JSON object of settings for the left source")
    parser.add_argument("--right-settings", default="{}", help="JSON object of settings for the right source")
    parser.add_argument("--source", default=None, help="one source to race under each value of --vary")
    parser.add_argument("--vary", default=None, metavar="SETTING=V1,V2,...",
                        help="with --source: the setting to move and its values (two or more)")
    parser.add_argument("--settings", default="{}", help="with --source: JSON object of settings every value shares")
    parser.add_argument("--prompts", default=None, metavar="stories|questions|FILE",
                        help="the bundled held-out story openings, the bundled questions with checkable answers, or "
                             "a file (one prompt a line, an optional expected answer after a tab) (default: stories "
                             "when every source is a built-in twin, else questions)")
    parser.add_argument("--limit", type=int, default=None, metavar="N", help="only the first N prompts")
    parser.add_argument("--seeds", type=int, default=1, help="seeds per prompt (0, 1, ...), given to each source "
                        "that takes a seed")
    parser.add_argument("--out", default="board.csv", help="the board's CSV; a name ending in .html writes the page "
                        "too, its CSV beside it")
    args = parser.parse_args(argv)
    try:
        plan = planned(args)
    except ValueError as e:
        print(e, file=sys.stderr)
        return 2
    return run(*plan)


def planned(args: Any) -> tuple[Any, Path, Path | None]:
    """The board the options ask for, its CSV and its HTML page (None); a ValueError in one sentence for a bad option,
    before anything loads or a file is written."""
    from app.board.prompts import prompt_set
    from app.board.run import Board, Entrant, paired, plan, referee, takes_seed, varied
    from app.errors import UserError
    from app.sources.base import honoured

    try:
        if args.source or args.vary:
            if not (args.source and args.vary) or args.left or args.right:
                raise UserError("--source and --vary go together, and without --left/--right.")
            entrants = varied(args.source, args.vary, _settings(args.settings, "--settings"))
        else:
            left, right = args.left or "local-diffusion", args.right or "local-ar"
            entrants = paired(Entrant(left, left, left, _settings(args.left_settings, "--left-settings")),
                              Entrant(right, right, right, _settings(args.right_settings, "--right-settings")))
        for e in entrants:
            honoured(e.spec, e.settings)
        twins = all(e.spec.startswith("local-") for e in entrants)
        prompts = prompt_set(args.prompts or ("stories" if twins else "questions"))[:args.limit]
        if args.seeds < 1 or (args.limit is not None and args.limit < 1):
            raise UserError("--seeds and --limit take a whole number of at least 1.")
        out = Path(args.out)
        csv_path = out.with_suffix(".csv") if out.suffix == ".html" else out
        board = Board(plan(entrants, prompts, args.seeds), csv_path, referee(), takes_seed)  # reads the CSV to resume
    except UserError as e:
        raise ValueError(str(e)) from e
    return board, csv_path, out if out.suffix == ".html" else None


def _settings(text: str, option: str) -> dict[str, Any]:
    from app.errors import UserError

    try:
        value = json.loads(text)
    except ValueError as e:
        raise UserError(f"{option} must be a JSON object: {e}.") from e
    if not isinstance(value, dict):
        raise UserError(f"{option} must be a JSON object, like '{{\"steps\": 64}}'.")
    return value


def run(board: Any, csv_path: Path, html: Path | None) -> int:
    """Races what the CSV does not hold yet, with a progress bar, then writes the tables (and the page)."""
    from app.hf.download import watch

    todo, stopped = len(board.pending()), False
    started = time.monotonic()
    bar(sys.stderr, 0, todo, started)
    try:
        with watch(lambda line: print(line, file=sys.stderr, flush=True)):  # a model's first download, as it goes
            for done, _ in enumerate(board.run(), start=1):
                bar(sys.stderr, done, todo, started)
    except KeyboardInterrupt:
        stopped = True
    print(file=sys.stderr)
    write_tables(board, csv_path, html)
    if stopped:
        print(f"Stopped: {csv_path} keeps the {len(board.rows)} rows that finished; the same command resumes.",
              file=sys.stderr)
        return 130
    return 0


def bar(stream: TextIO, done: int, total: int, started: float, width: int = 30) -> None:
    """One line of progress: a bar, races done of those to run, and the time so far."""
    filled = width * done // total if total else width
    seconds = int(time.monotonic() - started)
    line = f"board [{'#' * filled}{'-' * (width - filled)}] {done}/{total} races, {seconds // 60}:{seconds % 60:02d}"
    stream.write(("\r" if stream.isatty() else "") + line + ("" if stream.isatty() else "\n"))
    stream.flush()


def write_tables(board: Any, csv_path: Path, html: Path | None) -> None:
    """Prints each side's summary and writes it and the curve as CSVs beside the board's (and the page)."""
    from app.board.cells import safe_table
    from app.board.tables import curve, frame, summary

    table = frame(board.rows)
    if table.empty:
        print("No race finished; nothing to summarise.")
        return
    sides, points = summary(table), curve(table)
    safe_table(sides).to_csv(csv_path.with_name(csv_path.stem + "-summary.csv"), index=False)
    safe_table(points).to_csv(csv_path.with_name(csv_path.stem + "-curve.csv"), index=False)
    print(sides.to_string(index=False))
    print(f"saved {csv_path}" + (f" and {html}" if html else ""))
    if html is not None:
        from app.export.board import board_page

        html.write_text(board_page(table, sides, points), encoding="utf-8")
