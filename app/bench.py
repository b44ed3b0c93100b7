"""`python -m app bench`: every speed and quality figure the README quotes, measured in one run."""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from typing import Any, Callable


def _section(name: str) -> Callable[[], dict[str, Any]]:
    if name == "pipeline":
        from app.analysis import bench_pipeline

        return bench_pipeline
    if name == "engine":
        from app.engine.bench import run

        return run
    if name == "sweeps":
        from app.sweeps import bench as sweeps_bench

        return sweeps_bench
    if name == "race":
        from app.race import bench as race_bench

        return race_bench
    if name == "lessons":
        from app.lessons import bench as lessons_bench

        return lessons_bench
    if name == "export":
        from app.export.video import bench

        return bench
    if name == "player":
        from app.export.player_bench import bench as player_bench

        return player_bench
    raise ValueError(name)


SECTIONS = ("pipeline", "engine", "race", "sweeps", "lessons", "export", "player")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m app bench", description="Measure Converge's figures.")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--only", choices=SECTIONS, action="append", help="run only these sections")
    args = parser.parse_args(argv)
    import os

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
