"""A plain `python -m pytest` runs on three workers (tests/parallel.py): the tests that share a module-scoped fixture,
and the load-sensitive modules, each stay on one worker; `-p no:xdist`, `-n 0` and a run of named files still run in
one process. Checked on a small suite of its own, run by a real pytest in a subprocess."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.parallel import ONE_THREAD, WORKERS, workers

ROOT = Path(__file__).resolve().parent.parent
SHARED = '''
import os
import pytest

@pytest.fixture(scope="module")
def shared():
    return os.getpid()

def test_one(shared):
    assert shared == os.getpid()

def test_two(shared):
    assert shared == os.getpid()

def test_alone():
    pass
'''
LOAD = '''
def test_under_load():
    pass

def test_under_load_too():
    pass
'''


THREADS = '''
import os

def test_one_thread_a_pool_in_a_worker_and_the_callers_choice_without_workers():
    pools = [os.environ.get(name) for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")]
    assert pools == (["1", "1"] if os.environ.get("PYTEST_XDIST_WORKER") else [None, None])
'''


def run(folder: Path, *args: str) -> str:
    """The output of pytest run on `folder`'s suite (loading tests.parallel as tests/conftest.py does), from an
    environment that sets no thread pool's size and is no worker's (a worker of this run hands its own down)."""
    env = {**{k: v for k, v in os.environ.items() if k not in ONE_THREAD and not k.startswith("PYTEST_XDIST")},
           "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", "-p", "no:randomly",
                           *args], cwd=folder, env=env, capture_output=True, text=True, check=False, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    (tmp_path / "conftest.py").write_text('pytest_plugins = ["tests.parallel"]\n')
    (tmp_path / "test_shared.py").write_text(SHARED)
    (tmp_path / "test_load.py").write_text(LOAD)  # a name in tests/parallel.py LOAD_SENSITIVE
    (tmp_path / "test_alpha.py").write_text("def test_collected_first():\n    pass\n")
    (tmp_path / "test_threads.py").write_text(THREADS)
    return tmp_path


def test_workers_are_three_capped_at_one_more_than_the_machines_cores() -> None:
    assert WORKERS == 3 and workers(16) == 3 and workers(2) == 3 and workers(1) == 0 and workers(None) == 0


@pytest.mark.skipif(workers(os.cpu_count()) < 2, reason="a one-core machine runs the suite in one process")
def test_a_plain_run_uses_its_workers_and_keeps_shared_fixtures_and_load_tests_on_one(suite: Path) -> None:
    out = run(suite)
    n = workers(os.cpu_count())
    assert f"created: {n}/{n} workers" in out, out
    where = {test: gw for gw, test in re.findall(r"\[(gw\d)\] .*?PASSED (\S+)", out)}  # each test's worker
    assert len(where) == 7, out
    assert where["test_shared.py::test_one@test_shared.py"] == where["test_shared.py::test_two@test_shared.py"]
    assert where["test_load.py::test_under_load@load"] == where["test_load.py::test_under_load_too@load"]
    assert "test_shared.py::test_alone" in where  # a test with nothing shared joins no group


def test_without_xdist_with_no_workers_or_with_files_named_the_run_stays_in_one_process_and_long_modules_go_first(
        suite: Path) -> None:
    named = ("test_alpha.py", "test_shared.py", "test_load.py", "test_threads.py")
    for args in (("-p", "no:xdist"), ("-n", "0"), named):
        out = run(suite, *args)
        assert "created:" not in out and "[gw" not in out and "7 passed" in out, out  # no worker; paths may say gw0
        order = re.findall(r"^(test_\w+\.py)::", out, re.M)
        assert order.index("test_load.py") < order.index("test_alpha.py") < order.index("test_shared.py"), out
