"""Two sources, two threads, one stream of coalesced updates for the page.

Each side runs in its own thread with its own clock, so neither side's work is counted in the
other's time. Every frame is appended to the recording the moment it arrives; the consumer
(the page or the CLI) gets at most one update per `interval` holding every new frame, already
analysed, and always the final state. Every race has a wall-clock limit (app/limits.py): when it is
reached both sides stop, say why, and keep their frames; an update comes at least once a second
even when nothing changed, so a page or API caller that went away is noticed and the race ends.
"""

from __future__ import annotations

import logging
import os
import queue
import re
import threading
import time
import traceback
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from app.analysis import SideAnalyzer, metrics, settled_fraction_series, side_labels
from app.compute import COMPUTE
from app.limits import race_limit, stopped_at_limit
from app.sources.base import Source, SourceError, make_source
from app.trace import SIDES, Frame, RecordingWriter, clean_text, make_header

log = logging.getLogger("converge.race")

RECORDINGS_DIR = Path(__file__).resolve().parent.parent / "recordings"
HEARTBEAT = 1.0  # seconds: the longest a consumer waits for an update, so a departed client is noticed
GRACE = 5.0  # seconds a side gets to end after its race reached the limit before the race ends it itself


def recordings_dir() -> Path:
    """Where user runs are saved (CONVERGE_RECORDINGS overrides, for tests and deployments)."""
    return Path(os.environ.get("CONVERGE_RECORDINGS", RECORDINGS_DIR))


def recording_name(left: str, right: str) -> str:
    """A file name that says when and what raced, with anything odd in source names replaced."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    clean = lambda s: re.sub(r"[^A-Za-z0-9._-]+", "_", s)[:40]  # noqa: E731
    return f"{stamp}-{clean(left)}-vs-{clean(right)}-{uuid.uuid4().hex[:6]}.jsonl"


def known_keys(secrets: dict[str, dict[str, Any]]) -> list[str]:
    """Every API key this race could hold: those typed into the page and those in *_API_KEY environment variables."""
    typed = [str(v) for entry in secrets.values() for k, v in entry.items() if k == "api_key" and v]
    env = [v for k, v in os.environ.items() if k.endswith("_API_KEY") and v]
    return sorted({k.strip() for k in typed + env if len(k.strip()) >= 4}, key=len, reverse=True)


def redact_keys(text: str, keys: list[str]) -> str:
    """`text` with every key in `keys` replaced by [key], for logs that quote exception messages."""
    for key in keys:
        text = text.replace(key, "[key]")
    return text


@dataclass
class Side:
    """One side's live state as the consumer sees it."""

    spec: str
    source: Source | None
    frames: list[Frame] = field(default_factory=list)
    analyzer: SideAnalyzer = field(default_factory=SideAnalyzer)
    status: str = "waiting"
    message: str | None = None
    new_rows: list[dict[str, Any]] = field(default_factory=list)


