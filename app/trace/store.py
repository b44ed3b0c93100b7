"""Where recordings live, and library ids resolved to files without ever leaving those folders.

A recording is named by an id, "user/NAME" (a file directly in the user's folder) or "example/NAME" (a file in
recordings/examples/, read-only). The user's folder is `recordings_dir()`, or, for an owner (a visitor of a
served page), a folder of their own under it that only that owner's id leads to. A NAME is a bare file name:
no path separator, no "..", not absolute, not hidden, and it must resolve inside its folder, so a symlink that
points out of recordings/ is refused too. Sources (replay:), the race and the library all resolve ids here.

Visitors' folders are bounded on disk and in time (docs/security.md): `make_room` before each new run checks the
writer's own folder against totals kept in memory (app/trace/usage.py: one scan at first use, then updated by
`make_room`, `written` after each run and the sweeper), an hourly budget per client address and a reserve only light
addresses may take; `sweep` deletes runs past their age and empty owner folders.
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
import threading
import time
import unicodedata
from pathlib import Path

from app.errors import UserError
from app.trace.frames import MAX_RECORDING_BYTES
from app.trace.usage import Usage, Window

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
# ... and bounded in time (issue 49): the bytes (as written, so a browser race counts decompressed) that the runs made
# from one address may write in any hour: races, browser-race saves, uploads and Be the sampler runs alike; once
# spent, that address's next run is refused until the hour's older writes age out. The bundled example races are
# 80-250 kB and a browser race at most 8 MB, so a class behind one address saves hundreds of runs an hour
ADDRESS_HOUR_BYTES = 128 * 2**20
HOUR_SECONDS = 3600.0
# the reserve: the last part of VISITORS_MAX_BYTES is written only by an address whose runs, the new one counted at
# RUN_MAX_BYTES, stay within ADDRESS_RESERVE_BYTES; a flood fills at most the rest and ADDRESS_RESERVE_BYTES (plus a
# run in flight) an address, so 5 flooding addresses leave more than half the reserve to everyone else
VISITORS_RESERVE_BYTES = 2**30
ADDRESS_RESERVE_BYTES = 128 * 2**20
KEEP_DAYS = 7.0  # visitors' runs older than this are deleted (`--keep-runs-days` changes it)
SWEEP_SECONDS = 300.0  # the sweeper (expiry, empty owner folders, totals checked against the disk) runs this often
IDLE_OWNER_SECONDS = 600.0  # an owner folder with no runs goes once nothing was written there for this long
FROM = ".from"  # in an owner's folder: digests of the client addresses its runs were written from
_room_lock = threading.Lock()  # one make_room at a time, so two writers never count the same free space
clock = time.time  # the store's clock (runs' ages, the hourly budget): a test may set another
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


# --- visitors' disk: totals kept as runs are written and deleted, an hourly budget per address, expiry ---------------


def address_tag(address: str) -> str:
    """What an owner's folder keeps of a client address it was written from: a digest, never the address itself."""
    return hashlib.sha256(address.encode("utf-8")).hexdigest()[:16]


def _tags(owner_dir: Path) -> set[str]:
    try:
        return set((owner_dir / FROM).read_text(encoding="ascii").split())
    except (OSError, UnicodeDecodeError):
        return set()


class _Disk:
    """The visitors' folder's usage (built by one scan of every owner folder at first use, then kept as runs are
    written and deleted) and the hourly window of what each address wrote; one per recordings folder."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.usage = Usage()
        self.window = Window(HOUR_SECONDS)


_disk: list[_Disk] = []  # the current one (a test or deployment may point CONVERGE_RECORDINGS elsewhere)
_keep = {"seconds": KEEP_DAYS * 86_400}


def configure(keep_days: float) -> None:
    """How old a visitor's run may grow before the sweeper (or its owner's next write) deletes it
    (`--keep-runs-days`)."""
    if not keep_days > 0:
        raise ValueError("--keep-runs-days must be a number of days above 0.")
    _keep["seconds"] = keep_days * 86_400


def _runs(owner_dir: Path, now: float) -> tuple[list[tuple[Path, int]], int]:
    """(file, size) of an owner folder's runs, oldest modification first, and how many were deleted for their age:
    one listing of that folder alone."""
    found, expired = [], 0
    try:
        with os.scandir(owner_dir) as entries:
            for entry in entries:
                if not entry.name.endswith(SUFFIX) or not entry.is_file():
                    continue
                st = entry.stat()
                if now - st.st_mtime > _keep["seconds"]:
                    Path(entry.path).unlink(missing_ok=True)
                    expired += 1
                else:
                    found.append((st.st_mtime, Path(entry.path), st.st_size))
    except (FileNotFoundError, NotADirectoryError):
        pass
    return [(f, size) for _, f, size in sorted(found)], expired


def _owner_names(root: Path) -> list[str]:
    """The owner folders under the visitors' folder (a listing of every owner: only the first use and the sweeper)."""
    try:
        with os.scandir(root / OWNERS) as entries:
            return [e.name for e in entries if e.is_dir(follow_symlinks=False)]
    except (FileNotFoundError, NotADirectoryError):
        return []


