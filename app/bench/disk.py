"""`python -m app bench --only disk`: what a save's disk check costs once visitors' owner folders pile up
(app/trace/store.py `make_room`, issue 49).

A temporary visitors' folder gets OWNERS owner folders, each with one small run and the address note a page writes;
then the check before a save (`make_room`) is timed for an owner with runs of their own and for a fresh one, with
the store's `written` after each run as the page calls it. The first check counts every folder once (one scan, as
every check did before); the sweeper's pass over all of them (expiry, empty folders) is timed too.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from app.trace import store

OWNERS = 20_000
CHECKS = 200  # timed checks of each kind


def fill(root: Path, owners: int) -> None:
    """`owners` owner folders under root's visitors' folder, each one 2 kB run from one of 500 addresses."""
    for n in range(owners):
        folder = root / store.OWNERS / f"{n:032x}"
        folder.mkdir(parents=True)
        (folder / "run.jsonl").write_bytes(b"x" * 2_000)
        (folder / store.FROM).write_text(store.address_tag(f"10.2.{n % 500 // 250}.{n % 250}") + "\n")


def timed_checks(owner: str, address: str, fresh: bool) -> list[float]:
    """Milliseconds of each of CHECKS make_room calls; each is followed by a small run and `written`, as a save is."""
    times = []
    for n in range(CHECKS):
        who = f"{owner}-{n}" if fresh else owner
        started = time.perf_counter()
        store.make_room(who, address)
        times.append((time.perf_counter() - started) * 1000)
        path = store.user_dir(who) / f"bench-{n}.jsonl"
        path.write_bytes(b"y" * 2_000)
        store.written(who, address, path)
    return times


def summary(times: list[float]) -> dict[str, float]:
    return {"median_ms": round(statistics.median(times), 2), "max_ms": round(max(times), 2)}


def bench(owners: int = OWNERS) -> dict[str, Any]:
    """Seconds of the first check (one scan of every folder) and of a sweep, and milliseconds of each later check."""
    before = os.environ.get("CONVERGE_RECORDINGS")
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["CONVERGE_RECORDINGS"] = tmp
        try:
            started = time.perf_counter()
            fill(Path(tmp), owners)
            made = time.perf_counter() - started
            started = time.perf_counter()
            store.make_room("bench-first", "10.3.0.1")
            first = time.perf_counter() - started
            own = timed_checks("bench-owner", "10.3.0.2", fresh=False)  # 99 runs kept: its own oldest go
            new = timed_checks("bench-fresh", "10.3.0.3", fresh=True)
            started = time.perf_counter()
            swept = store.sweep()
            sweep_s = time.perf_counter() - started
        finally:
            if before is None:
                os.environ.pop("CONVERGE_RECORDINGS", None)
            else:
                os.environ["CONVERGE_RECORDINGS"] = before
    return {"owner_folders": owners, "folders_written_s": round(made, 2), "first_check_s": round(first, 2),
            "check_own_runs": summary(own), "check_fresh_owner": summary(new),
            "sweep_s": round(sweep_s, 2), "swept": swept}
