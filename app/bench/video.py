"""The export section of `python -m app bench`: how long app.export.video takes to write a 10-second race.

The race is a seeded demo recording (`demo_recording`), a masked-diffusion side against a typing side, written as
MP4 and as GIF at 30 fps, 1280x720, through the same code path as an export from the page.
"""

from __future__ import annotations

import random
import tempfile
from pathlib import Path
from typing import Any

from app.errors import UserError
from app.export.video import FORMATS, _export
from app.export.video.encoders import X264
from app.trace.frames import Frame, RecordingWriter, make_header

_WORDS = ("the model writes every token at once and then keeps the ones it is sure of while the other "
          "side types one word after another from left to right").split()


def demo_recording(path: str | Path, seconds: float = 10.0, seed: int = 0) -> Path:
    """A race of `seconds` for the benchmark: a masked-diffusion side (256 positions, 64 steps, some
    remasking, done at 40% of the time) against a side typing text at about 25 tokens per second."""
    rng = random.Random(seed)
    words = [rng.choice(_WORDS) for _ in range(128)]
    final = [w if i % 2 == 0 else (" " if i % 24 != 23 else "\n")
             for i, w in enumerate(x for w in words for x in (w, " "))]
    writer = RecordingWriter(path, make_header("Race demo: which side settles first?", {
        "left": {"name": "demo-diffusion", "settings": {"steps": 64}},
        "right": {"name": "demo-ar", "settings": {}}}))
    masked = [True] * len(final)
    order = list(range(len(final)))
    rng.shuffle(order)
    steps = 64
    for step in range(steps):
        for p in order[step * 4:(step + 1) * 4]:
            masked[p] = False
        if 0 < step < steps - 8 and step % 5 == 0:
            masked[order[step * 4 - 1]] = True
            order.append(order[step * 4 - 1])
        if step == steps - 1:
            masked = [False] * len(final)
        writer.frame("left", Frame(t=0.1 + step * 0.4 * seconds / steps, step=step,
                                   tokens=["" if m else x for x, m in zip(final, masked)], masked=list(masked),
                                   nfe=step + 1, final=step == steps - 1))
    writer.end("left", "done")
    n = int(25 * seconds)
    for k in range(n):
        writer.frame("right", Frame(t=0.3 + k * (seconds - 0.3) / (n - 1), step=k,
                                    text="".join(final[:k + 1]), nfe=k + 1, final=k == n - 1))
    writer.end("right", "done")
    writer.close()
    return Path(path)


def _cpu() -> tuple[float, float]:
    """CPU seconds used so far by this process and by its finished children (ffmpeg), where the OS says."""
    try:
        import resource
    except ImportError:
        return 0.0, 0.0
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, kids.ru_utime + kids.ru_stime


def bench(seconds: float = 10.0, fps: float = 30, size: tuple[int, int] = (1280, 720)) -> dict[str, Any]:
    """The "export" bench section: seconds to export a 10-second race to MP4 at 30 fps, 1280x720 (and to GIF).

    realtime_factor = race seconds / export seconds (above 1: faster than real time). CPU seconds are
    given beside wall seconds because a shared machine stretches wall time but not CPU time.
    """
    import PIL

    out: dict[str, Any] = {"race_seconds": seconds, "fps": fps, "size": f"{size[0]}x{size[1]}",
                           "pillow": PIL.__version__}
    try:
        import imageio_ffmpeg

        out.update(imageio_ffmpeg=imageio_ffmpeg.__version__, ffmpeg=imageio_ffmpeg.get_ffmpeg_version(),
                   x264=" ".join(X264))
    except ImportError:
        pass
    with tempfile.TemporaryDirectory() as tmp:
        rec = demo_recording(Path(tmp) / "race.jsonl", seconds)
        for fmt in FORMATS:
            prefix = "" if fmt == "mp4" else "gif_"
            own, kids = _cpu()
            try:
                stats = _export(rec, Path(tmp) / f"race.{fmt}", fmt, fps, 1.0, size, 0.0, None)
            except UserError as e:
                out[f"{prefix}error"] = str(e)
                continue
            own, kids = _cpu()[0] - own, _cpu()[1] - kids
            out.update({f"{prefix}seconds": round(stats["seconds"], 3),
                        f"{prefix}realtime_factor": round(seconds / stats["seconds"], 2),
                        f"{prefix}frames": stats["frames"],
                        f"{prefix}render_ms_per_frame": round(1000 * stats["render_seconds"] / stats["frames"], 2),
                        f"{prefix}write_ms_per_frame": round(1000 * stats["write_seconds"] / stats["frames"], 2),
                        f"{prefix}python_cpu_seconds": round(own, 3),
                        f"{prefix}bytes": stats["bytes"]})
            if fmt == "mp4":
                out["ffmpeg_cpu_seconds"] = round(kids, 3)
    return out
