"""One export from the page, run so that it can be cancelled: a worker thread makes the file while the handler
reports progress about once a second; closing the handler (Cancel export, or a visitor who left) stops the worker
at its next video frame and leaves no file behind."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Iterator

from app.errors import UserError

PROGRESS_EVERY = 1.0  # seconds between progress sentences (and chances for Gradio to notice a departed client)


class ExportCancelled(UserError):
    """The export was cancelled; the half-made file is removed."""


def run_export(source: Path, out: Path, fmt: str, clock: str = "time") -> Iterator[tuple[int, int]]:
    """Makes `out` (html, csv, gif or mp4, on the player's `clock`) from the recording `source`, yielding
    (frames done, frames in all; 0, 0 before a video knows) at once and then about once a second while it works;
    raises what the export raised (UserError, RecordingError, ImportError, OSError) once it has stopped."""
    cancel = threading.Event()
    progress = [0, 0]
    failures: list[BaseException] = []

    def tick(done: int, total: int) -> None:
        progress[:] = [done, total]
        if cancel.is_set():
            raise ExportCancelled("Export cancelled.")

    def work() -> None:
        try:
            if fmt == "html":
                from app.export.html import export_html

                export_html(source, out, clock=clock)
            elif fmt == "csv":
                from app.analysis.tables import write_frames_csv

                write_frames_csv(source, out)
            else:
                from app.export.video import export_video

                export_video(source, out, fmt=fmt, progress=tick, clock=clock)
        except BaseException as e:  # handed to the handler, which shows it as one sentence
            failures.append(e)

    worker = threading.Thread(target=work, daemon=True, name="converge-export")
    worker.start()
    try:
        yield 0, 0  # at once: the page says the export has begun, however quickly it then ends
        while worker.is_alive():
            worker.join(PROGRESS_EVERY)
            if worker.is_alive():
                yield progress[0], progress[1]
    finally:
        cancel.set()
        worker.join()
    if failures:
        raise failures[0]
