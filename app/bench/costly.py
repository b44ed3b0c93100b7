"""The caps section's crafted recordings (issues 38 and 49): within every size cap, costly to analyse. Each is written
with the project's own writer and measured in a fresh process as the page and the exports use it: read (or refused,
with the time the refusal took), the player's payload, the HTML export and the CSV, and the peak memory.

Text shapes (issue 38): the issue's recording (49,990 one-token text frames, then one of 1.9 million tokens: refused
by MAX_CELLS); the worst accepted of its kind (three tiny frames, then 1.9 million tokens: 7.6 million cells); one
giant token (15 text frames of one 3.9-million-character word); and long texts (1,000 Mercury-like drafts of 1,990
tokens). Schema 2 shapes (issue 49, `SCHEMA2`): the deletion bomb (one frame of N tokens, then one deleting its last
half, which placed each deletion by a scan to the end of the frame: D x N), insert bombs (frames that replace every
position, and a frame that inserts a token between every two), and long states (frames of every state letter).

`growth` runs every shape (text and schema 2) at n and 4n tokens and counts the Python lines the page's work on it
executes (read, the player's payload, the HTML export, the CSV), deterministically: linear work grows about 4 times,
D x N work 16 times. tests/test_costly_recordings.py holds each ratio to at most 5.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path
from typing import Any, Callable

from app.trace.frames import Frame, RecordingWriter, make_header

MEASURE = """
import json, sys, time
from pathlib import Path
from app.bench.caps import peak_mb
from app.trace.reading import RecordingError, read_recording
from app.view.payload import recording_payload
from app.export.html import export_html
from app.analysis.tables import write_frames_csv
t0 = time.perf_counter()
try:
    rec = read_recording(sys.argv[1])
except RecordingError as e:
    print(json.dumps({"refused_s": round(time.perf_counter() - t0, 2), "refusal": str(e), "peak_mb": peak_mb()}))
    raise SystemExit(0)
t1 = time.perf_counter()
message = json.dumps(recording_payload(rec), ensure_ascii=False, allow_nan=False, separators=(",", ":"))
t2 = time.perf_counter()
export_html(sys.argv[1], Path(sys.argv[2]) / "out.html")
t3 = time.perf_counter()
write_frames_csv(rec, Path(sys.argv[2]) / "out.csv")
t4 = time.perf_counter()
print(json.dumps({"frames": sum(map(len, rec.frames.values())), "skipped": len(rec.warnings),
                  "read_s": round(t1 - t0, 2), "payload_s": round(t2 - t1, 2), "html_s": round(t3 - t2, 2),
                  "csv_s": round(t4 - t3, 2), "message_mb": round(len(message) / 1e6, 1), "peak_mb": peak_mb()}))
