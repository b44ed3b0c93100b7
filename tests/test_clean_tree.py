"""The check that fails a run which writes into the repository (tests/clean_tree.py), run on a small repository."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.clean_tree import changed, snapshot


def _repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    (root / ".gitignore").write_text("ignored/\n")
    (root / "kept.txt").write_text("one\n")
    for args in (["init", "-q"], ["add", "."], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x"]):
        subprocess.run(["git", "-C", str(root), *args], check=True)
    return root


def test_a_run_that_writes_new_changes_or_removes_a_file_is_caught(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    (root / "edited.txt").write_text("there before the run\n")
    before = snapshot(root)
    (root / "new" / "race.jsonl").parent.mkdir()
    (root / "new" / "race.jsonl").write_text("{}\n")
    (root / "kept.txt").write_text("two\n")
    (root / "edited.txt").write_text("changed by the run\n")
    assert changed(before, snapshot(root)) == ["edited.txt", "kept.txt", "new/race.jsonl"]
    (root / "kept.txt").unlink()
    assert "kept.txt" in changed(before, snapshot(root))


def test_ignored_files_and_changes_made_before_the_run_are_not_the_runs(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    (root / "mine.txt").write_text("an edit in progress\n")
    before = snapshot(root)
    (root / "ignored").mkdir()
    (root / "ignored" / "cache.bin").write_bytes(b"\0")
    assert changed(before, snapshot(root)) == []
