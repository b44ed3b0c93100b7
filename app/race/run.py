"""Two sources, two threads, one stream of coalesced updates for the page.

Each side runs in its own thread with its own clock, so neither side's work is counted in the
other's time. A side's thread only stamps each frame and hands it off: the recorder thread decodes
its strings (`Frame.ready()`) and appends it to the recording, so that bookkeeping is not on the
side's clock, and passes it on; a side's end goes the same way, after its frames, so the race reports
a side finished only once all its frames are on disk. The consumer gets a tick at most once per
`interval` while frames arrive, and always a final one; app/ui/live.py turns each tick into the player's
update. Every race has a wall-clock limit (app/race/limits.py): when it is reached both sides stop, say why, and
keep their frames; a tick comes at least once a second even when nothing changed, so a page or API caller
that went away is noticed and the race ends.
"""

from __future__ import annotations

import logging
import queue
import re
import threading
import time
import traceback
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Generator

from app.engine.draft import Revision
from app.errors import UserError
from app.race.compute import COMPUTE
from app.race.limits import race_limit, stopped_at_limit
from app.sources.base import Source, make_source
from app.trace.frames import SIDES, Frame, RecordingWriter, clean_text, make_header
from app.trace.scrub import known_keys, scrub_frame, scrub_text, scrub_value
from app.trace.store import recordings_dir

log = logging.getLogger("converge.race")

HEARTBEAT = 1.0  # seconds: the longest a consumer waits for an update, so a departed client is noticed
GRACE = 5.0  # seconds a side gets to end after its race reached the limit before the race ends it itself


def recording_name(left: str, right: str) -> str:
    """A file name that says when and what raced, with anything odd in source names replaced."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    return f"{stamp}-{name_part(left)}-vs-{name_part(right)}-{uuid.uuid4().hex[:6]}.jsonl"


def name_part(spec: str) -> str:
    """A source's name as a part of a file name: anything odd replaced, at most 40 characters, and a replayed
    recording named by its own name, without its library folder or ".jsonl" (`replay:example/04-mercury-wire-format
    .jsonl` once came out cut after ".js")."""
    spec = re.sub(r"^replay:(?:example|user)/", "replay:", re.sub(r"\.jsonl(?=#|$)", "", spec))
    return re.sub(r"[^A-Za-z0-9._-]+", "_", spec)[:40].rstrip("._-") or "source"


@dataclass
class Side:
    """One side's live state as the consumer sees it: every frame received, its status and its message."""

    spec: str
    source: Source | None
    frames: list[Frame] = field(default_factory=list)
    status: str = "waiting"
    message: str | None = None


