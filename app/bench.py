"""`python -m app bench`: every speed and quality figure the README quotes, measured in one run."""

from __future__ import annotations

import importlib
import json
import os
import platform
import sys
import time
from typing import Any, Callable

from app.cli_help import command_parser


# each section: the module and function that measure it, imported only when that section runs
SECTIONS = {
    "pipeline": ("app.analysis", "bench_pipeline"),
    "engine": ("app.engine.bench", "run"),
    "twins": ("app.engine.bench", "twins_section"),
    "race": ("app.ui.race_bench", "bench"),
    "sweeps": ("app.sweeps", "bench"),
    "lessons": ("app.lessons", "bench"),
    "export": ("app.export.video", "bench"),
    "player": ("app.export.player_bench", "bench"),
    "caps": ("app.ui.caps_bench", "bench"),
}


def _section(name: str) -> Callable[[], dict[str, Any]]:
    module, function = SECTIONS[name]
    return getattr(importlib.import_module(module), function)


def main(argv: list[str]) -> int:
    parser = command_parser("bench", "Measure Converge's figures.")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--only", choices=SECTIONS, action="append", help="run only this section (repeatable; default: all of them)")
    args = parser.parse_args(argv)
    result: dict[str, Any] = {"machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                                          "platform": platform.platform()}}
    for name in args.only or SECTIONS:
        started = time.perf_counter()
        result[name] = _section(name)()
        result[name]["bench_seconds"] = round(time.perf_counter() - started, 2)
        if not args.json:
            print(f"{name}: {json.dumps(result[name], indent=2)}", file=sys.stderr)
    if args.json:
        print(json.dumps(result))
    return 0
