"""The video's encoders: MP4 (raw RGB piped to ffmpeg through imageio-ffmpeg) and GIF (written frame by frame
with one fixed palette, each frame only the rectangle that changed). Both take (frame, dirty, centis) and end
with `finish()`, or `close()` on failure."""

from __future__ import annotations

import os
import struct
from pathlib import Path
from typing import Any

import numpy as np
from PIL import GifImagePlugin, Image

from app.errors import UserError
from app.export.video.palette import (
    BADGE,
    BORDER,
    CHANGED,
    FG,
    HEAT_FIXED,
    HEAT_SCHEMA2,
    LINE,
    MASK_FG,
    MUTED,
    NEW,
    PANEL,
    SWATCH_EDGE,
    TICK,
    WHITE,
)

X264 = ["-preset", "veryfast", "-crf", "20"]


class Mp4Writer:
    """Raw RGB frames piped to ffmpeg (bundled by imageio-ffmpeg, or the system's) and encoded as H.264."""

    def __init__(self, path: Path, size: tuple[int, int], fps: float) -> None:
        try:
            import imageio_ffmpeg
        except ImportError:
            raise UserError("MP4 export needs imageio-ffmpeg: pip install imageio-ffmpeg==0.8.1 "
                            "(it ships ffmpeg).") from None
        self.path = path
        self.gen = imageio_ffmpeg.write_frames(
            str(path), size, fps=fps, quality=None, macro_block_size=2, ffmpeg_log_level="error",
            output_params=["-f", "mp4", *X264, "-movflags", "+faststart"])
        self.gen.send(None)

    def add(self, frame: np.ndarray, dirty: Any, centis: int) -> None:
        try:
            self.gen.send(frame)
        except OSError:
            raise UserError("The video encoder (ffmpeg) stopped while writing; its message is above.") from None

    def close(self) -> None:
        self.gen.close()

    def finish(self) -> None:
        self.close()
        if not self.path.exists() or self.path.stat().st_size == 0:
            raise UserError("The video encoder (ffmpeg) wrote nothing; its message is above.")


class Quantizer:
    """Exact nearest palette entry per colour, remembered in a 24-bit table as colours first appear
    (a frame of text has a few hundred colours), so the page's own colours come out unchanged."""

    def __init__(self, table: bytes) -> None:
        self.palette = np.frombuffer(table, np.uint8).reshape(256, 3).astype(np.float32)
        self.lut = np.full(1 << 24, 0xFFFF, np.uint16)

    def __call__(self, rgb: np.ndarray) -> np.ndarray:
        codes = (rgb[..., 0].astype(np.uint32) << 16) | (rgb[..., 1].astype(np.uint32) << 8) | rgb[..., 2]
        index = self.lut[codes]
        missing = index == 0xFFFF
        if missing.any():
            new = np.unique(codes[missing])
            colours = np.stack([new >> 16, (new >> 8) & 255, new & 255], axis=1).astype(np.float32)
            for start in range(0, len(new), 4096):
                part = colours[start:start + 4096]
                self.lut[new[start:start + 4096]] = ((part[:, None, :] - self.palette[None]) ** 2).sum(2).argmin(1)
            index = self.lut[codes]
        return index.astype(np.uint8)


class GifWriter:
    """An animated GIF written frame by frame: one fixed palette, each frame only the rectangle that changed,
    identical frames merged into one longer delay; memory stays one frame however long the race."""

    def __init__(self, path: Path, size: tuple[int, int], sample: Image.Image, loop: bool = True) -> None:
        drawn = HEAT_SCHEMA2 if sample.info.get("schema2") else []  # Scene.palette_sample: a race with states
        keys = list(dict.fromkeys([WHITE, FG, MUTED, PANEL, BORDER, MASK_FG, SWATCH_EDGE, NEW, CHANGED, TICK,
                                   LINE["left"], LINE["right"], *HEAT_FIXED,
                                   *(c for pair in BADGE.values() for c in pair), *drawn]))
        adaptive = sample.quantize(256 - len(keys), method=Image.Quantize.MEDIANCUT).getpalette() or []
        table = (bytes(v for c in keys for v in c) + bytes(adaptive[:3 * (256 - len(keys))])).ljust(768, b"\0")
        self.quantize = Quantizer(table)
        self.file = open(path, "wb")
        # the NETSCAPE block loops it forever; without one a GIF plays once and stays on its last frame
        self.file.write(b"GIF89a" + struct.pack("<HHBBB", size[0], size[1], 0xF7, 0, 0) + table
                        + (b"!\xff\x0bNETSCAPE2.0\x03\x01\x00\x00\x00" if loop else b""))
        self.prev: np.ndarray | None = None
        self.pending: tuple[Image.Image, tuple[int, int]] | None = None
        self.centis = 0

    def add(self, frame: np.ndarray, dirty: list[tuple[int, int, int, int]], centis: int) -> None:
        if self.prev is None:
            box: list[int] | None = [0, 0, frame.shape[1], frame.shape[0]]
            self.prev = frame.copy()
        else:
            box = None
            for x0, y0, x1, y1 in dirty:
                diff = (frame[y0:y1, x0:x1] != self.prev[y0:y1, x0:x1]).any(axis=2)
                ys, xs = np.flatnonzero(diff.any(axis=1)), np.flatnonzero(diff.any(axis=0))
                if len(ys):
                    found = [x0 + xs[0], y0 + ys[0], x0 + xs[-1] + 1, y0 + ys[-1] + 1]
                    box = found if box is None else [*map(min, box[:2], found[:2]), *map(max, box[2:], found[2:])]
                    self.prev[y0:y1, x0:x1] = frame[y0:y1, x0:x1]
        if box is None:
            self.centis += centis
            return
        self._flush()
        x0, y0, x1, y1 = box
        index = self.quantize(frame[y0:y1, x0:x1])
        crop = Image.frombytes("P", (int(x1 - x0), int(y1 - y0)), index.tobytes())
        self.pending, self.centis = (crop, (int(x0), int(y0))), centis

    def _flush(self) -> None:
        if self.pending is not None:
            image, offset = self.pending
            for chunk in GifImagePlugin.getdata(image, offset, duration=self.centis * 10, disposal=1):
                self.file.write(chunk)
            self.pending = None

    def close(self) -> None:
        self.file.close()

    def finish(self) -> None:
        self._flush()
        self.file.write(b";")
        self.file.flush()
        os.fsync(self.file.fileno())
        self.close()