class Race:
    """Runs two sources at once and records both; iterate `updates()` to watch it."""

    def __init__(self, prompt: str, left: str, right: str, settings: dict[str, dict[str, Any]] | None = None,
                 secrets: dict[str, dict[str, Any]] | None = None, out: str | Path | None = None,
                 limit: float | None = None) -> None:
        """`settings` are recorded; `secrets` (keys typed into the page) go to the source only, never to disk;
        `limit` is the race's wall-clock limit in seconds (default: app.limits.race_limit())."""
        settings = settings or {}
        self.limit = race_limit() if limit is None else float(limit)
        self.stop_reason: str | None = None  # set when the race was ended for the user, e.g. at its time limit
        self._ended_at: float | None = None
        secrets = secrets or {}
        self._keys = known_keys(secrets)
        prompt = clean_text(prompt)
        self.prompt = prompt
        self.cancel = threading.Event()
        self.sides: dict[str, Side] = {}
        self._queue: queue.Queue[tuple[str, str, Any]] = queue.Queue()
        for side, spec in zip(SIDES, (left, right)):
            try:
                source = make_source(spec, **settings.get(side, {}), **secrets.get(side, {}))
                self.sides[side] = Side(spec=spec, source=source)
            except SourceError as e:
                self.sides[side] = Side(spec=spec, source=None, status="error", message=str(e))
            except TypeError as e:
                self.sides[side] = Side(spec=spec, source=None, status="error",
                                        message=f"Bad settings for {spec}: {e}.")
        header_sources = {
            side: {"name": s.spec, "settings": s.source.settings() if s.source else settings.get(side, {})}
            for side, s in self.sides.items()
        }
        self.labels = side_labels(header_sources)
        self.path = Path(out) if out else recordings_dir() / recording_name(left, right)
        self.writer = RecordingWriter(self.path, make_header(prompt, header_sources))
        for side, s in self.sides.items():
            if s.source is None:
                self.writer.end(side, "error", s.message)
        self._threads: list[threading.Thread] = []
        self._timer: threading.Timer | None = None
        self._changed = False

    def start(self) -> "Race":
        """Starts both sides; sides running a local model first wait, in arrival order, for free CPU slots."""
        local = [side for side, s in self.sides.items() if s.source is not None and getattr(s.source, "cpu_bound", False)]
        for s in self.sides.values():
            if s.source is not None:
                s.status = "running"
        thread = threading.Thread(target=self._start_sides, args=(local,), daemon=True, name="race-start")
        self._threads.append(thread)
        self._timer = threading.Timer(self.limit, self.time_up)
        self._timer.daemon = True
        self._timer.start()
        thread.start()
        return self

    def time_up(self) -> None:
        """The race reached its wall-clock limit: both sides stop and say so; their frames are already on disk."""
        if self.running() and not self.cancel.is_set():
            self.stop_reason = stopped_at_limit(self.limit)
        self.stop()

    def _start_sides(self, local: list[str]) -> None:
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
                    self.writer.end(side, "stopped", message)
                    self._queue.put((side, "end", ("stopped", message)))
            return
        threads = []
        for side, s in self.sides.items():
            if s.source is not None:
                held = side in local[:granted]
                self._queue.put((side, "status", ("running", None)))
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
        status, message = "done", None
        frames = source.stream(self.prompt, self.cancel)
        try:
            for frame in frames:
                self.writer.frame(side, frame)
                self._queue.put((side, "frame", frame))
                if self.cancel.is_set():
                    break
            if self.cancel.is_set():
                status, message = "stopped", self.stop_reason
        except SourceError as e:
            status, message = "error", str(e)
        except Exception as e:  # a bug or an unforeseen library error: the other side keeps running
            log.error("source %s failed:\n%s", source.name, redact_keys(traceback.format_exc(), self._keys))
            status, message = "error", f"{source.name} failed unexpectedly ({type(e).__name__}); the frames so far are kept."
        finally:
            close = getattr(frames, "close", None)
            if close is not None:
                close()
        self.writer.end(side, status, message)
        self._queue.put((side, "end", (status, message)))

    def stop(self) -> None:
        """Ends both sides (and a wait for CPU slots); every frame received so far is already on disk."""
        if self._ended_at is None:
            self._ended_at = time.monotonic()
        self.cancel.set()
        COMPUTE.wake()

    def _end_overdue(self) -> None:
        """A side still running GRACE seconds after the race was stopped (a source that does not heed cancel) is
        marked stopped here, so the race, and the slot it holds, end anyway; a frame it sends later is dropped."""
        if self._ended_at is None or time.monotonic() - self._ended_at < GRACE:
            return
        message = self.stop_reason or "Stopped: the frames so far are kept."
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
                s.new_rows.append(s.analyzer.add(payload))
            elif kind == "status":
                if s.status in ("waiting", "running"):
                    s.status, s.message = payload
                    self._changed = True
            else:
                s.status, s.message = payload
                if s.status == "stopped" and not s.message:
                    s.message = "Stopped: the frames so far are kept."
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return

    def snapshot(self, final: bool = False) -> dict[str, Any]:
        """One update: each side's rows since the last update, status, message and metrics."""
        sides: dict[str, Any] = {}
        for side, s in self.sides.items():
            rows, s.new_rows = s.new_rows, []
            entry: dict[str, Any] = {
                "spec": s.spec, "label": self.labels.get(side, s.spec), "status": s.status, "message": s.message,
                "start": len(s.frames) - len(rows), "rows": rows,
            }
            if final or s.status not in ("waiting", "running"):
                entry["metrics"] = metrics(s.frames) if s.frames else None
                entry["settled"] = settled_fraction_series(s.frames) if s.frames else []
            sides[side] = entry
        return {"prompt": self.prompt, "recording": self.path.name, "done": final, "sides": sides}

    def updates(self, interval: float = 0.05) -> Iterator[dict[str, Any]]:
        """Coalesced updates at most every `interval` seconds, then one final update; stops the race if abandoned."""
        if not self._threads and self.running():
            self.start()
        try:
            last = 0.0
            while self.running():
                self._drain(timeout=interval)
                self._end_overdue()
                now = time.monotonic()
                fresh = self._changed or any(s.new_rows for s in self.sides.values())
                if now - last >= interval and (fresh or now - last >= HEARTBEAT):
                    last = now
                    self._changed = False
                    yield self.snapshot()
            self._drain(timeout=0)
            yield self.snapshot(final=True)
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


