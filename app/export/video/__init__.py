"""Video export (GIF, MP4) of a recorded race, drawn the way the page draws it.

Timing: video frame k shows race time T = k / fps * speed and, for each side, the latest trace frame
with t <= T (with `clock="passes"`, the forward-pass clock: frame k shows pass P = k / fps * speed * PASS_RATE
and each side's latest frame with nfe <= P, its timer counting passes; a side that reports no passes keeps
its seconds); the last video frame shows the final state, then `hold` seconds of it (default 0). So the
video lasts ceil((end / speed + hold) * fps) frames, `end` being the last frame time of the slower side. Given a
watch `pace`, `speed` is first multiplied by the player's pace factor (app/view/pace.py), so a quick race of local
models lasts `pace` seconds before the hold, as the player replays it; the page and the CLI pass theme.json's pace.
Every number on screen comes from the trace: a side's timer is its shown frame's own `t`; beside it, the
tokens of the final answer already in place at that frame (`analysis.settled_fraction_series`, the page's
convergence measure, so a noisy draft's noise is not counted) and those tokens / t, which at the last
frame are `analysis.metrics`' tokens and tokens/s; change codes and the settled prefix come from
`analysis.SideAnalyzer`, the same rows the browser player draws. The colours are the page's
(app/view/theme.json, which the page's player.css and player script read too), whose change codes differ in lightness
as well as hue, so the video also reads in greyscale.

Speed comes from redrawing little: a side is drawn only when its shown frame changes, only text rows
whose cells changed are redrawn (each character is rasterised once, and each character in each style
blended once, so a row is one array gather), the heatmap
gains one row per new trace frame, MP4 frames go to ffmpeg as raw RGB through imageio-ffmpeg, and a
GIF frame stores only the rectangle that changed. Output is written to a temporary file beside `out`
and renamed into place, so a failed export leaves nothing behind.

The parts: palette.py (the theme's colours and styles as arrays), fonts.py (fonts and the glyph atlas), track.py
(one side on the video's clock, its heatmap), scene.py (the picture), encoders.py (MP4, GIF); this module checks
the request and runs them.
"""

from __future__ import annotations

import math
import os
import time
import uuid
from pathlib import Path
from typing import Any, Callable

from PIL import Image

from app.errors import UserError
from app.export.video.encoders import GifWriter, Mp4Writer
from app.export.video.scene import MAX_SIZE, MIN_SIZE, Scene
from app.export.video.track import load
from app.view.pace import pace_factor

FORMATS = ("mp4", "gif")
GIF_MAX_FPS = 50  # GIF delays are whole hundredths; players slow down frames shorter than 20 ms
MAX_FRAMES = 200_000
# about 2 minutes of work at 1280x720 on a 2-core machine (docs/figures.md); HTML plays any length
MAX_VIDEO_SECONDS = 300
CLOCKS = ("time", "passes")


def frame_count(end: float, fps: float, speed: float, hold: float = 0.0) -> int:
    """Video frames for a race that ends at `end` seconds: ceil((end / speed + hold) * fps), at least one."""
    return max(1, math.ceil(round((end / speed + hold) * fps, 6)))


def race_time(k: int, n: int, end: float, fps: float, speed: float) -> float:
    """Race time shown by video frame k of n: k / fps * speed, the last frame (and any hold) the end."""
    return end if k >= n - 1 else min(end, k / fps * speed)


def _check(fmt: str, fps: float, speed: float, size: tuple[int, int], hold: float) -> None:
    if fmt not in FORMATS:
        raise UserError(f"Unknown video format {fmt!r}; choose mp4 or gif.")
    if not (isinstance(fps, (int, float)) and math.isfinite(fps) and 1 <= fps <= 120):
        raise UserError("The frame rate must be between 1 and 120 frames per second.")
    if fmt == "gif" and fps > GIF_MAX_FPS:
        raise UserError(f"GIF delays are whole hundredths of a second and players slow down faster frames: "
                        f"use --fps {GIF_MAX_FPS} or less for GIF.")
    if not (isinstance(speed, (int, float)) and math.isfinite(speed) and 0.01 <= speed <= 100):
        raise UserError("The speed must be between 0.01 and 100 (1 is real time, 2 twice as fast).")
    if not (math.isfinite(hold) and 0 <= hold <= 600):
        raise UserError("The final hold must be between 0 and 600 seconds.")
    w, h = size
    if not (MIN_SIZE[0] <= w <= MAX_SIZE[0] and MIN_SIZE[1] <= h <= MAX_SIZE[1]):
        raise UserError(f"The video size must be from {MIN_SIZE[0]}x{MIN_SIZE[1]} to {MAX_SIZE[0]}x{MAX_SIZE[1]}; "
                        f"got {w}x{h}.")
    if fmt == "mp4" and (w % 2 or h % 2):
        raise UserError(f"MP4 needs an even width and height; got {w}x{h} (try {w - w % 2}x{h - h % 2}).")


