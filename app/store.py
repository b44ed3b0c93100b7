"""Where recordings live, and library ids resolved to files without ever leaving those folders.

A recording is named by an id, "user/NAME" (a file directly in the user's folder) or "example/NAME" (a file in
recordings/examples/, read-only). The user's folder is `recordings_dir()`, or, for an owner (a visitor of a
served page), a folder of their own under it that only that owner's id leads to. A NAME is a bare file name:
no path separator, no "..", not absolute, not hidden, and it must resolve inside its folder, so a symlink that
points out of recordings/ is refused too. Sources (replay:), the race and the library all resolve ids here.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

from app.errors import SourceError

RECORDINGS_DIR = Path(__file__).resolve().parent.parent / "recordings"
EXAMPLES_DIR = RECORDINGS_DIR / "examples"
OWNERS = "visitors"  # the subfolder of recordings_dir() that holds each owner's own folder
KINDS = ("user", "example")
SUFFIX = ".jsonl"
MAX_NAME = 120
# disk bounds for visitors of a served page: each owner keeps their newest runs within these, and all owners
# together stay within the last; the oldest files go first (a finished recording is never needed to run a race)
OWNER_MAX_FILES = 100
OWNER_MAX_BYTES = 256 * 2**20
VISITORS_MAX_BYTES = 2 * 2**30
_BAD_CHARS = re.compile(r"[\x00-\x1f\x7f/\\:*?\"<>|]")


def recordings_dir() -> Path:
    """Where user runs are saved (CONVERGE_RECORDINGS overrides, for tests and deployments)."""
    return Path(os.environ.get("CONVERGE_RECORDINGS", RECORDINGS_DIR))


def examples_dir() -> Path:
    """The bundled examples (CONVERGE_EXAMPLES overrides, for tests)."""
    return Path(os.environ.get("CONVERGE_EXAMPLES", EXAMPLES_DIR))


def user_dir(owner: str | None = None) -> Path:
    """The folder of one owner's recordings (a digest of the owner id names it); without an owner, recordings_dir()."""
    if owner is None:
        return recordings_dir()
    return recordings_dir() / OWNERS / hashlib.sha256(owner.encode("utf-8")).hexdigest()[:32]


def folder(kind: str, owner: str | None = None) -> Path:
    """The folder a kind of recording lives in."""
    if kind == "user":
        return user_dir(owner)
    if kind == "example":
        return examples_dir()
    raise SourceError(f"Unknown recording kind {kind!r}: use user or example.")


def check_name(name: str) -> str:
    """A recording name as given, if it is a plain file name ending in .jsonl; raises SourceError otherwise."""
    if not isinstance(name, str) or not name.strip():
        raise SourceError("Give the recording a name.")
    if name != name.strip():
        raise SourceError("A recording name cannot start or end with a space.")
    if os.path.isabs(name) or _BAD_CHARS.search(name) or name in (".", "..") or ".." in name:
        raise SourceError("A recording name cannot contain a path: no /, \\, '..' or special characters.")
    if name.startswith("."):
        raise SourceError("A recording name cannot start with a dot.")
    if len(name) > MAX_NAME:
        raise SourceError(f"A recording name can have at most {MAX_NAME} characters.")
    if not name.endswith(SUFFIX):
        raise SourceError(f"A recording name must end in {SUFFIX}.")
    return name


def resolve(kind: str, name: str, owner: str | None = None) -> Path:
    """The path of a recording in its folder, refusing names and symlinks that would lead out of it."""
    check_name(name)
    base = folder(kind, owner).resolve()
    path = base / name
    if not path.resolve().is_relative_to(base):
        raise SourceError(f"{name} points outside the recordings folder; it cannot be used.")
    return path


def parse_id(entry_id: str) -> tuple[str, str]:
    """("user" | "example", NAME) from an id such as "user/run.jsonl"; raises SourceError on anything else."""
    kind, sep, name = (entry_id or "").partition("/") if isinstance(entry_id, str) else ("", "", "")
    if not sep or kind not in KINDS:
        raise SourceError("Choose a recording from the list first.")
    check_name(name)
    return kind, name


def is_id(text: str) -> bool:
    """Whether `text` is shaped like a library id ("user/NAME" or "example/NAME")."""
    try:
        parse_id(text)
    except SourceError:
        return False
    return True


def locate(entry_id: str, owner: str | None = None) -> Path:
    """The file behind an id, which must exist (a user id resolves in `owner`'s own folder)."""
    kind, name = parse_id(entry_id)
    path = resolve(kind, name, owner)
    if not path.is_file():
        raise SourceError(f"There is no recording called {name} any more; refresh the list.")
    return path


def _oldest_first(files: list[Path]) -> list[tuple[Path, int]]:
    """(file, size) of those still there, oldest modification first."""
    found = []
    for f in files:
        try:
            st = f.stat()
        except OSError:
            continue
        found.append((st.st_mtime, f, st.st_size))
    return [(f, size) for _, f, size in sorted(found)]


def _drop_oldest(files: list[Path], max_files: int, max_bytes: int, room: int = 1) -> None:
    """Deletes the oldest of `files` until `room` more files fit within max_files and max_bytes."""
    kept = _oldest_first(files)
    total = sum(size for _, size in kept)
    while kept and (len(kept) + room > max_files or total > max_bytes):
        f, size = kept.pop(0)
        f.unlink(missing_ok=True)
        total -= size


def make_room(owner: str | None) -> None:
    """Before a visitor's new recording: their folder keeps its newest OWNER_MAX_FILES - 1 files within
    OWNER_MAX_BYTES, and all visitors' folders stay within VISITORS_MAX_BYTES. Nothing for the shared library,
    which belongs to whoever runs the page on their own machine."""
    if owner is None:
        return
    _drop_oldest(list(user_dir(owner).glob(f"*{SUFFIX}")), OWNER_MAX_FILES, OWNER_MAX_BYTES)
    _drop_oldest(list((recordings_dir() / OWNERS).glob(f"*/*{SUFFIX}")), 10**9, VISITORS_MAX_BYTES, room=0)
