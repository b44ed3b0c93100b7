"""One export from the page, run so that it can be cancelled and never holds up the page's event loop.

The file is made on one of MAX_WORKERS export threads while the handler, an async generator, awaits it and reports
progress about once a second. Closing the handler (Cancel export, or a visitor who left) only sets a flag and returns:
Gradio closes a handler on its event loop, so a close that waited for the work (a sync generator joining its worker
did) would stop every other visitor's page meanwhile. The flag stops the work at its next frame: a video's through
its progress tick, an HTML or CSV export's at the next line read or frame analysed (app/trace/cancel.py), so a
cancelled export frees its thread within a frame's work; its file is removed, so a cancelled export leaves nothing
behind, and at most MAX_WORKERS exports work at once however often one is restarted.
"""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, AsyncGenerator, Callable

from app.trace.cancel import Cancelled, within

PROGRESS_EVERY = 1.0  # seconds between progress sentences (and chances for Gradio to notice a departed client)
MAX_WORKERS = 2  # exports at work at once, across the page: a cancelled one still at work counts
_POOL = ThreadPoolExecutor(max_workers=MAX_WORKERS, thread_name_prefix="converge-export")
_jobs: set[Future] = set()  # queued, at work or cleaning up
_idle = threading.Condition()


class ExportCancelled(Cancelled):
    """The export was cancelled; the half-made file is removed."""


def _run(cancel: threading.Event, *args: Any) -> None:
    """_make(*args) on an export thread, its reading and analysis stopping at their next frame once `cancel` is
    set."""
    with within(cancel):
        _make(*args)


def _make(source: Path, out: Path, fmt: str, clock: str, tick: Callable[[int, int], None],
          video: dict[str, Any]) -> None:
    """Writes `out` from `source` in `fmt` (html, csv, gif or mp4; a video with `video`'s pace, hold and loop); runs
    on an export thread."""
    if fmt == "html":
        from app.export.html import export_html

        export_html(source, out, clock=clock)
    elif fmt == "csv":
        from app.analysis.tables import write_frames_csv

        write_frames_csv(source, out)
    else:
        from app.export.video import export_video

        export_video(source, out, fmt=fmt, progress=tick, clock=clock, **video)


def _submit(source: Path, out: Path, fmt: str, clock: str, tick: Callable[[int, int], None],
            cancel: threading.Event, video: dict[str, Any]) -> Future:
    """Queues the export on an export thread; once it has ended, a cancelled one's file is removed."""
    job = _POOL.submit(_run, cancel, source, out, fmt, clock, tick, video)
    with _idle:
        _jobs.add(job)

    def ended(_: Future) -> None:
        if cancel.is_set():
            out.unlink(missing_ok=True)
        with _idle:
            _jobs.discard(job)
            _idle.notify_all()
    job.add_done_callback(ended)
    return job


def wait_idle(timeout: float | None = None) -> bool:
    """Waits (off the event loop: for tests and shutdown) until no export is queued, at work or cleaning up; False
    on timeout."""
    with _idle:
        return _idle.wait_for(lambda: not _jobs, timeout)


async def run_export(source: Path, out: Path, fmt: str, clock: str = "time",
                     video: dict[str, Any] | None = None) -> AsyncGenerator[tuple[int, int], None]:
    """Makes `out` (html, csv, gif or mp4, on the player's `clock`; a video with `video`'s options for export_video:
    pace, hold, loop) from the recording `source`, yielding
    (frames done, frames in all; 0, 0 before a video knows) at once and then about once a second while it works;
    raises what the export raised (UserError, RecordingError, ImportError, OSError) once it has stopped. Closed
    before then, it returns at once: the export is told to stop and its file is removed when it does."""
    cancel = threading.Event()
    progress = [0, 0]

    def tick(done: int, total: int) -> None:
        progress[:] = [done, total]
        if cancel.is_set():
            raise ExportCancelled("Export cancelled.")

    job = _submit(source, out, fmt, clock, tick, cancel, video or {})
    finished = asyncio.wrap_future(job)
    completed = False
    try:
        yield 0, 0  # at once: the page says the export has begun, however quickly it then ends
        while not (await asyncio.wait({finished}, timeout=PROGRESS_EVERY))[0]:
            yield progress[0], progress[1]
        completed = True
    finally:
        if not completed:
            cancel.set()  # the work stops at its next frame; the job's end removes the file
            finished.cancel()  # cancels the job too, so one still queued never starts
            if job.done():  # it ended before the flag was set: its end saw no flag, so the file goes now
                out.unlink(missing_ok=True)
    finished.result()
