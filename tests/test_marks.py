"""Each test is marked from what it uses (tests/conftest.py): Chromium, a server, the site, torch. The fast lane in
the README leaves those out, so a mark forgotten by hand would slow or break it; here the marks are read back from a
real collection: one that lists each test's marks, and one that selects the fast lane with its `-m` expression."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


FILES = ("tests/test_first_screen.py", "tests/test_clean_tree.py", "tests/test_hf.py", "tests/test_openai_source.py")
FAST = "not browser and not server and not torch"
# prints each collected test's id and its marks, as the collection hooks left them (a plugin module of this file)
SHOW = "tests.test_marks"


def pytest_collection_finish(session: pytest.Session) -> None:
    """(As a plugin, `-p tests.test_marks`.) Each collected test's id and the names of its marks, one line each."""
    for item in session.items:
        print("MARKS", item.nodeid, " ".join(sorted({m.name for m in item.iter_markers()})))


def collected(*args: str) -> dict[str, set[str]]:
    """The test ids `pytest --collect-only` selects with `args`, each with the names of its marks."""
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                           "-p", SHOW, *args], capture_output=True, text=True, cwd=ROOT, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = [line.split(" ", 2) for line in done.stdout.splitlines() if line.startswith("MARKS ")]
    return {parts[1]: set(parts[2].split()) if len(parts) > 2 else set() for parts in lines}


def test_marks_come_from_the_fixtures_and_imports_a_test_uses() -> None:
    every = collected(*FILES)
    marked = {mark: {t for t, marks in every.items() if mark in marks} for mark in ("browser", "server", "torch")}
    assert marked["browser"] and all("test_first_screen.py" in t for t in marked["browser"])
    assert any("test_openai_source.py" in t for t in marked["server"])
    assert marked["torch"] and all("test_hf.py" in t for t in marked["torch"])
    fast = set(collected("-m", FAST, *FILES))  # the README's fast lane selects exactly the tests with none of them
    assert any("test_clean_tree.py" in t for t in fast)
    assert fast == set(every) - (marked["browser"] | marked["server"] | marked["torch"])