def _current(now: float) -> _Disk:
    """The usage of the visitors' folder (the caller holds _room_lock): counted once, by one scan, at first use."""
    root = recordings_dir()
    if not _disk or _disk[0].root != root:
        disk = _Disk(root)
        for name in _owner_names(root):
            folder_path = root / OWNERS / name
            kept, _ = _runs(folder_path, now)
            disk.usage.count(name, sum(size for _, size in kept), len(kept))
            for tag in _tags(folder_path):
                disk.usage.tag(name, tag)
        _disk[:] = [disk]
    return _disk[0]


class DiskFull(UserError):
    """A visitor's new recording refused because a disk bound is reached that only other owners' runs could free."""


def _refusal(same_address: int, everyone: int) -> DiskFull:
    """Which bound refused a run once the writer's own runs are gone, in one sentence."""
    if same_address + RUN_MAX_BYTES > ADDRESS_MAX_BYTES:
        return DiskFull("Not saved: runs made from your network address already fill its share of this server's disk "
                        f"({ADDRESS_MAX_BYTES // 2**20} MB), and it never deletes another visitor's runs to make room.")
    if everyone + RUN_MAX_BYTES > VISITORS_MAX_BYTES:
        return DiskFull(f"Not saved: this server's disk space for visitors' runs ({VISITORS_MAX_BYTES // 2**30} GB) "
                        "is full, and it never deletes another visitor's runs to make room.")
    return DiskFull("Not saved: this server's disk space for visitors' runs is nearly full, and what is left is kept "
                    f"for network addresses whose runs hold under {ADDRESS_RESERVE_BYTES // 2**20} MB, which yours "
                    "already do not.")


def make_room(owner: str | None, address: str | None = None, now: float | None = None) -> None:
    """Before a visitor's new recording (up to RUN_MAX_BYTES): refuses it while the runs made from `address` have
    written ADDRESS_HOUR_BYTES within the hour; deletes only that owner's own oldest runs until they keep at most
    OWNER_MAX_FILES - 1 within OWNER_MAX_BYTES, and the owners written from `address` (ADDRESS_MAX_BYTES) and all
    visitors (VISITORS_MAX_BYTES, whose last VISITORS_RESERVE_BYTES only an address within ADDRESS_RESERVE_BYTES may
    take) have room; raises DiskFull when even that is not enough, so no other owner's run is ever deleted. The
    owner's folder notes `address` (a digest). It lists the owner's folder alone: every other figure is a kept total
    (`_current`). Nothing for the shared library (owner None), which belongs to whoever runs the page on their own
    machine. `now` (the store's `clock`) is for tests."""
    if owner is None:
        return
    now = clock() if now is None else now
    mine = user_dir(owner)
    tag = address_tag(address) if address else None
    with _room_lock:
        disk = _current(now)
        if tag and disk.window.spent(tag, now) >= ADDRESS_HOUR_BYTES:
            raise DiskFull("Not saved: runs made from your network address have written this server's budget for "
                           f"one address ({ADDRESS_HOUR_BYTES // 2**20} MB an hour); try again later.")
        known = disk.usage.owners.get(mine.name)
        counted, tags = (known.size, known.tags) if known else (0, set())
        kept, _ = _runs(mine, now)
        everyone = disk.usage.total - counted
        same_address = disk.usage.held(tag) - (counted if tag in tags else 0)

        def over() -> bool:
            own = sum(size for _, size in kept) + RUN_MAX_BYTES
            held = same_address + own
            return (len(kept) + 1 > OWNER_MAX_FILES or own > OWNER_MAX_BYTES or held > ADDRESS_MAX_BYTES
                    or everyone + own > VISITORS_MAX_BYTES
                    or (everyone + own > VISITORS_MAX_BYTES - VISITORS_RESERVE_BYTES and held > ADDRESS_RESERVE_BYTES))

        while kept and over():
            oldest, _ = kept.pop(0)
            oldest.unlink(missing_ok=True)
        if known or kept:
            disk.usage.count(mine.name, sum(size for _, size in kept), len(kept))
        if over():
            raise _refusal(same_address, everyone)
        disk.usage.owner(mine.name).used = now
        if tag:
            mine.mkdir(parents=True, exist_ok=True)
            if disk.usage.tag(mine.name, tag) and tag not in _tags(mine):
                with open(mine / FROM, "a", encoding="ascii") as f:
                    f.write(tag + "\n")


