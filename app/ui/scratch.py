"""Scratch folders for the files the page hands out (downloads, exports), bounded in number, age and total size.

Gradio copies a file a handler returns into its own cache before it serves it, so a scratch copy is needed
only until the handler's answer has gone out. Each new folder first removes the old ones: any older than
MAX_AGE seconds, then the oldest until at most MAX_FOLDERS remain and their total size is under MAX_BYTES.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

PREFIX = "converge-scratch-"
MAX_AGE = 600.0  # seconds a handed-out copy is kept at most
MAX_FOLDERS = 32
MAX_BYTES = 512 * 1024 * 1024
MIN_AGE = 60.0  # a folder younger than this may still be on its way to Gradio's cache: removed only when over MAX_BYTES


def root() -> Path:
    """The folder all scratch folders of this process live in."""
    return Path(tempfile.gettempdir()) / f"{PREFIX}{os.getpid()}"


def _size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink())


def prune(now: float | None = None) -> None:
    """Removes the scratch folders that are too old, too many or too big, oldest first."""
    base = root()
    if not base.is_dir():
        return
    now = time.time() if now is None else now
    folders = sorted((p for p in base.iterdir() if p.is_dir()), key=lambda p: p.stat().st_mtime)
    sizes = {p: _size(p) for p in folders}
    total = sum(sizes.values())
    for i, folder in enumerate(folders):
        age = now - folder.stat().st_mtime
        left = len(folders) - i
        if age > MAX_AGE or total > MAX_BYTES or (left > MAX_FOLDERS and age > MIN_AGE):
            shutil.rmtree(folder, ignore_errors=True)
            total -= sizes[folder]


def new_dir(kind: str) -> Path:
    """A fresh, empty folder for one handed-out file (`kind` names what it is for), after pruning old ones."""
    prune()
    base = root()
    base.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=f"{kind}-", dir=base))