class Race:
    """Runs two sources at once and records both; iterate `ticks()` (or app.ui.live.live_updates) to watch it."""

    def __init__(self, prompt: str, left: str, right: str, settings: dict[str, dict[str, Any]] | None = None,
                 secrets: dict[str, dict[str, Any]] | None = None, out: str | Path | None = None,
                 make: Callable[..., Source] = make_source, folder: str | Path | None = None,
                 limit: float | None = None, max_bytes: int | None = None, lesson: str | None = None,
                 draft: Revision | None = None) -> None:
        """`settings` go to each source, which records those it applied (`settings()`); `secrets` (keys typed into the
        page) go to the source only, never to disk;
        `make(spec, **settings, **secrets)` builds each side (the page passes one that applies its trust policy);
        the recording is `out`, or a new file in `folder` (default: recordings_dir()); `limit` is the race's
        wall-clock limit in seconds (default: app.race.limits.race_limit()); `max_bytes` caps the recording's frames
        (0: the race runs and is shown but nothing is saved, see RecordingWriter); `lesson` names the guided lesson
        that set the race up, in the header (lists name the run by it); `draft`, the race's one revision (issue 53):
        each side starts from it by its own means (`Source.revise`), the header keeping it and each side's plan.
        Every key the race could hold is scrubbed from the prompt, the header, each frame and each message."""
        settings = settings or {}
        self.limit = race_limit() if limit is None else float(limit)
        self.stop_reason: str | None = None  # set when the race was ended for the user, e.g. at its time limit
        self._ended_at: float | None = None
        secrets = secrets or {}
        self._keys = known_keys(secrets)
        prompt = scrub_text(clean_text(prompt), self._keys)
        self.prompt = prompt
        self.cancel = threading.Event()
        self.sides: dict[str, Side] = {}
        self._queue: queue.Queue[tuple[str, str, Any]] = queue.Queue()
        self._handoff: queue.Queue[tuple[str, str, Any] | None] = queue.Queue()  # side threads -> recorder
        for side, given in zip(SIDES, (left, right)):
            spec = scrub_text(given, self._keys)  # what is shown and recorded; the source gets what was given
            try:
                source = make(given, **settings.get(side, {}), **secrets.get(side, {}))
                self.sides[side] = Side(spec=spec, source=source)
            except UserError as e:
                self.sides[side] = Side(spec=spec, source=None, status="error", message=scrub_text(str(e), self._keys))
            except TypeError as e:
                self.sides[side] = Side(spec=spec, source=None, status="error",
                                        message=scrub_text(f"Bad settings for {spec}: {e}.", self._keys))
        if draft is not None:
            self._plan_sides(draft)
        self.sources: dict[str, Any] = scrub_value({  # as the header records them: what each source applied, and
            side: {"name": s.spec, "settings": s.source.settings() if s.source else {}}  # nothing for one never made
            | ({"draft": s.source.draft_json()} if draft is not None and s.source else {})
            for side, s in self.sides.items()
        }, self._keys)
        named = recording_name(self.sides["left"].spec, self.sides["right"].spec)
        self.path = Path(out) if out else Path(folder or recordings_dir()) / named
        header = make_header(prompt, self.sources, lesson, scrub_value(draft.to_json(), self._keys) if draft else None)
        self.writer = RecordingWriter(self.path, header, max_bytes=max_bytes)
        for side, s in self.sides.items():
            if s.source is None:
                self.writer.end(side, "error", s.message)
        self._threads: list[threading.Thread] = []
        self._timer: threading.Timer | None = None
        self._changed = False

    def _plan_sides(self, draft: Revision) -> None:
        """Each made side's plan for the draft (`Source.revise`); a side whose draft cannot fit ends in its error."""
        for s in self.sides.values():
            if s.source is None:
                continue
            try:
                s.source.revise(draft, self.prompt)
            except UserError as e:
                s.source, s.status, s.message = None, "error", scrub_text(str(e), self._keys)

    def start(self) -> "Race":
        """Starts both sides; sides running a local model first wait, in arrival order, for free CPU slots."""
        local = [side for side, s in self.sides.items()
                 if s.source is not None and s.source.cpu_bound]
        for s in self.sides.values():
            if s.source is not None:
                s.status = "running"
        thread = threading.Thread(target=self._start_sides, args=(local,), daemon=True, name="race-start")
        recorder = threading.Thread(target=self._record, daemon=True, name="race-recorder")
        self._threads += [thread, recorder]
        self._timer = threading.Timer(self.limit, self.time_up)
        self._timer.daemon = True
        self._timer.start()
        recorder.start()
        thread.start()
        return self

    def time_up(self) -> None:
        """The race reached its wall-clock limit: both sides stop and say so; their frames are already on disk."""
        if self.running() and not self.cancel.is_set():
            self.stop_reason = stopped_at_limit(self.limit)
        self.stop()

    def _record(self) -> None:
        """The recorder thread: completes each handed-off frame, writes it, then passes it (or a side's end) on."""
        failed: dict[str, str] = {}  # sides whose frames could not be completed: the rest of them is dropped
        while (item := self._handoff.get()) is not None:
            side, kind, payload = item
            if kind == "frame":
                if side in failed:
                    continue
                try:
                    payload.ready()
                    item = (side, kind, payload := scrub_frame(payload, self._keys))  # keys out before it is kept
                except Exception as e:  # a decoding bug: this side ends in an error, the other keeps running
                    log.error("frame of %s failed:\n%s", side, scrub_text(traceback.format_exc(), self._keys))
                    failed[side] = (f"{self.sides[side].spec} failed unexpectedly ({type(e).__name__}); "
                                    "the frames so far are kept.")
                    continue
                self.writer.frame(side, payload)
            else:
                if side in failed:
                    item = (side, kind, payload := ("error", failed[side]))
                self.writer.end(side, *payload)
            self._queue.put(item)

    def _start_sides(self, local: list[str]) -> None:
        """Runs the sides, then tells the recorder thread that nothing more comes."""
        try:
            self._run_sides(local)
        finally:
            self._handoff.put(None)

    def _run_sides(self, local: list[str]) -> None:
        """Takes the CPU slots the local sides need, runs each side in its own thread, and waits for both."""
        if local and COMPUTE.busy(len(local)):
            note = "Waiting for a free CPU: other races are running the built-in models; this one starts after them."
            for side in self.sides:
                if self.sides[side].source is not None:
                    self._queue.put((side, "status", ("waiting", note)))
        granted = COMPUTE.acquire(len(local), self.cancel) if local else 0
        if local and not granted:  # stopped while waiting
            message = self.stop_reason or "Stopped before it started."
            for side, s in self.sides.items():
                if s.source is not None:
                    self._handoff.put((side, "end", ("stopped", message)))
            return
        threads = []
        for side, s in self.sides.items():
            if s.source is not None:
                held = side in local[:granted]
                self._queue.put((side, "status", ("running", s.source.notice)))
                thread = threading.Thread(target=self._run_side, args=(side, s.source, held), daemon=True,
                                          name=f"race-{side}")
                threads.append(thread)
                thread.start()
        for thread in threads:
            thread.join()

    def _run_side(self, side: str, source: Source, held: bool = False) -> None:
        try:
            self._stream_side(side, source)
        finally:
            if held:
                COMPUTE.release(1)

    def _stream_side(self, side: str, source: Source) -> None:
        status, message = "done", source.notice  # a setting the source changed, said once more
        frames = source.stream(self.prompt, self.cancel, defer=source.defers)
        last: tuple[float, float] | None = None  # the latest frame's time on the side's clock, and when it came
        try:
            for frame in frames:
                last = (frame.t, time.monotonic())
                self._handoff.put((side, "frame", frame))
                if self.cancel.is_set():
                    break
            if self.cancel.is_set():
                status, message = "stopped", self.stop_reason
        except UserError as e:
            status, message = "error", scrub_text(str(e), self._keys)
        except Exception as e:  # a bug or an unforeseen library error: the other side keeps running
            log.error("source %s failed:\n%s", source.name, scrub_text(traceback.format_exc(), self._keys))
            status, message = "error", (f"{source.name} failed unexpectedly ({type(e).__name__}); the frames so far "
                                        "are kept.")
        finally:
            if isinstance(frames, Generator):  # its own cleanup (an open connection) runs now, not when collected
                frames.close()
        self._handoff.put((side, "end", (status, message, *self._clock_at_end(last, status))))

    def _clock_at_end(self, last: tuple[float, float] | None, status: str) -> tuple[float | None, float | None]:
        """(when the side ended, when it was told to stop) on its own clock, read off its latest frame's time and
        arrival: what a recording keeps to show how soon a side stopped; None where it made no frame or ran on."""
        if last is None:
            return None, None
        at, came = last
        ended = at + time.monotonic() - came  # not rounded: never before the latest frame's own time
        asked = self._ended_at if status == "stopped" else None
        return ended, (None if asked is None else max(0.0, at + asked - came))

    def stop(self) -> None:
        """Ends both sides (and a wait for CPU slots); every frame received so far is on disk once `close` returns."""
        if self._ended_at is None:
            self._ended_at = time.monotonic()
        self.cancel.set()
        COMPUTE.wake()

    def _end_overdue(self) -> None:
        """A side still running GRACE seconds after the race was stopped (a source that does not heed cancel) is
        marked stopped here, so the race, and the slot it holds, end anyway; a frame it sends later is dropped."""
        if self._ended_at is None or time.monotonic() - self._ended_at < GRACE:
            return
        message = self.stop_reason
        for side, s in self.sides.items():
            if s.status in ("waiting", "running"):
                log.warning("side %s (%s) did not end %.0f s after the race stopped", side, s.spec, GRACE)
                self.writer.end(side, "stopped", message)
                s.status, s.message = "stopped", message

    def running(self) -> bool:
        return any(s.status in ("waiting", "running") for s in self.sides.values())

    def _drain(self, timeout: float) -> None:
        try:
            item = self._queue.get(timeout=timeout)
        except queue.Empty:
            return
        while True:
            side, kind, payload = item
            s = self.sides[side]
            if kind == "frame":
                s.frames.append(payload)
            elif kind == "status" and s.status not in ("waiting", "running"):
                pass  # a side that has ended keeps its end
            else:
                s.status, s.message = payload[:2]
            self._changed = True
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return

    def ticks(self, interval: float = 0.05) -> Generator[bool, None, None]:
        """Yields False whenever something arrived (at most every `interval` seconds, and at least every HEARTBEAT so
        a departed client is noticed), then True once both sides have ended; stops and closes the race when done or
        abandoned."""
        if not self._threads and self.running():
            self.start()
        try:
            last = 0.0
            while self.running():
                self._drain(timeout=interval)
                self._end_overdue()
                now = time.monotonic()
                if now - last >= interval and (self._changed or now - last >= HEARTBEAT):
                    last = now
                    self._changed = False
                    yield False
            self._drain(timeout=0)
            yield True
        finally:
            self.stop()
            self.close()

    def close(self) -> None:
        """Waits briefly for the side threads to record how they ended, then closes the file."""
        if self._timer is not None:
            self._timer.cancel()
        deadline = time.monotonic() + 5.0
        for thread in self._threads:
            thread.join(timeout=max(0.0, deadline - time.monotonic()))
        self.writer.close()
