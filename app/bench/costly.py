"""The caps section's crafted recordings (issue 38): within every size cap, costly to analyse. Each is written with the
project's own writer and measured in a fresh process as the page and the exports use it: read (or refused, with
the time the refusal took), the player's payload, the HTML export and the CSV, and the peak memory.

Shapes: the issue's recording (49,990 one-token text frames, then one of 1.9 million tokens: refused by MAX_CELLS);
the worst accepted of its kind (three tiny frames, then 1.9 million tokens: 7.6 million cells); one giant token (15
text frames of one 3.9-million-character word); and long texts (1,000 Mercury-like drafts of 1,990 tokens).
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from app.trace.frames import Frame, RecordingWriter, make_header

MEASURE = """
import json, sys, time
from pathlib import Path
from app.bench.caps import peak_mb
from app.trace.frames import RecordingError, read_recording
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
print(json.dumps({"read_s": round(t1 - t0, 2), "payload_s": round(t2 - t1, 2), "html_s": round(t3 - t2, 2),
                  "csv_s": round(t4 - t3, 2), "message_mb": round(len(message) / 1e6, 1), "peak_mb": peak_mb()}))
"""  # noqa: E501 - a script run by `python -c`, kept as written


def write_text_side(path: Path, texts: list[str]) -> None:
    """One text side (a Mercury-like source) whose frames hold `texts`, the last one final."""
    writer = RecordingWriter(path, make_header("costly", {"right": {"name": "mercury", "settings": {}}}))
    for i, text in enumerate(texts):
        writer.frame("right", Frame(t=0.001 * i, step=i, text=text, final=i == len(texts) - 1))
    writer.end("right", "done")
    writer.close()


def shapes() -> dict[str, Any]:
    """Each crafted shape's frames' texts, built lazily (a callable) so only the one being written is held."""
    def long_texts() -> list[str]:
        rng = random.Random(0)
        final = [rng.choice(["the", "cat", "sat", "on", "a", "mat"]) for _ in range(995)]
        return [" ".join(w if rng.random() >= 1 - (i + 1) / 1000 else "zz" for w in final) for i in range(1000)]

    return {"issue_bomb": lambda: ["w"] * 49_990 + ["w " * 950_000],
            "tiny_then_huge": lambda: ["w"] * 3 + ["w " * 950_000],
            "giant_token": lambda: ["a" * 3_900_000 + "bcdefghijklmnop"[i] for i in range(15)],
            "long_texts": long_texts}


def bench() -> dict[str, Any]:
    """Seconds and peak memory of each crafted shape read, replayed and exported (or refused) in a fresh process."""
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, texts in shapes().items():
            path = Path(tmp) / f"{name}.jsonl"
            write_text_side(path, texts())
            done = subprocess.run([sys.executable, "-c", MEASURE, str(path), tmp], capture_output=True, text=True,
                                  check=True, cwd=Path(__file__).resolve().parents[2])
            out[name] = {"file_mb": round(path.stat().st_size / 1e6, 1), **json.loads(done.stdout)}
            path.unlink()
    return out