def written(owner: str | None, address: str | None = None, path: Path | None = None, now: float | None = None) -> None:
    """After a visitor's run is written (a race's file once closed, a browser race, an upload, a Be the sampler run)
    or deleted: the owner's folder is counted again, and `address` is charged the bytes of `path` against its hourly
    budget. It lists that owner's folder alone."""
    if owner is None:
        return
    now = clock() if now is None else now
    mine = user_dir(owner)
    try:
        size = path.stat().st_size if path is not None else 0
    except OSError:
        size = 0
    with _room_lock:
        disk = _current(now)
        kept, _ = _runs(mine, now)
        if kept or mine.name in disk.usage.owners:
            disk.usage.count(mine.name, sum(s for _, s in kept), len(kept))
            disk.usage.owner(mine.name).used = now
        if address and size:
            disk.window.charge(address_tag(address), size, now)


def _sweep_owner(disk: _Disk, name: str, now: float) -> tuple[int, bool]:
    """One owner folder swept (the caller holds _room_lock): its runs past their age deleted, counted again, and the
    folder removed when no run is left and nothing was written there for IDLE_OWNER_SECONDS; (expired, removed)."""
    path = disk.root / OWNERS / name
    kept, expired = _runs(path, now)
    if name not in disk.usage.owners:
        for tag in _tags(path):
            disk.usage.tag(name, tag)
    disk.usage.count(name, sum(size for _, size in kept), len(kept))
    try:
        idle = now - max(disk.usage.owners[name].used, path.stat().st_mtime) > IDLE_OWNER_SECONDS
        if kept or not idle or not set(os.listdir(path)) <= {FROM}:
            return expired, False
        (path / FROM).unlink(missing_ok=True)
        path.rmdir()
    except OSError:
        return expired, False
    disk.usage.drop(name)
    return expired, True


def sweep(now: float | None = None) -> dict[str, int]:
    """Every owner folder visited once, each under the lock on its own (so saves go on between them): runs older than
    `--keep-runs-days` deleted, empty idle folders removed, each total checked against the disk; the hourly windows
    forget addresses that wrote nothing within the hour. Run by the sweeper every SWEEP_SECONDS, never by a save."""
    now = clock() if now is None else now
    with _room_lock:
        disk = _current(now)
        names = _owner_names(disk.root)
        for gone in set(disk.usage.owners) - set(names):
            disk.usage.drop(gone)
        disk.window.forget_old(now)
    expired = removed = 0
    for name in names:
        with _room_lock:
            if _current(now) is not disk:
                break
            aged, dropped = _sweep_owner(disk, name, now)
        expired, removed = expired + aged, removed + dropped
    return {"owners": len(names), "expired": expired, "removed": removed}


_sweeper: list[threading.Thread] = []


def start_sweeper() -> None:
    """Starts the sweeper thread once (the page's launch does): `sweep` now, then every SWEEP_SECONDS."""
    if _sweeper:
        return

    def loop() -> None:
        while True:
            try:
                sweep()
            except Exception as e:  # a folder that vanished mid-sweep, a full disk: the next sweep tries again
                print(f"The sweep of visitors' runs failed ({type(e).__name__}); it runs again in "
                      f"{SWEEP_SECONDS:.0f} s.", file=sys.stderr)
            time.sleep(SWEEP_SECONDS)

    _sweeper.append(threading.Thread(target=loop, name="converge-sweeper", daemon=True))
    _sweeper[0].start()
