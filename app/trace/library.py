"""The recording library on disk: the user's runs and the bundled examples, listed, renamed, deleted and uploaded.

Ids, names and folders are app.trace.store's: "user/NAME" lives in the user's folder (an owner's own folder when
the page is served), "example/NAME" in recordings/examples/ (read-only); names that would lead out of their
folder are refused there. Only the user's recordings can be renamed or deleted. The page's picker text and the
copies it hands to the browser are app/ui/library_ui.py's.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

from app.errors import UserError
from app.trace.frames import MAX_RECORDING_BYTES, RAN_ELSEWHERE, SIDES
from app.trace.reading import RecordingError, read_recording
from app.trace.store import KINDS, MAX_NAME, SUFFIX, folder, locate, parse_id, resolve, user_dir, written

_cache: dict[tuple[str, int, int], dict[str, Any]] = {}
# why a bundled example cannot be renamed or deleted: the refusal, and the page's note beside its disabled buttons
READ_ONLY = "Bundled examples cannot be renamed or deleted; download one and upload it to keep your own copy."


def failure(rec: Any) -> str | None:
    """'Failed: left (its message).' for a recording where a side ended in an error, so the library does not list a
    failed run as if it were fine; None when every side ended otherwise."""
    failed = [(side, (rec.ends.get(side) or {}).get("message")) for side in SIDES
              if (rec.ends.get(side) or {}).get("status") == "error"]
    if not failed:
        return None
    return "Failed: " + "; ".join(side + (f" ({str(m)[:120]})" if m else "") for side, m in failed) + "."


LESSON_CHARS = 300  # a header's `lesson` as lists show it (a file from elsewhere may hold any text there)


def describe(path: Path) -> dict[str, Any]:
    """Prompt, caption, sources (saying so when it ran in a visitor's browser), date, duration and frames of one
    recording, the lesson that set its race up and each side's source and settings as its header has them, whose
    differences from the defaults name it (cached by size and mtime)."""
    st = path.stat()
    key = (str(path), st.st_mtime_ns, st.st_size)
    if key in _cache:
        return _cache[key]
    info: dict[str, Any] = {"prompt": "", "caption": "", "sources": "", "created": "", "duration": None,
                            "frames": 0, "problem": None, "bytes": st.st_size, "lesson": "", "sides": {},
                            "elsewhere": False}
    try:
        rec = read_recording(path)
    except RecordingError as e:
        info["problem"] = str(e)
    except OSError as e:
        info["problem"] = f"Could not read it: {e.strerror or e}."
    except Exception as e:  # whatever one file does, the rest of the library still lists
        info["problem"] = f"Damaged: it could not be read ({type(e).__name__})."
    else:
        sources = rec.header.get("sources") or {}
        names = [str(sources[s].get("name", "?")) for s in SIDES if isinstance(sources.get(s), dict)]
        times = [f.t for s in SIDES for f in rec.frames[s]]
        caption, lesson = rec.header.get("caption"), rec.header.get("lesson")
        elsewhere = f" ({RAN_ELSEWHERE})" if rec.header.get("ran_in") else ""  # a visitor's browser's frames
        info.update(prompt=str(rec.header.get("prompt", "")), sources=" vs ".join(names) + elsewhere,
                    caption=caption.strip() if isinstance(caption, str) else "",
                    lesson=lesson.strip()[:LESSON_CHARS] if isinstance(lesson, str) else "",
                    sides={s: sources[s] for s in SIDES if isinstance(sources.get(s), dict)},
                    elsewhere=bool(elsewhere),
                    created=str(rec.header.get("created", "")), duration=max(times) if times else None,
                    frames=len(times), problem=rec.warnings[0] if rec.warnings else failure(rec))
    if len(_cache) > 512:
        _cache.clear()
    _cache[key] = info
    return info


def list_recordings(owner: str | None = None) -> list[dict[str, Any]]:
    """Every recording `owner` may see: theirs (all of the user's without an owner), newest first, then the
    bundled examples by name. A file that cannot be described is listed as damaged; one file never keeps the
    others from listing."""
    out: list[dict[str, Any]] = []
    for kind in KINDS:
        base = folder(kind, owner)
        if not base.is_dir():
            continue
        entries: list[dict[str, Any]] = []
        for path in base.iterdir():
            try:
                if path.name.startswith(".") or not path.name.endswith(SUFFIX) or not path.is_file():
                    continue
                resolve(kind, path.name, owner)
                entry = {"id": f"{kind}/{path.name}", "kind": kind, "name": path.name, "mtime": path.stat().st_mtime}
            except Exception:  # a name or link this library cannot use (a link out of the folder, a link loop)
                continue
            try:
                entry.update(describe(path))
            except Exception as e:  # any failure describing one file marks only that file
                entry.update(prompt="", caption="", sources="", created="", duration=None, frames=0, bytes=0,
                             lesson="", sides={}, elsewhere=False,
                             problem=f"Damaged: it could not be read ({type(e).__name__}).")
            entries.append(entry)
        if kind == "user":
            entries.sort(key=lambda e: (e["created"] or "", e["mtime"]), reverse=True)
        else:
            entries.sort(key=lambda e: e["name"])
        out.extend(entries)
    return out


def rename(entry_id: str, new_name: str, owner: str | None = None) -> str:
    """Renames one of the user's recordings (never an example, never over another file); returns the new id."""
    kind, name = parse_id(entry_id)
    if kind != "user":
        raise UserError(READ_ONLY)
    new_name = (new_name or "").strip()
    if new_name and not new_name.endswith(SUFFIX):
        new_name += SUFFIX
    src, dst = locate(entry_id, owner), resolve("user", new_name, owner)
    if dst.exists() or dst.is_symlink():
        raise UserError(f"There is already a recording called {new_name}; choose another name.")
    if src.is_symlink():
        raise UserError(f"{name} is a link, not a recording file; it cannot be renamed here.")
    src.rename(dst)
    return f"user/{new_name}"


def delete(entry_id: str, owner: str | None = None) -> str:
    """Deletes one of the user's recordings (never an example); returns its name."""
    kind, name = parse_id(entry_id)
    if kind != "user":
        raise UserError(READ_ONLY)
    path = locate(entry_id, owner)
    path.unlink()
    written(owner)  # the owner's folder counted again
    return name


def safe_upload_name(original: str) -> str:
    """A file name for an upload: its base name with anything odd replaced, ending in .jsonl."""
    base = re.split(r"[\\/]", original or "")[-1]
    stem = base[: -len(SUFFIX)] if base.endswith(SUFFIX) else base.rsplit(".", 1)[0] if "." in base[1:] else base
    stem = re.sub(r"[^\w.\- ]+", "_", stem).strip(" ._")[: MAX_NAME - 20] or "upload"
    return stem + SUFFIX


def save_upload(src: str | Path, original: str | None = None, owner: str | None = None) -> str:
    """Checks an uploaded file is a readable recording under the size limit, then copies it into the user's
    recordings (never over another file); returns its id. A damaged file is kept: it loads to its last good frame."""
    src = Path(src)
    size = src.stat().st_size
    if size > MAX_RECORDING_BYTES:
        raise UserError(f"That file is {size / 1e6:.1f} MB; recordings over {MAX_RECORDING_BYTES / 1e6:.0f} MB are "
                        "refused.")
    try:
        read_recording(src)
    except RecordingError as e:
        raise UserError(str(e)) from None
    user_dir(owner).mkdir(parents=True, exist_ok=True)
    name = safe_upload_name(original or src.name)
    stem = name[: -len(SUFFIX)]
    for n in range(1, 1000):
        target = resolve("user", name, owner)
        try:
            out = open(target, "xb")  # exclusive: never overwrites a recording
        except FileExistsError:
            name = f"{stem}-{n}{SUFFIX}"
            continue
        try:
            with out, open(src, "rb") as f:
                shutil.copyfileobj(f, out)
        except BaseException:
            target.unlink(missing_ok=True)
            raise
        return f"user/{name}"
    raise UserError("Too many recordings with that name; rename some first.")
