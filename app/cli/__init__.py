"""The command line: one module per command (`main(argv)` in each), the page's launch among them, and each
command's --help built by parsers.py. COMMANDS is the one list `python -m app --help` and the dispatch read."""

from __future__ import annotations

# each headless command and the one line `python -m app --help` shows for it; its module is app.cli.NAME
COMMANDS = {
    "record": "Run a race headless and save the recording.",
    "pairs": "List the pairs of real models to race (record --pair NAME), their size and the device they suit.",
    "generate": "Run one source on one prompt and print its answer (or JSON with its figures).",
    "export": "Export a recorded race as a video (MP4, GIF) or a self-contained HTML page.",
    "stats": "Print a recording's metrics per side; --csv writes its per-frame figures.",
    "site": "Write a static site where the built-in twins race in the visitor's browser (no server).",
    "board": "Race two sources (or one under several settings) over many prompts: a CSV row each, AUP and the curve.",
    "bench": "Measure every speed and quality figure the docs quote (docs/figures.md).",
}


def commands_help() -> str:
    """The epilog of `python -m app --help`: every command with its one line."""
    width = max(map(len, COMMANDS))
    lines = [f"  {name.ljust(width)}  {line}" for name, line in COMMANDS.items()]
    return "commands (python -m app COMMAND --help for its options):\n" + "\n".join(lines)
