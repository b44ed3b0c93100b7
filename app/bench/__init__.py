"""`python -m app bench`: every speed and quality figure docs/figures.md quotes, measured in one run.

The bench room: one module per section, each importing the domain it measures (analysis, engine, race, sweeps,
lessons, exports, the player), never imported by it, so measuring code stays out of the code it measures.
"""

from __future__ import annotations

import importlib
import json
import os
import platform
import sys
import time
from typing import Any, Callable

from app.cli.parsers import command_parser

# each section: the module of this room whose `bench()` measures it, imported only when that section runs
SECTIONS = {
    "pipeline": "app.bench.pipeline",
    "engine": "app.bench.engine",
    "twins": "app.bench.twins",
    "uniform": "app.bench.uniform",
    "race": "app.bench.race",
    "sweeps": "app.bench.sweeps",
    "lessons": "app.bench.lessons",
    "export": "app.bench.video",
    "player": "app.bench.player",
    "browser": "app.bench.browser",
    "served": "app.bench.served",
    "caps": "app.bench.caps",
    "budgets": "app.bench.budgets",
    "disk": "app.bench.disk",
    "diffusion-gemma": "app.bench.diffusion_gemma",
}


def missing_twins(folder: str) -> str | None:
    """One sentence saying why the twins section cannot run on a --models folder (None when it can): what load_twin
    finds missing or corrupt, or no commit filter, which load_twin leaves optional but the page's defaults use (a
    candidate from app.training.train has none until fit_filter fits one). The twins stay loaded for the section."""
    from app.engine.model import load_twin
    from app.errors import UserError

    try:
        dm = load_twin("diffusion", folder)[0]
        for kind in ("ar", "referee"):
            load_twin(kind, folder)
    except UserError as e:
        return str(e)
    if dm.commit_filter is None:
        return (f"{folder} has no diffusion.filter.safetensors (fit the filter first: python -m "
                "app.training.fit_filter --models DIR --corpus ../shared/corpus/tinystories-*.txt).")
    return None


def _section(name: str) -> Callable[..., dict[str, Any]]:
    """The `bench` function of the named section's module (twins' and uniform's take a models folder)."""
    return importlib.import_module(SECTIONS[name]).bench


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
        result[name] = _section(name)(args.models) if takes_models else _section(name)()
        result[name]["bench_seconds"] = round(time.perf_counter() - started, 2)
        if not args.json:
            print(f"{name}: {json.dumps(result[name], indent=2)}", file=sys.stderr)
    if args.json:
        print(json.dumps(result))
    return 0
