"""Prints SHA-256 hashes of what every bundled example exports, to show a refactor leaves the output unchanged.

For each recording in recordings/examples/: the player payload (JSON, under a fixed run id), the HTML export, the still
at the end,
every video frame the exporter would draw (1280x720, 30 fps, on the time clock and on the forward-pass clock),
and a whole GIF (480x270, 10 fps). Run it before and after a change and compare the two outputs:

    python scripts/hash_exports.py > /tmp/before.txt
    python scripts/hash_exports.py > /tmp/after.txt && diff /tmp/before.txt /tmp/after.txt
"""

from __future__ import annotations

import hashlib
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from app.export.html import export_html  # noqa: E402
from app.export.video import Scene, export_video, frame_count, load, race_time, render_still  # noqa: E402
from app.sources.base import setting_defaults  # noqa: E402
from app.trace.reading import read_recording  # noqa: E402
from app.view.payload import recording_payload  # noqa: E402


def sha(data: bytes) -> str:
    """The first 16 hex digits of a SHA-256: enough to tell two outputs apart."""
    return hashlib.sha256(data).hexdigest()[:16]


def frames_hash(path: Path, clock: str, size: tuple[int, int] = (1280, 720), fps: float = 30) -> str:
    """One hash over every canvas the exporter draws for the race, in order, as the MP4 writer receives them."""
    scene = Scene(load(path), size, 1.0, clock)
    span = scene.end / scene.rate
    n = frame_count(span, fps, 1.0)
    digest = hashlib.sha256()
    for k in range(n):
        scene.draw(race_time(k, n, span, fps, 1.0) * scene.rate)
        digest.update(scene.canvas.tobytes())
    return f"{n} frames {digest.hexdigest()[:16]}"


def main() -> None:
    """Prints one line per example and output."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        for path in sorted((ROOT / "recordings" / "examples").glob("*.jsonl")):
            payload = json.dumps(recording_payload(read_recording(path), name=path.name, run="hash",
                                                         defaults=setting_defaults()), sort_keys=True)
            print(path.name, "payload", sha(payload.encode()))
            for clock in ("time", "passes"):
                print(path.name, f"html-{clock}", sha(export_html(path, out / "race.html", clock=clock).read_bytes()))
                print(path.name, f"frames-{clock}", frames_hash(path, clock))
            print(path.name, "still-end", sha(render_still(path, out / "still.png").read_bytes()))
            gif = export_video(path, out / "race.gif", fmt="gif", fps=10, size=(480, 270))
            print(path.name, "gif", sha(gif.read_bytes()))


if __name__ == "__main__":
    main()
