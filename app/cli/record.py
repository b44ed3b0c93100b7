"""`python -m app record --prompt TEXT --out FILE`: a race run headless (two sources, or a pair of real models) and
saved as a recording."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Literal

from app.cli import COMMANDS
from app.cli.drafts import add_flags, revision_of
from app.cli.parsers import command_parser
from app.engine.draft import Revision
from app.errors import counted


def main(argv: list[str]) -> int:
    """Races two sources headless, saves the recording and prints each side's end; 1 when a side failed."""
    parser = command_parser("record", COMMANDS["record"])
    parser.add_argument("--left", default=None, help="source for the left side (default: local-diffusion)")
    parser.add_argument("--right", default=None, help="source for the right side (default: local-ar)")
    parser.add_argument("--pair", default=None, metavar="NAME",
                        help="race a pair of real models (python -m app pairs lists them); --left/--right and their "
                             "settings override its parts. Checks the memory before anything is downloaded")
    parser.add_argument("--prompt", required=True, help="the prompt both sides answer")
    parser.add_argument("--out", required=True, help="recording file to write (.jsonl)")
    parser.add_argument("--left-settings", default="{}", help="JSON object of settings for the left source")
    parser.add_argument("--right-settings", default="{}", help="JSON object of settings for the right source")
    parser.add_argument("--pin", action="append", default=[], metavar="POSITION:TEXT",
                        help="fix TEXT at answer position POSITION of the left (diffusion) side (repeatable)")
    add_flags(parser)
    args = parser.parse_args(argv)

    try:
        settings = {"left": json.loads(args.left_settings), "right": json.loads(args.right_settings)}
    except ValueError as e:
        print(f"Settings must be JSON objects: {e}.", file=sys.stderr)
        return 2
    left, right = args.left or "local-diffusion", args.right or "local-ar"
    if args.pair:
        from app.errors import UserError
        from app.sources.pairs import check_machine, pair

        try:
            chosen = pair(args.pair)
            check_machine(chosen)
        except UserError as e:
            print(e, file=sys.stderr)
            return 2
        left, right = args.left or chosen.left, args.right or chosen.right
        settings = {"left": {**(chosen.left_settings if not args.left else {}), **settings["left"]},
                    "right": {**(chosen.right_settings if not args.right else {}), **settings["right"]}}
    if args.pin:
        settings["left"]["pins"] = args.pin
    draft = read_draft(args)
    if draft is False or refused(left, right, settings):
        return 2
    from app.hf.download import watch

    with watch(lambda line: print(line, file=sys.stderr, flush=True)):  # a model's first download, as it goes
        final = record(args.prompt, left, right, args.out, settings=settings, draft=draft)
    failed = False
    for side, entry in final["sides"].items():
        m = entry.get("metrics") or {}
        line = f"{side}: {entry['spec']} {entry['status']}, {counted(m.get('frames', 0), 'frame')}"
        if m.get("t_final") is not None:
            line += f", {m['t_final']:.2f} s"
        if entry.get("message"):
            line += f" ({entry['message']})"
            failed = failed or entry["status"] == "error"
        print(line)
    print(f"saved {args.out}")
    return 1 if failed else 0


def read_draft(args: argparse.Namespace) -> Revision | None | Literal[False]:
    """The revision the draft flags ask for (None: none), or False once their UserError is said on stderr."""
    from app.errors import UserError

    try:
        return revision_of(args)
    except UserError as e:
        print(e, file=sys.stderr)
        return False


def refused(left: str, right: str, settings: dict[str, dict[str, object]]) -> bool:
    """Whether a setting of either side is one its source does not honour, or a pin is not POSITION:TEXT, said in one
    sentence on stderr before anything loads or a file is written."""
    from app.errors import UserError
    from app.sources.base import honoured
    from app.sources.local import as_pins

    try:
        for spec, given in ((left, settings["left"]), (right, settings["right"])):
            honoured(spec, given)
            as_pins(given.get("pins") or ())
    except UserError as e:
        print(e, file=sys.stderr)
        return True
    return False


def record(prompt: str, left: str, right: str, out: str | Path,
           settings: dict[str, dict[str, Any]] | None = None, draft: Revision | None = None) -> dict[str, Any]:
    """Runs a race headless on this machine (trusted: no visitor's policy applies), from `draft` when given, and
    writes the recording; returns the final update, read as the page reads a race."""
    from app.race.run import Race
    from app.ui.live import live_updates

    final: dict[str, Any] = {}
    for update in live_updates(Race(prompt, left, right, settings=settings, out=out, draft=draft), interval=0.2):
        final = update
    return final
