"""`python -m app pairs`: the pairs of real models to race, their size and the device they suit, and whether this
machine can hold each."""

from __future__ import annotations

import json

from app.cli import COMMANDS
from app.cli.parsers import command_parser


def main(argv: list[str]) -> int:
    """Lists the pairs with this machine's verdict on each, as text or JSON."""
    parser = command_parser("pairs", COMMANDS["pairs"])
    parser.add_argument("--json", action="store_true", help="print the pairs as JSON, with this machine's verdict")
    args = parser.parse_args(argv)
    from app.errors import UserError
    from app.sources.pairs import PAIRS, check_machine

    rows = []
    for p in PAIRS.values():
        try:
            check_machine(p)
            fits = None
        except UserError as e:
            fits = str(e)
        rows.append({**p.to_json(), "fits_here": fits is None, "why_not": fits})
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    for r in rows:
        size = f"{r['download_gb']:g} GB download, {r['memory_gb']:g} GB memory" if r["memory_gb"] else "no download"
        print(f"{r['name']}: {r['title']} [{r['device']}; {size}]\n  left {r['left']}, right {r['right']}\n"
              f"  {r['note']}" + (f"\n  not here: {r['why_not']}" if r["why_not"] else ""))
    return 0
