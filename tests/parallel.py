"""The suite on three workers by default (issue 52): a plain `python -m pytest` runs on pytest-xdist (pinned in
requirements-test.txt) with `--dist loadgroup`, and the tests that share state a worker holds run on one worker.

Loaded by tests/conftest.py as a plugin. Where xdist is absent or turned off (`-p no:xdist`), or the command names
test files, or its own workers (`-n 0` runs in this process), or debugs (`--pdb`), the run goes on as it was asked.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

# the 2-core machine the suite is measured on, plus one: a worker waiting on Chromium or a served process leaves its
# core idle (`vmstat 10`: 7% of the run idle with two workers, 1% with three; the whole suite, run after run on the
# same commit: 12 min 20 s with three, 14 min 35 s with two, then, the machine slower, 16 min 48 s with three and
# 18 min 10 s with two); one more than the machine's cores where it has fewer, none on one core
WORKERS = 3
# modules whose tests measure the machine under load (sessions at once, memory under thousands of requests): they run
# one after another on one worker, never two of them at once
LOAD_SENSITIVE = ("test_load.py", "test_session_memory.py", "test_slow_readers.py")
# the modules whose tests took longest in the last whole runs, started first so that no long one is left for the end
# while the other worker idles (each module stays whole, in the order collected within it)
FIRST = LOAD_SENSITIVE + ("test_lessons.py", "test_commit_filter.py", "test_site.py", "test_watchable.py",
                          "test_hostile_text.py", "test_first_screen.py", "test_fair_share.py")


# torch's (OpenMP) and MKL's thread pools get one thread in each worker, and in what a worker starts, unless the
# command's environment says otherwise: the workers already fill the cores, and a pool's second thread spins waiting
# for one (numpy's OpenBLAS already runs on one thread: app/__init__.py)
ONE_THREAD = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")


def workers(cores: int | None) -> int:
    """Workers for a plain run: WORKERS, capped at one more than the machine's cores (one core: none, the run stays
    serial)."""
    return min(WORKERS, cores + 1) if cores and cores > 1 else 0


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    """Turns a run of the whole suite (no paths named; `-m` and `-k` may pick from it) parallel: `-n WORKERS --dist
    loadgroup`, unless the command chose otherwise; a run of named files stays in one process (the workers would each
    import and collect them for a few tests). A worker is
    built from the command line alone, so it is told here that its run groups tests (see pytest_configure_node)."""
    option = config.option
    if hasattr(config, "workerinput"):
        if config.workerinput.get("converge_dist") == "loadgroup":  # type: ignore[attr-defined]
            option.loadgroup = True
        return
    if (not config.pluginmanager.hasplugin("xdist") or getattr(option, "file_or_dir", None)
            or getattr(option, "numprocesses", None) is not None or getattr(option, "usepdb", False)
            or getattr(option, "collectonly", False) or getattr(option, "dist", "no") != "no"):
        return
    n = workers(os.cpu_count())
    if n:
        option.numprocesses = n
        option.dist = "loadgroup"
        for name in ONE_THREAD:  # set before the workers start: they inherit this process's environment
            os.environ.setdefault(name, "1")


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """Hands each worker the main process's distribution mode (pytest-xdist's hook, in the main process)."""
    node.workerinput["converge_dist"] = node.config.option.dist


def group_of(item: pytest.Item) -> str | None:
    """The xdist group a test joins, None for none: a load-sensitive module's tests all join "load"; a test that uses
    a module-scoped fixture (a page server started once per module) joins its module's group, so the fixture starts
    on one worker only."""
    path = item.path
    if path.name in LOAD_SENSITIVE:
        return "load"
    info = getattr(item, "_fixtureinfo", None)
    defs = getattr(info, "name2fixturedefs", {}) or {}
    if any(d.scope in ("module", "class", "package") for fixturedefs in defs.values() for d in fixturedefs):
        return path.name
    return None


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Adds each test's xdist_group before xdist reads them (so tryfirst), and moves the longest modules first."""
    for item in items:
        group = group_of(item)
        if group and item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(group))
    rank = {name: k for k, name in enumerate(FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(FIRST)))  # stable: the rest keep their order
