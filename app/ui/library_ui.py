"""The recording library as the page shows it: one line per recording for the picker, and copies to download.

What is on disk, and what may be done to it, is app/library.py's; this is only how the page words it and hands
a file to the browser (in a scratch folder that app/ui/scratch.py bounds).
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

from app.store import locate
from app.ui import scratch


def duration_text(seconds: float | None) -> str:
    """Seconds to one decimal, or a dash when the recording has no frames."""
    return "\u2014" if seconds is None else f"{seconds:.1f} s"


def date_text(created: str) -> str:
    """'2026-11-21 15:23 UTC' from the header's ISO time ('' when absent)."""
    try:
        return time.strftime("%Y-%m-%d %H:%M UTC", time.strptime(created, "%Y-%m-%dT%H:%M:%SZ"))
    except (TypeError, ValueError):
        return created


def label(entry: dict[str, Any]) -> str:
    """One line for a picker: name, kind, sources and duration."""
    kind = "example" if entry["kind"] == "example" else "yours"
    extra = f" \u2014 {entry['problem']}" if entry["problem"] and not entry["frames"] else ""
    return f"{entry['name']} ({kind}) \u00b7 {entry['sources'] or '?'} \u00b7 {duration_text(entry['duration'])}{extra}"


def download_copy(entry_id: str, owner: str | None = None) -> Path:
    """A copy of a recording in a fresh scratch folder (app/ui/scratch.py bounds them), to hand to the browser."""
    path = locate(entry_id, owner)
    out = scratch.new_dir("dl") / path.name
    shutil.copyfile(path, out)
    return out