def _export(recording_path: str | Path, out: str | Path, fmt: str, fps: float, speed: float,
            size: tuple[int, int], hold: float, progress: Callable[[int, int], None] | None,
            clock: str = "time", pace: float = 0.0, loop: bool = True) -> dict[str, Any]:
    size = (int(size[0]), int(size[1]))
    _check(fmt, fps, speed, size, hold)
    if clock not in CLOCKS:
        raise UserError(f"The clock must be time or passes, not {clock!r}.")
    if not (isinstance(pace, (int, float)) and math.isfinite(pace) and 0 <= pace <= MAX_VIDEO_SECONDS):
        raise UserError(f"The watch pace must be between 0 (real time) and {MAX_VIDEO_SECONDS} seconds.")
    out = Path(out)
    if not out.parent.is_dir():
        raise UserError(f"Cannot write {out}: the folder {out.parent} does not exist.")
    if out.is_dir():
        raise UserError(f"{out} is a folder; give --out a file name such as race.{fmt}.")
    rec = load(recording_path)
    speed *= pace_factor(rec, clock, pace)  # a quick run of local models lasts the watch pace, as the player plays it
    started = time.perf_counter()
    scene = Scene(rec, size, speed, clock)
    span = scene.end / scene.rate  # seconds of video at speed 1
    n = frame_count(span, fps, speed, hold)
    if n > MAX_FRAMES:
        raise UserError(f"That would be {n} frames; raise --speed or lower --fps (at most {MAX_FRAMES}).")
    if n / fps > MAX_VIDEO_SECONDS:
        raise UserError(f"That video would last {n / fps:,.0f} s and videos are capped at {MAX_VIDEO_SECONDS} s: "
                        f"export HTML, which plays any length, or use python -m app export with --speed "
                        f"{math.ceil(scene.end / max(1.0, MAX_VIDEO_SECONDS - hold))} or more.")
    tmp = out.with_name(f".{out.name}.{uuid.uuid4().hex[:8]}.part")
    render = write = 0.0
    writer: Mp4Writer | GifWriter | None = None
    try:
        try:
            writer = Mp4Writer(tmp, size, fps) if fmt == "mp4" else GifWriter(tmp, size, scene.palette_sample(), loop)
            for k in range(n):
                t0 = time.perf_counter()
                scene.draw(race_time(k, n, span, fps, speed) * scene.rate)
                dirty = scene.take_dirty()
                t1 = time.perf_counter()
                writer.add(scene.canvas, dirty, round((k + 1) * 100 / fps) - round(k * 100 / fps))
                write += time.perf_counter() - t1
                render += t1 - t0
                if progress is not None:
                    progress(k + 1, n)
            writer.finish()
            writer = None
            os.replace(tmp, out)
        except OSError as e:
            raise UserError(f"Could not write {out.name}: {e.strerror or e}.") from None
        finally:
            if writer is not None:
                writer.close()
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return {"frames": n, "video_seconds": n / fps, "race_seconds": scene.end, "speed": speed,
            "seconds": time.perf_counter() - started,
            "render_seconds": render, "write_seconds": write, "bytes": out.stat().st_size}


def export_video(recording_path: str | Path, out: str | Path, fmt: str = "mp4", fps: float = 30, speed: float = 1.0,
                 size: tuple[int, int] = (1280, 720), hold: float = 0.0,
                 progress: Callable[[int, int], None] | None = None, clock: str = "time", pace: float = 0.0,
                 loop: bool = True) -> Path:
    """Writes the race in a recording as an MP4 or GIF that looks like the page; returns `out`.

    `speed` 2 plays twice as fast; `pace` (seconds, app/view/pace.py; 0: real time) stretches a quick run of local
    models to last that long, as the player's watch pace does, before `speed` applies; `hold` adds seconds of the
    final state at the end; `loop=False` makes a GIF that plays once; `progress(done, total)` is called after each
    video frame; `clock="passes"` runs it on forward passes. Raises UserError with one clear sentence on bad input or
    a failed write, leaving no file at `out`.
    """
    _export(recording_path, out, fmt, fps, speed, size, hold, progress, clock, pace, loop)
    return Path(out)


def render_still(recording_path: str | Path, out: str | Path, t: float | None = None,
                 size: tuple[int, int] = (1280, 720)) -> Path:
    """Writes one PNG of the race at time t (default: the end), for a thumbnail or a slide."""
    scene = Scene(load(recording_path), (int(size[0]), int(size[1])))
    scene.draw(scene.end if t is None else max(0.0, t))
    out = Path(out)
    tmp = out.with_name(f".{out.name}.{uuid.uuid4().hex[:8]}.part")
    try:
        Image.fromarray(scene.canvas).save(tmp, format="PNG")
        os.replace(tmp, out)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return out
