"""Command line: `python -m app` launches the page; `python -m app COMMAND` runs one command headless. Every command
lives in app/cli/, one module each (app.cli.COMMANDS lists them); this file only dispatches."""

from __future__ import annotations

import importlib
import sys


def main(argv: list[str] | None = None) -> int:
    """Runs the command named first (its module's `main` with the rest), else launches the page with all of it."""
    from app.cli import COMMANDS

    argv = sys.argv[1:] if argv is None else argv
    name, rest = (argv[0], argv[1:]) if argv and argv[0] in COMMANDS else ("launch", argv)
    return int(importlib.import_module(f"app.cli.{name}").main(rest))


if __name__ == "__main__":
    sys.exit(main())
