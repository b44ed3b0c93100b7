"""`python -m app bench [--only SECTION]`: runs the bench room's sections (all by default) and prints their figures."""

from __future__ import annotations

import json
import os
import platform
import sys
import time
from typing import Any

from app.bench import SECTIONS, missing_twins, section
from app.cli.parsers import command_parser


def main(argv: list[str]) -> int:
    """Runs the sections asked for (all by default) and prints each, or one JSON object with --json."""
    parser = command_parser("bench", "Measure Converge's figures.")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--only", choices=SECTIONS, action="append",
                        help="run only this section (repeatable; default: all of them)")
    parser.add_argument("--models", default=None, help="the twins section on the twins in this folder (default: the "
                        "shipped ones in assets/models), e.g. an earlier commit's twins to compare")
    args = parser.parse_args(argv)
    if args.models and (args.only is None or "twins" in args.only) and (problem := missing_twins(args.models)):
        print(problem, file=sys.stderr)  # before any section runs, not in a traceback minutes in
        return 2
    result: dict[str, Any] = {"machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                                          "platform": platform.platform()}}
    for name in args.only or SECTIONS:
        started = time.perf_counter()
        takes_models = name in ("twins", "uniform") and args.models
        result[name] = section(name)(args.models) if takes_models else section(name)()
        result[name]["bench_seconds"] = round(time.perf_counter() - started, 2)
        if not args.json:
            print(f"{name}: {json.dumps(result[name], indent=2)}", file=sys.stderr)
    if args.json:
        print(json.dumps(result))
    return 0