def record(prompt: str, left: str, right: str, out: str | Path,
           settings: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """Runs a race headless and writes the recording; returns the final update."""
    final: dict[str, Any] = {}
    for update in Race(prompt, left, right, settings=settings, out=out).updates(interval=0.2):
        final = update
    return final


def bench(prompt: str = "Once upon a time, there was a little girl named Lily.", repeats: int = 3) -> dict[str, Any]:
    """`python -m app bench --only race`: how much racing the twins side by side (two threads, one process) slows
    each one's own clock, against the same twin beside a replay of the other (which costs no CPU). Median of runs."""
    import statistics
    import tempfile

    def t_final(path: Path, side: str) -> float:
        from app.trace import read_recording

        return read_recording(path).frames[side][-1].t

    runs: dict[str, list[float]] = {"diffusion_in_race": [], "ar_in_race": [], "diffusion_alone": [], "ar_alone": []}
    with tempfile.TemporaryDirectory() as tmp:
        first = Path(tmp) / "race-0.jsonl"
        record(prompt, "local-diffusion", "local-ar", first)  # warm-up, and the recording the replays play
        for k in range(repeats):
            race = Path(tmp) / f"race-{k + 1}.jsonl"
            record(prompt, "local-diffusion", "local-ar", race)
            runs["diffusion_in_race"].append(t_final(race, "left"))
            runs["ar_in_race"].append(t_final(race, "right"))
            alone = Path(tmp) / f"alone-{k}.jsonl"
            record(prompt, "local-diffusion", f"replay:{first}#right", alone)
            runs["diffusion_alone"].append(t_final(alone, "left"))
            record(prompt, f"replay:{first}", "local-ar", alone)
            runs["ar_alone"].append(t_final(alone, "right"))
    med = {k: round(statistics.median(v), 3) for k, v in runs.items()}
    return {"seconds_median": med, "runs": {k: [round(x, 3) for x in v] for k, v in runs.items()},
            "diffusion_slowdown_in_race": round(med["diffusion_in_race"] / med["diffusion_alone"], 2),
            "ar_slowdown_in_race": round(med["ar_in_race"] / med["ar_alone"], 2),
            "settings": "both twins at their defaults, 128 tokens; 'alone' races the twin against a replay"}
