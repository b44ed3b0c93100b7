"""Exports of a recorded race: a video (GIF, MP4) drawn like the page, and a self-contained HTML player."""

from __future__ import annotations

from pathlib import Path

from app.errors import UserError
from app.trace.frames import Recording
from app.trace.reading import RecordingError, read_recording


def read_for_export(path: str | Path) -> Recording:
    """Reads a recording to export; a file that cannot be read as one raises UserError naming the problem."""
    try:
        return read_recording(path)
    except RecordingError as e:
        raise UserError(str(e)) from None
    except OSError as e:
        raise UserError(f"Could not read {Path(path).name}: {e.strerror or e}.") from None
