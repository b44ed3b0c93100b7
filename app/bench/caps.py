"""`python -m app bench --only caps`: what a recording at the caps costs to load
(app.trace.frames MAX_FRAMES, MAX_TOKENS, MAX_CELLS), and the crafted recordings of app/bench/costly.py.

Each shape is written just under the caps, then read and turned into the player's payload and its JSON message in a
fresh process, so the peak memory (VmHWM, the high-water mark of that process's own memory) is that load's alone.
The caps were chosen from these figures.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from app.bench.costly import bench as crafted
from app.trace.frames import MAX_CELLS, MAX_FRAMES, MAX_TOKENS

MEASURE = """
import json, sys, time
from app.bench.caps import peak_mb
from app.trace.reading import read_recording
from app.view.payload import recording_payload
base = peak_mb()
t0 = time.perf_counter()
rec = read_recording(sys.argv[1])
t1 = time.perf_counter()
message = json.dumps(recording_payload(rec), ensure_ascii=False, allow_nan=False, separators=(",", ":"))
t2 = time.perf_counter()
print(json.dumps({"read_s": round(t1 - t0, 2), "payload_s": round(t2 - t1, 2), "message_mb": round(len(message) / 1e6, 1),
                  "peak_mb": peak_mb(), "peak_before_mb": base}))
"""  # noqa: E501 - a script run by `python -c`, kept as written


def peak_mb() -> int:
    """This process's peak resident memory in MB: VmHWM (not ru_maxrss, which a process started from a bigger one
    inherits), or ru_maxrss where /proc is absent."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024)
    except OSError:
        pass
    import resource

    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)


def write_shape(path: Path, frames: int, tokens_per_frame: int) -> None:
    """A diffusion-like recording: `frames` frames of distinct tokens, a third of them masked, on the left side."""
    words = [f"tok{i}" for i in range(5000)]
    with open(path, "w", encoding="utf-8") as f:
        f.write(json.dumps({"type": "header", "schema": 1, "prompt": "caps",
                            "sources": {"left": {"name": "local-diffusion", "settings": {}}}}) + "\n")
        for i in range(frames):
            toks = [words[(i * 7 + j) % 5000] if (i + j) % 3 else "" for j in range(tokens_per_frame)]
            f.write(json.dumps({"type": "frame", "side": "left", "t": i * 0.01, "step": i, "tokens": toks,
                                "masked": [t == "" for t in toks]}) + "\n")


def bench() -> dict[str, Any]:
    """Seconds, peak memory and message size of loading each shape just under both caps."""
    shapes = {"most_frames": (MAX_FRAMES - 100, (MAX_TOKENS - 100_000) // MAX_FRAMES),
              "longest_frames": (1000, (MAX_TOKENS - 100_000) // 1000),
              "biggest_lines": (8, (MAX_TOKENS - 100_000) // 8)}  # each line just under MAX_LINE_BYTES
    out: dict[str, Any] = {"caps": {"frames": MAX_FRAMES, "tokens": MAX_TOKENS, "cells": MAX_CELLS}}
    with tempfile.TemporaryDirectory() as tmp:
        for name, (frames, per) in shapes.items():
            path = Path(tmp) / f"{name}.jsonl"
            write_shape(path, frames, per)
            done = subprocess.run([sys.executable, "-c", MEASURE, str(path)], capture_output=True, text=True,
                                  check=True, cwd=Path(__file__).resolve().parents[2])
            out[name] = {"frames": frames, "tokens": frames * per, "file_mb": round(path.stat().st_size / 1e6, 1),
                         **json.loads(done.stdout)}
    out["crafted"] = crafted()  # within the caps, costly to analyse (app/bench/costly.py)
    return out
