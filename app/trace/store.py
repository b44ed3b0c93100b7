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
import threading
import unicodedata
from pathlib import Path

from app.errors import UserError
from app.trace.frames import MAX_RECORDING_BYTES

RECORDINGS_DIR = Path(__file__).resolve().parents[2] / "recordings"
EXAMPLES_DIR = RECORDINGS_DIR / "examples"
OWNERS = "visitors"  # the subfolder of recordings_dir() that holds each owner's own folder
KINDS = ("user", "example")
SUFFIX = ".jsonl"
MAX_NAME = 120
# disk bounds for visitors of a served page: each owner keeps their newest runs within the first two (their own
# oldest go first), the owners written from one client address share the third and all owners the last; a write
# that only another owner's runs could make room for is refused (make_room)
OWNER_MAX_FILES = 100
OWNER_MAX_BYTES = 256 * 2**20
ADDRESS_MAX_BYTES = 512 * 2**20
VISITORS_MAX_BYTES = 2 * 2**30
RUN_MAX_BYTES = MAX_RECORDING_BYTES  # one visitor's recording stops growing here (a longer one could not be read back)
FROM = ".from"  # in an owner's folder: digests of the client addresses its runs were written from
_room_lock = threading.Lock()  # one make_room at a time, so two writers never count the same free space
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
    raise UserError(f"Unknown recording kind {kind!r}: use user or example.")


def check_name(name: str) -> str:
    """A recording name as given, if it is a plain file name ending in .jsonl; raises UserError otherwise."""
    if not isinstance(name, str) or not name.strip():
        raise UserError("Give the recording a name.")
    if name != name.strip():
        raise UserError("A recording name cannot start or end with a space.")
    if os.path.isabs(name) or _BAD_CHARS.search(name) or name in (".", "..") or ".." in name:
        raise UserError("A recording name cannot contain a path: no /, \\, '..' or special characters.")
    if any(unicodedata.category(c)[0] == "C" for c in name):
        raise UserError("A recording name cannot contain invisible characters (direction marks, zero-width "
                        "spaces, byte-order marks or other controls).")
    if name.startswith("."):
        raise UserError("A recording name cannot start with a dot.")
    if len(name) > MAX_NAME:
        raise UserError(f"A recording name can have at most {MAX_NAME} characters.")
    if not name.endswith(SUFFIX):
        raise UserError(f"A recording name must end in {SUFFIX}.")
    return name


def resolve(kind: str, name: str, owner: str | None = None) -> Path:
    """The path of a recording in its folder, refusing names and symlinks that would lead out of it."""
    check_name(name)
    base = folder(kind, owner).resolve()
    path = base / name
    if not path.resolve().is_relative_to(base):
        raise UserError(f"{name} points outside the recordings folder; it cannot be used.")
    return path


def parse_id(entry_id: str) -> tuple[str, str]:
    """("user" | "example", NAME) from an id such as "user/run.jsonl"; raises UserError on anything else."""
    kind, sep, name = (entry_id or "").partition("/") if isinstance(entry_id, str) else ("", "", "")
    if not sep or kind not in KINDS:
        raise UserError("Choose a recording from the list first.")
    check_name(name)
    return kind, name


def is_id(text: str) -> bool:
    """Whether `text` is shaped like a library id ("user/NAME" or "example/NAME")."""
    try:
        parse_id(text)
    except UserError:
        return False
    return True


def locate(entry_id: str, owner: str | None = None) -> Path:
    """The file behind an id, which must exist (a user id resolves in `owner`'s own folder)."""
    kind, name = parse_id(entry_id)
    path = resolve(kind, name, owner)
    if not path.is_file():
        raise UserError(f"There is no recording called {name} any more; refresh the list.")
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


def address_tag(address: str) -> str:
    """What an owner's folder keeps of a client address it was written from: a digest, never the address itself."""
    return hashlib.sha256(address.encode("utf-8")).hexdigest()[:16]


def _tags(owner_dir: Path) -> set[str]:
    try:
        return set((owner_dir / FROM).read_text(encoding="ascii").split())
    except (OSError, UnicodeDecodeError):
        return set()


def _usage(mine: Path, address: str | None) -> tuple[int, int]:
    """(bytes of every other owner's runs, bytes of the other owners' runs written from `address`)."""
    everyone = same_address = 0
    tag = address_tag(address) if address else None
    for owner_dir in (recordings_dir() / OWNERS).glob("*"):
        if owner_dir == mine or not owner_dir.is_dir():
            continue
        size = sum(size for _, size in _oldest_first(list(owner_dir.glob(f"*{SUFFIX}"))))
        everyone += size
        if tag is not None and tag in _tags(owner_dir):
            same_address += size
    return everyone, same_address


class DiskFull(UserError):
    """A visitor's new recording refused because a disk bound is reached that only other owners' runs could free."""


def make_room(owner: str | None, address: str | None = None) -> None:
    """Before a visitor's new recording (up to RUN_MAX_BYTES): deletes only that owner's own oldest runs until they keep
    at most OWNER_MAX_FILES - 1 within OWNER_MAX_BYTES, and the owners written from `address` (ADDRESS_MAX_BYTES) and
    all visitors (VISITORS_MAX_BYTES) have room; raises DiskFull when even that is not enough, so no other owner's run
    is ever deleted. The owner's folder notes `address` (a digest). Nothing for the shared library (owner None), which
    belongs to whoever runs the page on their own machine."""
    if owner is None:
        return
    mine = user_dir(owner)
    with _room_lock:
        kept = _oldest_first(list(mine.glob(f"*{SUFFIX}")))
        everyone, same_address = _usage(mine, address)

        def over() -> bool:
            own = sum(size for _, size in kept) + RUN_MAX_BYTES
            return (len(kept) + 1 > OWNER_MAX_FILES or own > OWNER_MAX_BYTES
                    or same_address + own > ADDRESS_MAX_BYTES or everyone + own > VISITORS_MAX_BYTES)

        while kept and over():
            oldest, _ = kept.pop(0)
            oldest.unlink(missing_ok=True)
        if over():
            if same_address + RUN_MAX_BYTES > ADDRESS_MAX_BYTES:
                raise DiskFull("Not saved: runs made from your network address already fill its share of this "
                               f"server's disk ({ADDRESS_MAX_BYTES // 2**20} MB), and it never deletes another "
                               "visitor's runs to make room.")
            raise DiskFull(f"Not saved: this server's disk space for visitors' runs ({VISITORS_MAX_BYTES // 2**30} GB) "
                           "is full, and it never deletes another visitor's runs to make room.")
        if address:
            mine.mkdir(parents=True, exist_ok=True)
            tag = address_tag(address)
            if tag not in _tags(mine):
                with open(mine / FROM, "a", encoding="ascii") as f:
                    f.write(tag + "\n")
