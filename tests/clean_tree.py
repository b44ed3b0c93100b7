"""What a test run may not leave behind: the repository's tracked files and its untracked, unignored ones, read
before the run and after it, so a run that writes into the repository fails (issue 52: a run once committed races)."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path


def snapshot(root: Path) -> dict[str, str]:
    """Each changed or untracked (not ignored) path under `root` with a hash of its content; {} in a clean tree."""
    def git(*args: str) -> bytes:
        return subprocess.run(["git", "-C", str(root), *args], capture_output=True, check=True).stdout

    paths = git("ls-files", "-z", "--modified", "--deleted", "--others", "--exclude-standard").split(b"\0")
    out: dict[str, str] = {}
    for raw in filter(None, paths):
        path = root / raw.decode()
        out[raw.decode()] = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "absent"
    return out


def changed(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """The paths whose state differs between two snapshots, sorted: written, changed or removed by the run."""
    return sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))