"""  # noqa: E501 - a script run by `python -c`, kept as written


def write_text_side(path: Path, texts: list[str]) -> None:
    """One text side (a Mercury-like source) whose frames hold `texts`, the last one final."""
    writer = RecordingWriter(path, make_header("costly", {"right": {"name": "mercury", "settings": {}}}))
    for i, text in enumerate(texts):
        writer.frame("right", Frame(t=0.001 * i, step=i, text=text, final=i == len(texts) - 1))
    writer.end("right", "done")
    writer.close()


def write_token_side(path: Path, frames: list[Frame]) -> None:
    """One token side (a local diffusion-like source with schema 2 states) whose frames are `frames`."""
    writer = RecordingWriter(path, make_header("costly", {"left": {"name": "local-diffusion", "settings": {}}}))
    for frame in frames:
        writer.frame("left", frame)
    writer.end("left", "done")
    writer.close()


LETTERS = "abcdefghijklmnopqrstuvwxyz"  # one-letter tokens: the shortest lines, so the full sizes fit MAX_LINE_BYTES


def deletion_bomb(n: int) -> list[Frame]:
    """One frame of n / 2 accepted tokens, then one that keeps the first n / 10 of them and deletes the rest (n tokens
    in all, lists included): each deleted position has no kept one after it."""
    first, kept = n // 2, n // 10
    toks = [LETTERS[i % 26] for i in range(first)]
    return [Frame(t=0.0, step=0, tokens=toks, states="a" * first),
            Frame(t=0.1, step=1, tokens=toks[:kept], states="a" * kept, deleted=list(range(kept, first)), final=True)]


def insert_bomb(n: int, width: int = 64) -> list[Frame]:
    """Frames of `width` tokens, each deleting every position of the one before and inserting all of its own (each
    position a line of its own in the heatmap's columns): about n tokens, lists included."""
    frames = []
    for k in range(max(2, n // (3 * width))):
        toks = [f"v{k}.{i}" for i in range(width)]
        frames.append(Frame(t=0.01 * k, step=k, tokens=toks, states="d" * width, inserted=list(range(width)),
                            deleted=list(range(width)) if k else None))
    frames[-1].final = True
    return frames


def insert_between(n: int) -> list[Frame]:
    """One frame of n / 4 tokens, then one that inserts a token between every two of them."""
    quarter = n // 4
    toks = [LETTERS[i % 26] for i in range(quarter)]
    spread = [t for tok in toks for t in (tok, "+")]
    return [Frame(t=0.0, step=0, tokens=toks, states="a" * quarter),
            Frame(t=0.1, step=1, tokens=spread, states="ad" * quarter, inserted=list(range(1, 2 * quarter, 2)),
                  final=True)]


def long_states(n: int, frames: int = 8) -> list[Frame]:
    """`frames` frames of n / frames tokens whose states cycle through every letter, so each frame changes each
    position's state (edits, re-noising, drafts accepted)."""
    width = n // frames
    letters = "mnda"
    return [Frame(t=0.01 * k, step=k, tokens=[f"w{(i * k) % 13}" for i in range(width)],
                  states="".join(letters[(i + k) % 4] for i in range(width)), final=k == frames - 1)
            for k in range(frames)]


SCHEMA2 = {"deletion_bomb": deletion_bomb, "insert_bomb": insert_bomb, "insert_between": insert_between,
           "long_states": long_states}


def drafts(frames: int, words: int, seed: int = 0) -> list[str]:
    """`frames` Mercury-like drafts of `words` words (about twice as many display tokens), noise settling towards the
    last one."""
    rng = random.Random(seed)
    final = [rng.choice(["the", "cat", "sat", "on", "a", "mat"]) for _ in range(words)]
    return [" ".join(w if rng.random() >= 1 - (i + 1) / frames else "zz" for w in final) for i in range(frames)]


TEXT = {"tiny_then_huge": lambda n: ["w"] * 50 + ["w " * (n // 2)],  # text shapes of about n display tokens
        "giant_token": lambda n: ["a" * n + c for c in "bcd"],
        "long_texts": lambda n: drafts(max(2, n // 400), 200)}
# the largest each shape can be within the caps (MAX_TOKENS, and MAX_LINE_BYTES for the longest line)
FULL = {"deletion_bomb": 1_000_000, "insert_bomb": 1_900_000, "insert_between": 700_000, "long_states": 1_900_000}


def shapes() -> dict[str, Callable[[Path], None]]:
    """Each crafted shape as a writer of its recording at full size, so only the one being written is held."""
    text: dict[str, Callable[[], list[str]]] = {
        "issue_bomb": lambda: ["w"] * 49_990 + ["w " * 950_000],
        "tiny_then_huge": lambda: ["w"] * 3 + ["w " * 950_000],
        "giant_token": lambda: ["a" * 3_900_000 + "bcdefghijklmnop"[i] for i in range(15)],
        "long_texts": lambda: drafts(1000, 995)}
    def text_writer(texts: Callable[[], list[str]]) -> Callable[[Path], None]:
        return lambda path: write_text_side(path, texts())

    return {**{name: text_writer(texts) for name, texts in text.items()},
            **{name: sized(name, FULL[name]) for name in FULL}}


def sized(name: str, n: int) -> Callable[[Path], None]:
    """A writer of crafted shape `name` (text or schema 2) at about n display tokens."""
    if name in TEXT:
        return lambda path: write_text_side(path, TEXT[name](n))
    return lambda path: write_token_side(path, SCHEMA2[name](n))


def lines_run(work: Callable[[], Any]) -> int:
    """How many Python lines `work()` executes on this thread (a line run again in a loop counts each time): a count
    of its work that does not depend on the machine or its load."""
    count = 0

    def trace(frame: Any, event: str, arg: Any) -> Any:
        nonlocal count
        count += event == "line"
        return trace
    sys.settrace(trace)
    try:
        work()
    finally:
        sys.settrace(None)
    return count


def every_use(path: Path, out: Path) -> None:
    """What the page does with a recording: read it, build the player's payload and its message, export the HTML
    page and the CSV."""
    from app.analysis.tables import write_frames_csv
    from app.export.html import export_html
    from app.trace.reading import read_recording
    from app.view.payload import recording_payload

    rec = read_recording(path)
    json.dumps(recording_payload(rec), ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    export_html(path, out.with_suffix(".html"))
    write_frames_csv(rec, out.with_suffix(".csv"))


def growth(n: int = 4000, factor: int = 4, timed: bool = True, names: list[str] | None = None) -> dict[str, Any]:
    """For each crafted shape (or those `names`) at n and factor x n tokens: the lines its every use runs beyond
    those of a one-token recording (`work`), their ratio (linear work: about `factor`; D x N work: factor squared)
    and, with `timed`, the CPU seconds of each (untraced)."""
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "base.jsonl"
        write_token_side(base, [Frame(t=0, step=0, tokens=["w"], states="a", final=True)])
        every_use(base, Path(tmp) / "warm")  # imports and caches (the player's script) before any count
        floor = lines_run(lambda: every_use(base, Path(tmp) / "base"))
        for name in names or [*TEXT, *SCHEMA2]:
            work, cpu = [], []
            for size in (n, factor * n):
                path = Path(tmp) / f"{name}-{size}.jsonl"
                sized(name, size)(path)
                work.append(lines_run(partial(every_use, path, Path(tmp) / "out")) - floor)
                if timed:
                    t0 = time.process_time()
                    every_use(path, Path(tmp) / "out")
                    cpu.append(round(time.process_time() - t0, 3))
            out[name] = {"tokens": [n, factor * n], "work": work, "ratio": round(work[1] / max(1, work[0]), 2),
                         **({"cpu_s": cpu} if timed else {})}
    return out


def bench() -> dict[str, Any]:
    """Seconds and peak memory of each crafted shape read, replayed and exported (or refused) in a fresh process, and
    how each one's work grows with its size (`growth`)."""
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, write in shapes().items():
            path = Path(tmp) / f"{name}.jsonl"
            write(path)
            done = subprocess.run([sys.executable, "-c", MEASURE, str(path), tmp], capture_output=True, text=True,
                                  check=True, cwd=Path(__file__).resolve().parents[2])
            out[name] = {"file_mb": round(path.stat().st_size / 1e6, 1), **json.loads(done.stdout)}
            path.unlink()
    out["growth"] = growth()
    return out
