"""Each test is marked from what it uses (tests/conftest.py): Chromium, a server, the site, torch. The fast lane in
the README leaves those out, so a mark forgotten by hand would slow or break it; here the marks are read back from a
real collection."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def collected(*args: str) -> set[str]:
    """The test ids `pytest --collect-only` selects with `args`."""
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *args],
                          capture_output=True, text=True, cwd=ROOT, check=False)
    return {line.strip() for line in done.stdout.splitlines() if "::" in line}


def test_marks_come_from_the_fixtures_and_imports_a_test_uses() -> None:
    files = ["tests/test_first_screen.py", "tests/test_clean_tree.py", "tests/test_hf.py",
             "tests/test_openai_source.py"]
    marked = {mark: collected("-m", mark, *files) for mark in ("browser", "server", "torch")}
    fast = collected("-m", "not browser and not server and not torch", *files)
    assert marked["browser"] and all("test_first_screen.py" in t for t in marked["browser"])
    assert any("test_openai_source.py" in t for t in marked["server"])
    assert marked["torch"] and all("test_hf.py" in t for t in marked["torch"])
    assert any("test_clean_tree.py" in t for t in fast)
    assert not fast & (marked["browser"] | marked["server"] | marked["torch"])
