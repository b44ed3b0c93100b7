"""Video export (GIF, MP4) of a recorded race, drawn the way the page draws it.

Timing: video frame k shows race time T = k / fps * speed and, for each side, the latest trace frame
with t <= T (with `clock="passes"`, the forward-pass clock: frame k shows pass P = k / fps * speed * PASS_RATE
and each side's latest frame with nfe <= P, its timer counting passes; a side that reports no passes keeps
its seconds); the last video frame shows the final state, then `hold` seconds of it (default 0). So the
video lasts ceil((end / speed + hold) * fps) frames, `end` being the last frame time of the slower side.
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
"""

from __future__ import annotations

import bisect
import logging
import math
import os
import struct
import time
import unicodedata
import uuid
from functools import lru_cache
from itertools import accumulate
from pathlib import Path
from typing import Any, Callable

import numpy as np
from PIL import GifImagePlugin, Image, ImageDraw, ImageFont

from app.errors import SourceError
from app.export import read_for_export
from app.trace import SIDES, Recording
from app.view.side import CELLS, cell_styles, recorded_side, status_sentence
from app.view.theme import MASK, STATUS_TEXT, TERMINAL, THEME, hex_rgb, rgb

log = logging.getLogger("converge.export")

FONTS = Path(__file__).resolve().parents[2] / "assets" / "fonts"
MONO, SANS = FONTS / "DejaVuSansMono.ttf", FONTS / "DejaVuSans.ttf"
FORMATS = ("mp4", "gif")
MISSING, ELLIPSIS = "\ufffd", "\u2026"
GIF_MAX_FPS = 50  # GIF delays are whole hundredths; players slow down frames shorter than 20 ms
MAX_FRAMES = 200_000
MAX_VIDEO_SECONDS = 300  # about 2 minutes of work at 1280x720 on a 2-core machine (README); HTML plays any length
MIN_SIZE, MAX_SIZE = (480, 270), (3840, 2160)
X264 = ["-preset", "veryfast", "-crf", "20"]
CLOCKS = ("time", "passes")
PASS_RATE = THEME["pass_rate"]  # forward passes per second of video at speed 1, as the player plays them

# The page's colours, light theme (app/view/theme.json).
FG, MUTED, WHITE, PANEL, BORDER = rgb("fg"), rgb("muted"), rgb("bg"), rgb("panel"), rgb("border")
MASK_FG, SWATCH_EDGE, NEW, CHANGED = rgb("mask"), rgb("swatch-edge"), rgb("new"), rgb("changed")
LINE = {"left": rgb("left"), "right": rgb("right")}
# Heatmap cells in priority order (a cell covering several positions or frames shows the highest): the order
# of theme.json's heat, empty, unchanged, masked, given, new, changed, remasked, which HeatStrip's codes follow.
HEAT_NAMES = list(THEME["heat"])
HEAT = np.array([hex_rgb(THEME["heat"][name]) for name in HEAT_NAMES], np.uint8)
H_UNCHANGED, H_MASKED, H_GIVEN = (HEAT_NAMES.index(name) for name in ("unchanged", "masked", "given"))
CODE_HEAT = np.array([HEAT_NAMES.index(name) for name in ("unchanged", "fresh", "changed", "remasked")], np.uint8)
BADGE = {status: (rgb(bg), rgb(edge)) for status, (bg, edge) in THEME["badges"].items()}

# Cell styles: the page's token styles (app/view/side.py CELLS, coloured as theme.json says), then mono UI text on white.
NORMAL, MASKED, DRAFT, FRESH, CHANGE, REMASK = (CELLS.index(name) for name in
                                                 ("unchanged", "masked", "draft", "new", "changed", "remasked"))
UI, UI_MUTED = len(CELLS), len(CELLS) + 1
_CELLS = [THEME["styles"][name] for name in CELLS]
STYLE_FG = np.array([rgb(st["ink"]) for st in _CELLS] + [FG, MUTED], np.uint16)
STYLE_BG = np.array([rgb(st["paper"]) for st in _CELLS] + [WHITE, WHITE], np.uint16)
STYLE_AREA = np.array([PANEL] * len(CELLS) + [WHITE] * 2, np.uint16)  # outside the glyph band: the surface under the text
FRESH_MARK, DRAFT_MARK, REMASK_MARK = (rgb(THEME["styles"][name]["mark"]) for name in ("new", "draft", "remasked"))
TICK = rgb("remasked")  # the heatmap's frame marks, in the darkest ink
LEGEND = [(CELLS.index(name), MASK if THEME["styles"][name].get("glyph") == "mask" else THEME["sample"],
           THEME["styles"][name]["label"]) for name in THEME["legend"] if name in CELLS]
HEAT_KEY = [(HEAT_NAMES.index(name), label) for name, label in THEME["heat_key"]]
PINS_ONLY = frozenset(THEME["pins_only"])  # legend styles and heat cells drawn only when a side has pinned text
NEWLINE, TAB = -1, -2


@lru_cache(maxsize=None)
def coverage(path: Path) -> frozenset[int]:
    """Code points a font has glyphs for, read from its format-12 cmap subtable."""
    data = path.read_bytes()
    tables = {data[12 + 16 * i:16 + 16 * i]: struct.unpack(">I", data[20 + 16 * i:24 + 16 * i])[0]
              for i in range(struct.unpack(">H", data[4:6])[0])}
    base = tables[b"cmap"]
    points: set[int] = set()
    for i in range(struct.unpack(">H", data[base + 2:base + 4])[0]):
        sub = base + struct.unpack(">I", data[base + 8 + 8 * i:base + 12 + 8 * i])[0]
        if struct.unpack(">H", data[sub:sub + 2])[0] == 12:
            for g in range(struct.unpack(">I", data[sub + 12:sub + 16])[0]):
                first, last, _ = struct.unpack(">III", data[sub + 16 + 12 * g:sub + 28 + 12 * g])
                points.update(range(first, last + 1))
            break
    return frozenset(points)


@lru_cache(maxsize=None)
def font(path: Path, px: int) -> ImageFont.FreeTypeFont:
    """A shipped font; basic layout, so text is drawn glyph by glyph left to right and nothing reorders it."""
    return ImageFont.truetype(str(path), px, layout_engine=ImageFont.Layout.BASIC)


def clean(text: str) -> list[str]:
    """The characters to draw for model text: NFC; newlines and tabs kept; other controls, surrogates and
    unassigned code points as U+FFFD; invisible format characters (zero-width, bidi overrides) dropped."""
    out: list[str] = []
    for c in unicodedata.normalize("NFC", text):
        if c in "\n\t":
            out.append(c)
        elif c == "\r":
            out.append(" ")
        else:
            cat = unicodedata.category(c)
            if cat in ("Zl", "Zp"):
                out.append("\n")
            elif cat != "Cf":
                out.append(MISSING if cat[0] == "C" else c)
    return out


def bold(d: ImageDraw.ImageDraw, xy: tuple[float, float], text: str, face: ImageFont.FreeTypeFont,
         fill: tuple[int, int, int], anchor: str = "la") -> None:
    """Text drawn twice a pixel apart: the page's bold labels, with one shipped weight."""
    d.text(xy, text, font=face, fill=fill, anchor=anchor)
    d.text((xy[0] + 1, xy[1]), text, font=face, fill=fill, anchor=anchor)


def one_line(text: str, face: ImageFont.FreeTypeFont, width: float, has: frozenset[int]) -> str:
    """A prompt, a source name or a message as one line that fits `width`, clipped with an ellipsis."""
    chars = [" " if c in "\n\t" else c if ord(c) in has else MISSING for c in clean(text[:4096])]
    line = "".join(chars)
    if face.getlength(line) <= width:
        return line
    line = line[:max(1, int(width))]
    lo, hi = 0, len(line)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if face.getlength(line[:mid] + ELLIPSIS) <= width:
            lo = mid
        else:
            hi = mid - 1
    return line[:lo] + ELLIPSIS


class Glyphs:
    """Monospace cells for model text; each character is rasterised once into an atlas.

    Characters the mono font lacks come from DejaVu Sans (squeezed into the cell when wider); ones
    neither font has are drawn as U+FFFD. `token()` caches each token's glyph ids, clipped to `limit`.
    """

    def __init__(self, px: int, line_h: int, scale: float, limit: int = 4096) -> None:
        self.mono, self.sans = font(MONO, px), font(SANS, px)
        self.has_mono, self.has_sans = coverage(MONO), coverage(SANS)
        self.cw = max(1, round(self.mono.getlength("M")))
        asc, desc = self.mono.getmetrics()
        self.ch = max(line_h, asc + desc)
        self.top, self.bottom = (self.ch - asc - desc) // 2, (self.ch - asc - desc) // 2 + asc + desc
        self.band = np.zeros(self.ch, bool)
        self.band[self.top:self.bottom] = True
        self.under = min(self.bottom - 1, self.top + asc + 1)
        self.stroke = max(1, round(2 * scale))
        self.limit = limit
        self.atlas = np.zeros((128, self.ch, self.cw), np.uint8)
        self.ids = {" ": 0}
        self.cell_of = np.full((len(STYLE_FG), len(self.atlas)), -1, np.int32)  # (style, glyph) -> cached cell
        self.cells = np.zeros((0, self.ch, self.cw, 3), np.uint8)
        self.cache: dict[str, tuple[int, ...]] = {}

    def gid(self, c: str) -> int:
        g = self.ids.get(c)
        if g is None:
            g = len(self.ids)
            if g == len(self.atlas):
                self.atlas = np.concatenate([self.atlas, np.zeros_like(self.atlas)])
                self.cell_of = np.concatenate([self.cell_of, np.full_like(self.cell_of, -1)], axis=1)
            self.atlas[g] = self._draw(c)
            self.ids[c] = g
        return g

    def _draw(self, c: str) -> np.ndarray:
        face = self.mono if ord(c) in self.has_mono else self.sans if ord(c) in self.has_sans else None
        if face is None:
            c, face = MISSING, self.mono
        width = max(self.cw, math.ceil(face.getlength(c)))
        img = Image.new("L", (width, self.ch), 0)
        ImageDraw.Draw(img).text((0, self.top), c, font=face, fill=255)
        if width > self.cw:
            img = img.resize((self.cw, self.ch), Image.Resampling.BOX)
        return np.asarray(img)

    def token(self, text: str) -> tuple[int, ...]:
        ids = self.cache.get(text)
        if ids is None:
            chars = clean(text[:2 * self.limit + 8])
            if len(chars) > self.limit or len(text) > 2 * self.limit + 8:
                chars = chars[:self.limit - 1] + [ELLIPSIS]
            ids = tuple(NEWLINE if c == "\n" else TAB if c == "\t" else self.gid(c) for c in chars)
            if len(self.cache) > 50_000:
                self.cache.clear()
            self.cache[text] = ids
        return ids

    def render(self, gid: np.ndarray, sty: np.ndarray) -> np.ndarray:
        """RGB pixels for a grid of cells (rows x cols of glyph ids and styles): each (style, glyph) cell
        is blended once and cached, so a grid is one gather."""
        rows, cols = gid.shape
        keys = self.cell_of[sty, gid]
        missing = keys < 0
        if missing.any():
            pairs = np.unique(np.stack([sty[missing], gid[missing]], axis=1), axis=0)
            self.cell_of[pairs[:, 0], pairs[:, 1]] = np.arange(len(self.cells), len(self.cells) + len(pairs))
            self.cells = np.concatenate([self.cells, self._blend(pairs[None, :, 1], pairs[None, :, 0])[0]])
            keys = self.cell_of[sty, gid]
        return self.cells[keys].transpose(0, 2, 1, 3, 4).reshape(rows * self.ch, cols * self.cw, 3)

    def _blend(self, gid: np.ndarray, sty: np.ndarray) -> np.ndarray:
        """Cells (rows x cols x cell height x cell width x RGB): glyph over background, then the style's decoration."""
        alpha = self.atlas[gid].astype(np.uint16)[..., None]
        bg = np.where(self.band[None, None, :, None], STYLE_BG[sty][:, :, None, :], STYLE_AREA[sty][:, :, None, :])
        out = ((bg[:, :, :, None, :] * (255 - alpha) + STYLE_FG[sty][:, :, None, None, :] * alpha + 127) // 255
               ).astype(np.uint8)
        fresh, draft, remask = sty == FRESH, sty == DRAFT, sty == REMASK
        if fresh.any():
            out[fresh, self.under] = FRESH_MARK
        if draft.any():
            out[draft, self.under, ::2] = DRAFT_MARK
        if remask.any():
            t, b, w = self.top, self.bottom, self.stroke
            out[remask, t:t + w] = REMASK_MARK
            out[remask, b - w:b] = REMASK_MARK
            out[remask, t:b, :w] = REMASK_MARK
            out[remask, t:b, -w:] = REMASK_MARK
        return out

    def line(self, parts: list[tuple[str, int]], cells: int) -> np.ndarray:
        """One right-aligned line of mono UI text, `cells` wide, from (text, style) parts (ASCII-safe strings)."""
        ids = [(self.gid(c), style) for text, style in parts for c in text][-cells:]
        gid = np.zeros((1, cells), np.int32)
        sty = np.full((1, cells), UI, np.int8)
        if ids:
            gid[0, cells - len(ids):] = [i for i, _ in ids]
            sty[0, cells - len(ids):] = [s for _, s in ids]
        return self.render(gid, sty)


class HeatStrip:
    """One side's heatmap (rows = frames, columns = positions) at display size, one row added per frame."""

    def __init__(self, positions: int, frames: int, width: int, height: int, pinned: frozenset[int]) -> None:
        self.n, self.h = max(1, frames), height
        self.pinned = np.array(sorted(p for p in pinned if p < max(1, positions)), np.int64)  # given from frame 0
        self.starts = (np.arange(width) * max(1, positions)) // width
        self.positions = max(1, positions)
        self.cells = np.zeros((height, width), np.uint8)
        self.pixels = np.full((height, width, 3), WHITE, np.uint8)
        self.count = 0
        self.fresh: tuple[int, int] | None = (0, height)

    def span(self, k: int) -> tuple[int, int]:
        r0 = k * self.h // self.n
        return r0, max(r0 + 1, (k + 1) * self.h // self.n)

    def add(self, row: dict[str, Any]) -> None:
        codes = np.zeros(self.positions, np.uint8)
        ch = np.asarray(row["ch"], np.uint8)
        if len(ch):
            masked = np.asarray(row["m"], bool) if row["m"] is not None else np.zeros(len(ch), bool)
            codes[:len(ch)] = np.where(ch == 0, np.where(masked, H_MASKED, H_UNCHANGED), CODE_HEAT[ch])
            given = self.pinned[self.pinned < len(ch)]
            codes[given] = H_GIVEN
        r0, r1 = self.span(self.count)
        self.cells[r0:r1] = np.maximum(self.cells[r0:r1], np.maximum.reduceat(codes, self.starts)[None, :])
        self.pixels[r0:r1] = HEAT[self.cells[r0:r1]]
        self.fresh = (min(r0, self.fresh[0]), max(r1, self.fresh[1])) if self.fresh else (r0, r1)
        self.count += 1

    def take(self) -> tuple[int, np.ndarray] | None:
        """The display rows redrawn since the last call, as (first row, pixels)."""
        if self.fresh is None:
            return None
        r0, r1 = self.fresh
        self.fresh = None
        return r0, self.pixels[r0:r1]


class Track:
    """One side: its frames, their analysed rows, and what is on screen now."""

    def __init__(self, key: str, rec: Recording, clock: str = "time") -> None:
        self.key = key
        side = recorded_side(rec, key)
        self.name = str(side.source.get("name") or key.capitalize())
        self.frames, self.rows, self.pinned = side.frames, side.rows, side.pinned
        # on the forward-pass clock a side that reports passes is placed by them; any other keeps its seconds
        self.on_passes = clock == "passes" and bool(self.frames) and self.frames[-1].nfe is not None
        self.keys = [float(f.nfe or 0) if self.on_passes else f.t for f in self.frames]
        self.reach = list(accumulate(self.keys, max))
        self.ended, self.end_status, self.message = side.ended, side.status, side.message or ""
        self.width = max((len(r["tok"]) for r in self.rows), default=0)
        self.in_place = side.in_place()
        self.shown: int | None = None
        self.top = 0
        self.grid: tuple[np.ndarray, np.ndarray] | None = None
        self.heat: HeatStrip | None = None
        self.drawn: dict[str, Any] = {}

    def index_at(self, t: float) -> int:
        return bisect.bisect_right(self.reach, t) - 1

    def timer(self, idx: int, cells: int) -> str:
        """The timer of frame idx: passes and tokens per pass on the forward-pass clock, else seconds and tokens/s."""
        if self.on_passes:
            return pass_timer_text(int(self.keys[idx]), self.in_place[idx], cells)
        return timer_text(self.frames[idx].t, self.in_place[idx], cells)

    def status(self, idx: int) -> str:
        if not self.frames:
            return self.end_status if self.ended else "idle"
        return "waiting" if idx < 0 else "running" if idx < len(self.frames) - 1 else self.end_status


def load(path: str | Path) -> Recording:
    """Reads a recording for export; a file that is not one raises SourceError naming the problem."""
    rec = read_for_export(path)
    if not any(rec.frames.values()):
        raise SourceError(f"{Path(path).name} has no frames to export: record a race first.")
    for warning in rec.warnings:
        log.warning(warning)
    return rec


class Scene:
    """The whole picture at one size: a static background drawn once, and each side redrawn when its frame changes."""

    def __init__(self, rec: Recording, size: tuple[int, int], speed: float = 1.0, clock: str = "time") -> None:
        self.W, self.H = size
        self.speed = speed
        self.clock = clock
        self.rate = PASS_RATE if clock == "passes" else 1  # timeline units per second of video at speed 1
        s = self.s = min(self.W / 1280, self.H / 720)
        self.px = lambda v: max(1, round(v * s))  # noqa: E731
        self.sans = {k: font(SANS, max(6, round(k * s))) for k in (12, 13, 15)}
        self.has_sans = coverage(SANS)
        self.rec = rec
        self.tracks = [Track(key, rec, clock) for key in SIDES]
        self.end = max((tr.reach[-1] for tr in self.tracks if tr.reach), default=0.0)
        self.warning = " ".join(rec.warnings)
        self.glyphs = Glyphs(max(6, round(14 * s)), max(8, round(21 * s)), s)
        self._geometry()
        self.glyphs.limit = max(8, self.rows_n * self.cols)  # a token longer than the text area is clipped
        self.mask_ids = (self.glyphs.gid(MASK),)
        self.canvas = self._background()
        self.dirty: list[tuple[int, int, int, int]] = [(0, 0, self.W, self.H)]
        for tr in self.tracks:
            tr.heat = HeatStrip(tr.width, len(tr.frames), self.heat_w, self.heat_h, tr.pinned)
        self.status_text: str | None = None
        most = (self.inner_w * 5 // 8) // self.glyphs.cw  # room for the timer; the name gets the rest
        self.head_cells = {tr.key: max([1] + [len(tr.timer(i, most)) for i in range(len(tr.frames))])
                           for tr in self.tracks}

    # -- layout and the static background

    def _geometry(self) -> None:
        px, g = self.px, self.glyphs
        self.pad = px(14)
        self.prompt_y, self.row_h = self.pad, px(22)
        self.status_y = self.prompt_y + self.row_h
        clock = self._clock_text(self.end) + (f" \u00b7 {self.speed:g}\u00d7 speed" if self.speed != 1 else "")
        self.clock_cells = len(clock) + 1
        self.clock_w = self.clock_cells * g.cw
        self.legend_y = self.status_y + px(20) + px(6)
        self.legend_items = self._legend_items()
        self.legend_h = self._flow(draw=None)
        top = self.legend_y + self.legend_h + px(10)
        gap = px(12)
        col_w = (self.W - 2 * self.pad - gap) // 2
        height = self.H - self.pad - top
        self.panels = [(self.pad + i * (col_w + gap), top, col_w, height) for i in range(2)]
        h = height
        self.inner_x, self.inner_w = px(10), col_w - 2 * px(10)
        self.head_y, self.head_h = px(8), px(26)
        self.msg_y, self.msg_h = self.head_y + self.head_h + px(2), px(22)
        self.heat_h = max(px(24), round(h * 0.2))
        self.heat_y = h - px(8) - self.heat_h
        self.heat_x, self.heat_w = self.inner_x + px(7), self.inner_w - 2 * px(7)
        self.cap_h = max(px(18), g.ch)
        self.cap_y = self.heat_y - px(4) - self.cap_h
        self.text_y = self.msg_y + self.msg_h + px(4)
        self.text_h = self.cap_y - px(4) - self.text_y
        self.grid_x, self.grid_y = self.inner_x + px(6), self.text_y + px(4)
        self.cols = (self.inner_w - 2 * px(6)) // g.cw
        self.rows_n = (self.text_h - 2 * px(4)) // g.ch
        if self.rows_n < 1 or self.cols < 8:
            raise SourceError(f"{self.W}x{self.H} is too small to draw the race; use at least {MIN_SIZE[0]}x{MIN_SIZE[1]}.")

    def _legend_items(self) -> list[tuple[int, Callable[[Image.Image, int, int], None]]]:
        px, face, g = self.px, self.sans[13], self.glyphs
        items: list[tuple[int, Callable[[Image.Image, int, int], None]]] = []
        hide = set() if any(tr.pinned for tr in self.tracks) else PINS_ONLY
        legend = [item for item in LEGEND if CELLS[item[0]] not in hide]
        heat_keys = [item for item in HEAT_KEY if HEAT_NAMES[item[0]] not in hide]
        for style, sample, label in legend:
            ids = np.array([[g.gid(c) for c in sample]])
            cells = g.render(ids, np.full(ids.shape, style))
            width = cells.shape[1] + px(5) + math.ceil(face.getlength(label))

            def draw(img: Image.Image, x: int, y: int, cells: np.ndarray = cells, label: str = label) -> None:
                img.paste(Image.fromarray(cells), (x, y))
                ImageDraw.Draw(img).text((x + cells.shape[1] + px(5), y + g.ch // 2), label, font=face, fill=FG, anchor="lm")
            items.append((width, draw))
        sw = px(14)
        key_w = math.ceil(face.getlength("Heatmap:")) + px(6) + sum(sw + px(10) + math.ceil(face.getlength(t))
                                                                    for _, t in heat_keys)

        def heat_key(img: Image.Image, x: int, y: int) -> None:
            d = ImageDraw.Draw(img)
            mid = y + g.ch // 2
            bold(d, (x, mid), "Heatmap:", face, MUTED, "lm")
            x += math.ceil(face.getlength("Heatmap:")) + px(6)
            for code, label in heat_keys:
                d.rectangle([x, mid - sw // 2, x + sw - 1, mid - sw // 2 + sw - 1], fill=tuple(HEAT[code]), outline=SWATCH_EDGE)
                x += sw + px(4)
                d.text((x, mid), label, font=face, fill=FG, anchor="lm")
                x += math.ceil(face.getlength(label)) + px(6)
        items.append((key_w, heat_key))
        return items

    def _flow(self, draw: Image.Image | None) -> int:
        """Lays the legend items out in wrapping lines (as the page's flex-wrap); returns the box height."""
        px = self.px
        left, right = self.pad + px(8), self.W - self.pad - px(8)
        x, y = left, self.legend_y + px(6)
        for width, paint in self.legend_items:
            if x > left and x + width > right:
                x, y = left, y + self.glyphs.ch + px(4)
            if draw is not None:
                paint(draw, x, y)
            x += width + px(16)
        return y + self.glyphs.ch + px(6) - self.legend_y

    def _background(self) -> np.ndarray:
        px = self.px
        img = Image.new("RGB", (self.W, self.H), WHITE)
        d = ImageDraw.Draw(img)
        face = self.sans[15]
        label = "Prompt: "
        bold(d, (self.pad, self.prompt_y), label, face, MUTED)
        x = self.pad + math.ceil(face.getlength(label)) + 1
        room = self.W - self.pad - self.clock_w - px(12) - x
        prompt = one_line(str(self.rec.header.get("prompt", "")), face, room, self.has_sans)
        d.text((x, self.prompt_y), prompt, font=face, fill=MUTED)
        d.rounded_rectangle([self.pad, self.legend_y, self.W - self.pad - 1, self.legend_y + self.legend_h - 1],
                            radius=px(6), fill=PANEL, outline=BORDER)
        self._flow(img)
        for px0, py0, w, h in self.panels:
            d.rounded_rectangle([px0, py0, px0 + w - 1, py0 + h - 1], radius=px(8), fill=WHITE, outline=BORDER)
            d.rounded_rectangle([px0 + self.inner_x, py0 + self.text_y, px0 + self.inner_x + self.inner_w - 1,
                                 py0 + self.text_y + self.text_h - 1], radius=px(6), fill=PANEL)
            d.text((px0 + self.inner_x, py0 + self.cap_y + self.cap_h // 2), "Changes per frame (top: first frame)",
                   font=self.sans[12], fill=MUTED, anchor="lm")
            d.rectangle([px0 + self.heat_x - 1, py0 + self.heat_y - 1, px0 + self.heat_x + self.heat_w,
                         py0 + self.heat_y + self.heat_h], outline=BORDER)
        return np.array(img)

    # -- drawing

    def put(self, x: int, y: int, pixels: np.ndarray) -> None:
        h, w = pixels.shape[:2]
        self.canvas[y:y + h, x:x + w] = pixels
        self.dirty.append((x, y, x + w, y + h))

    def take_dirty(self) -> list[tuple[int, int, int, int]]:
        """The rectangles drawn since the last call."""
        dirty, self.dirty = self.dirty, []
        return dirty

    def draw(self, t: float) -> None:
        """Brings the picture to race time t."""
        for i, tr in enumerate(self.tracks):
            idx = tr.index_at(t)
            if idx != tr.shown:
                self._side(i, tr, idx)
        self._clock(t)
        status = status_sentence([tr.status(tr.shown if tr.shown is not None else -1) for tr in self.tracks],
                                 [tr.name for tr in self.tracks])
        if self.warning:
            status += " " + self.warning
        if status != self.status_text:
            self.status_text = status
            self.put(self.pad, self.status_y, self._text_box(status, self.W - 2 * self.pad, self.px(20), self.sans[13], FG,
                                                             heavy=True))

    def _text_box(self, text: str, w: int, h: int, face: ImageFont.FreeTypeFont, fill: tuple[int, int, int],
                  right: bool = False, heavy: bool = False) -> np.ndarray:
        img = Image.new("RGB", (w, h), WHITE)
        line = one_line(text, face, w - 2, self.has_sans)
        d = ImageDraw.Draw(img)
        xy, anchor = ((w - 1 if right else 0), h // 2), "rm" if right else "lm"
        if heavy:
            bold(d, xy, line, face, fill, anchor)
        else:
            d.text(xy, line, font=face, fill=fill, anchor=anchor)
        return np.asarray(img)

    def _clock_text(self, t: float) -> str:
        """The top-right clock: race seconds, or on the forward-pass clock the pass count (no seconds)."""
        return f"forward pass {int(t)}" if self.clock == "passes" else f"t = {t:.3f} s"

    def _clock(self, t: float) -> None:
        speed = f" \u00b7 {self.speed:g}\u00d7 speed" if self.speed != 1 else ""
        pixels = self.glyphs.line([(self._clock_text(t), UI), (speed, UI_MUTED)], self.clock_cells)
        self.put(self.W - self.pad - pixels.shape[1], self.prompt_y, pixels)

    def _side(self, i: int, tr: Track, idx: int) -> None:
        x0, y0 = self.panels[i][:2]
        status = tr.status(idx)
        self._header(x0, y0, tr, idx, status)
        message = tr.message if status in TERMINAL else ""
        row = tr.rows[idx] if idx >= 0 else None
        note = (row.get("note") or "") if row is not None and not message else ""  # the frame's note, as the page's
        if tr.drawn.get("message") != (message, status, note):
            tr.drawn["message"] = (message, status, note)
            self.put(x0 + self.inner_x, y0 + self.msg_y, self._note(note) if note else self._message(message, status))
        settled_all = idx == len(tr.rows) - 1 and tr.end_status == "done" and tr.ended
        top, lines = self._text(x0, y0, tr, row, settled_all)
        caption = f"frame {idx + 1} / {len(tr.frames)}" if idx >= 0 else ""
        if lines > self.rows_n:
            caption += f" \u00b7 lines {top + 1}\u2013{top + self.rows_n} of {lines}"
        cells = self.inner_w // 2 // self.glyphs.cw
        self.put(x0 + self.inner_x + self.inner_w - cells * self.glyphs.cw, y0 + self.cap_y + (self.cap_h - self.glyphs.ch) // 2,
                 self.glyphs.line([(caption[-cells:], UI_MUTED)], cells))
        self._heat(x0, y0, tr, idx)
        tr.shown = idx

    def _header(self, x0: int, y0: int, tr: Track, idx: int, status: str) -> None:
        """Counter and timer (mono, from the atlas) every time; key, name and badge only when the status changes."""
        g = self.glyphs
        cells = self.head_cells[tr.key]
        timer = tr.timer(idx, cells) if idx >= 0 else "\u2014"
        right = g.line([(timer, UI)], cells)
        self.put(x0 + self.inner_x + self.inner_w - right.shape[1], y0 + self.head_y + (self.head_h - g.ch) // 2, right)
        if tr.drawn.get("status") != status:
            tr.drawn["status"] = status
            self.put(x0 + self.inner_x, y0 + self.head_y, self._head_left(tr, status, self.inner_w - right.shape[1]))

    def _head_left(self, tr: Track, status: str, w: int) -> np.ndarray:
        px, h = self.px, self.head_h
        img = Image.new("RGB", (w, h), WHITE)
        d = ImageDraw.Draw(img)
        mid = h // 2
        key_w, thick = px(22), px(3)
        if tr.key == "left":
            d.line([(0, mid), (key_w, mid)], fill=LINE["left"], width=thick)
        else:
            for a in range(0, key_w, px(11)):
                d.line([(a, mid), (min(key_w, a + px(7)), mid)], fill=LINE["right"], width=thick)
        small, big = self.sans[12], self.sans[15]
        badge = STATUS_TEXT.get(status, status)
        badge_w = math.ceil(small.getlength(badge)) + px(14)
        name_x = key_w + px(8)
        name = one_line(tr.name, big, max(10, w - badge_w - px(20) - name_x), self.has_sans)
        bold(d, (name_x, mid), name, big, FG, "lm")
        bx = name_x + math.ceil(big.getlength(name)) + 1 + px(8)
        fill, edge = BADGE.get(status, BADGE["idle"])
        bh = px(18)
        d.rounded_rectangle([bx, mid - bh // 2, bx + badge_w, mid - bh // 2 + bh], radius=bh // 2, fill=fill, outline=edge)
        d.text((bx + badge_w // 2, mid), badge, font=small, fill=FG, anchor="mm")
        return np.asarray(img)

    def _note(self, note: str) -> np.ndarray:
        """A frame's note (the forward process's t) in the message strip, bold on white."""
        img = Image.new("RGB", (self.inner_w, self.msg_h), WHITE)
        face = self.sans[13]
        bold(ImageDraw.Draw(img), (0, self.msg_h // 2), one_line(note, face, self.inner_w, self.has_sans), face, FG, "lm")
        return np.asarray(img)

    def _message(self, message: str, status: str) -> np.ndarray:
        w, h = self.inner_w, self.msg_h
        if not message:
            return np.full((h, w, 3), WHITE, np.uint8)
        fill, edge = BADGE["stopped" if status == "stopped" else "error"]
        img = Image.new("RGB", (w, h), fill)
        d = ImageDraw.Draw(img)
        d.rectangle([0, 0, self.px(4) - 1, h - 1], fill=edge)
        d.text((self.px(10), h // 2), one_line(message, self.sans[12], w - self.px(14), self.has_sans),
               font=self.sans[12], fill=FG, anchor="lm")
        return np.asarray(img)

    def _layout(self, row: dict[str, Any] | None, settled_all: bool, pinned: frozenset[int]
                ) -> tuple[list[int], list[int], list[int], list[int], int, int]:
        """Every drawn cell's line, column, glyph and style, wrapped as the page's pre-wrap text is (a token
        moves to the next line when it does not fit, one longer than a line breaks anywhere), then the
        number of lines and the last line holding a change (-1: none)."""
        cols, g = self.cols, self.glyphs
        lin: list[int] = []
        col: list[int] = []
        gid: list[int] = []
        sty: list[int] = []
        line = c = 0
        focus = -1
        if row is None:
            return lin, col, gid, sty, 1, -1
        masks, codes = row["m"], row["ch"]
        for i, (tok, style) in enumerate(zip(row["tok"], cell_styles(row, settled_all, pinned))):
            code = codes[i]
            ids = self.mask_ids if masks and masks[i] else g.token(tok)
            n = len(ids)
            simple = NEWLINE not in ids and TAB not in ids
            if simple and 0 < c and c + n > cols and n <= cols and any(ids):
                line, c = line + 1, 0
            if simple and c + n <= cols:
                lin.extend([line] * n)
                col.extend(range(c, c + n))
                gid.extend(ids)
                sty.extend([style] * n)
                c += n
            else:
                for k in ids:
                    if k == NEWLINE:
                        line, c = line + 1, 0
                        continue
                    if c >= cols:
                        if k == 0:
                            continue
                        line, c = line + 1, 0
                    if k == TAB:
                        c = min(cols, c + 8 - c % 8)
                        continue
                    lin.append(line)
                    col.append(c)
                    gid.append(k)
                    sty.append(style)
                    c += 1
            if code:
                focus = line
        return lin, col, gid, sty, line + 1, focus

    def _text(self, x0: int, y0: int, tr: Track, row: dict[str, Any] | None, settled_all: bool) -> tuple[int, int]:
        """Redraws the text rows whose cells changed; scrolls (like a terminal) only to keep the latest change in view."""
        rows, cols, g = self.rows_n, self.cols, self.glyphs
        lin, col, gid, sty, total, focus = self._layout(row, settled_all, tr.pinned)
        top = tr.top
        if focus >= 0:
            top = focus if focus < top else focus - rows + 1 if focus >= top + rows else top
        top = tr.top = max(0, min(top, total - rows))
        grid_g = np.zeros((rows, cols), np.int32)
        grid_s = np.zeros((rows, cols), np.int8)
        if lin:
            lines = np.asarray(lin) - top
            keep = (lines >= 0) & (lines < rows)
            cs = np.asarray(col)[keep]
            grid_g[lines[keep], cs] = np.asarray(gid)[keep]
            grid_s[lines[keep], cs] = np.asarray(sty)[keep]
        if tr.grid is None:
            changed = np.arange(rows)
        else:
            changed = np.flatnonzero(((grid_g != tr.grid[0]) | (grid_s != tr.grid[1])).any(axis=1))
        tr.grid = (grid_g, grid_s)
        if len(changed):
            pixels = g.render(grid_g[changed], grid_s[changed])
            for j, r in enumerate(changed):
                self.put(x0 + self.grid_x, y0 + self.grid_y + r * g.ch, pixels[j * g.ch:(j + 1) * g.ch])
        return top, total

    def _heat(self, x0: int, y0: int, tr: Track, idx: int) -> None:
        heat = tr.heat
        assert heat is not None
        while heat.count <= idx:
            heat.add(tr.rows[heat.count])
        fresh = heat.take()
        if fresh is not None:
            self.put(x0 + self.heat_x, y0 + self.heat_y + fresh[0], fresh[1])
        margin = self.heat_x - self.inner_x - 1
        ticks = np.full((self.heat_h, margin, 3), WHITE, np.uint8)
        if idx >= 0:
            r0, r1 = heat.span(idx)
            mid = (r0 + r1 - 1) // 2
            ticks[max(0, mid - self.px(1)):mid + self.px(1)] = TICK
        self.put(x0 + self.inner_x, y0 + self.heat_y, ticks)
        self.put(x0 + self.heat_x + self.heat_w + 1, y0 + self.heat_y, ticks)

    def palette_sample(self) -> Image.Image:
        """The background, every badge and every heat colour: what a GIF palette must cover."""
        parts = [self.canvas.copy()]
        for status in BADGE:
            fill, edge = BADGE[status]
            parts.append(np.broadcast_to(np.array(fill, np.uint8), (8, self.W, 3)))
            parts.append(np.broadcast_to(np.array(edge, np.uint8), (8, self.W, 3)))
        return Image.fromarray(np.concatenate(parts))


def timer_text(t: float, tokens: int, cells: int) -> str:
    """A side's timer: seconds, final tokens in place and their rate, shortened to fit `cells` characters."""
    rate = f"{tokens / t:.1f} tok/s" if t > 0 else "\u2014 tok/s"
    fits = [x for x in (f"{t:.2f} s \u00b7 {tokens} tok final \u00b7 {rate}", f"{t:.2f} s \u00b7 {rate}", f"{t:.2f} s")
            if len(x) <= cells]
    return fits[0] if fits else ""


def pass_timer_text(passes: int, tokens: int, cells: int) -> str:
    """A side's timer on the forward-pass clock: passes, final tokens in place and tokens per pass, to fit `cells`."""
    rate = f"{tokens / passes:.2f} tok/pass" if passes > 0 else "\u2014 tok/pass"
    unit = "pass" if passes == 1 else "passes"
    fits = [x for x in (f"{passes} {unit} \u00b7 {tokens} tok final \u00b7 {rate}", f"{passes} {unit} \u00b7 {rate}",
                        f"{passes} {unit}") if len(x) <= cells]
    return fits[0] if fits else ""


def frame_count(end: float, fps: float, speed: float, hold: float = 0.0) -> int:
    """Video frames for a race that ends at `end` seconds: ceil((end / speed + hold) * fps), at least one."""
    return max(1, math.ceil(round((end / speed + hold) * fps, 6)))


def race_time(k: int, n: int, end: float, fps: float, speed: float) -> float:
    """Race time shown by video frame k of n: k / fps * speed, the last frame (and any hold) the end."""
    return end if k >= n - 1 else min(end, k / fps * speed)


class Mp4Writer:
    """Raw RGB frames piped to ffmpeg (bundled by imageio-ffmpeg, or the system's) and encoded as H.264."""

    def __init__(self, path: Path, size: tuple[int, int], fps: float) -> None:
        try:
            import imageio_ffmpeg
        except ImportError:
            raise SourceError("MP4 export needs imageio-ffmpeg: pip install imageio-ffmpeg==0.8.1 (it ships ffmpeg).") from None
        self.path = path
        self.gen = imageio_ffmpeg.write_frames(
            str(path), size, fps=fps, quality=None, macro_block_size=2, ffmpeg_log_level="error",
            output_params=["-f", "mp4", *X264, "-movflags", "+faststart"])
        self.gen.send(None)

    def add(self, frame: np.ndarray, dirty: Any, centis: int) -> None:
        try:
            self.gen.send(frame)
        except OSError:
            raise SourceError("The video encoder (ffmpeg) stopped while writing; its message is above.") from None

    def close(self) -> None:
        self.gen.close()

    def finish(self) -> None:
        self.close()
        if not self.path.exists() or self.path.stat().st_size == 0:
            raise SourceError("The video encoder (ffmpeg) wrote nothing; its message is above.")


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

    def __init__(self, path: Path, size: tuple[int, int], sample: Image.Image) -> None:
        keys = list(dict.fromkeys([WHITE, FG, MUTED, PANEL, BORDER, MASK_FG, SWATCH_EDGE, NEW, CHANGED, TICK,
                                   LINE["left"], LINE["right"], *map(tuple, HEAT.tolist()),
                                   *(c for pair in BADGE.values() for c in pair)]))
        adaptive = sample.quantize(256 - len(keys), method=Image.Quantize.MEDIANCUT).getpalette() or []
        table = (bytes(v for c in keys for v in c) + bytes(adaptive[:3 * (256 - len(keys))])).ljust(768, b"\0")
        self.quantize = Quantizer(table)
        self.file = open(path, "wb")
        self.file.write(b"GIF89a" + struct.pack("<HHBBB", size[0], size[1], 0xF7, 0, 0) + table
                        + b"!\xff\x0bNETSCAPE2.0\x03\x01\x00\x00\x00")
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


def _check(fmt: str, fps: float, speed: float, size: tuple[int, int], hold: float) -> None:
    if fmt not in FORMATS:
        raise SourceError(f"Unknown video format {fmt!r}; choose mp4 or gif.")
    if not (isinstance(fps, (int, float)) and math.isfinite(fps) and 1 <= fps <= 120):
        raise SourceError("The frame rate must be between 1 and 120 frames per second.")
    if fmt == "gif" and fps > GIF_MAX_FPS:
        raise SourceError(f"GIF delays are whole hundredths of a second and players slow down faster frames: "
                          f"use --fps {GIF_MAX_FPS} or less for GIF.")
    if not (isinstance(speed, (int, float)) and math.isfinite(speed) and 0.01 <= speed <= 100):
        raise SourceError("The speed must be between 0.01 and 100 (1 is real time, 2 twice as fast).")
    if not (math.isfinite(hold) and 0 <= hold <= 600):
        raise SourceError("The final hold must be between 0 and 600 seconds.")
    w, h = size
    if not (MIN_SIZE[0] <= w <= MAX_SIZE[0] and MIN_SIZE[1] <= h <= MAX_SIZE[1]):
        raise SourceError(f"The video size must be from {MIN_SIZE[0]}x{MIN_SIZE[1]} to {MAX_SIZE[0]}x{MAX_SIZE[1]}; got {w}x{h}.")
    if fmt == "mp4" and (w % 2 or h % 2):
        raise SourceError(f"MP4 needs an even width and height; got {w}x{h} (try {w - w % 2}x{h - h % 2}).")


def _export(recording_path: str | Path, out: str | Path, fmt: str, fps: float, speed: float,
            size: tuple[int, int], hold: float, progress: Callable[[int, int], None] | None,
            clock: str = "time") -> dict[str, Any]:
    size = (int(size[0]), int(size[1]))
    _check(fmt, fps, speed, size, hold)
    if clock not in CLOCKS:
        raise SourceError(f"The clock must be time or passes, not {clock!r}.")
    out = Path(out)
    if not out.parent.is_dir():
        raise SourceError(f"Cannot write {out}: the folder {out.parent} does not exist.")
    if out.is_dir():
        raise SourceError(f"{out} is a folder; give --out a file name such as race.{fmt}.")
    rec = load(recording_path)
    started = time.perf_counter()
    scene = Scene(rec, size, speed, clock)
    span = scene.end / scene.rate  # seconds of video at speed 1
    n = frame_count(span, fps, speed, hold)
    if n > MAX_FRAMES:
        raise SourceError(f"That would be {n} frames; raise --speed or lower --fps (at most {MAX_FRAMES}).")
    if n / fps > MAX_VIDEO_SECONDS:
        raise SourceError(f"That video would last {n / fps:,.0f} s and videos are capped at {MAX_VIDEO_SECONDS} s: "
                          f"export HTML, which plays any length, or use python -m app export with --speed "
                          f"{math.ceil(scene.end / max(1.0, MAX_VIDEO_SECONDS - hold))} or more.")
    tmp = out.with_name(f".{out.name}.{uuid.uuid4().hex[:8]}.part")
    render = write = 0.0
    writer: Mp4Writer | GifWriter | None = None
    try:
        try:
            writer = Mp4Writer(tmp, size, fps) if fmt == "mp4" else GifWriter(tmp, size, scene.palette_sample())
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
            raise SourceError(f"Could not write {out.name}: {e.strerror or e}.") from None
        finally:
            if writer is not None:
                writer.close()
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return {"frames": n, "video_seconds": n / fps, "race_seconds": scene.end, "seconds": time.perf_counter() - started,
            "render_seconds": render, "write_seconds": write, "bytes": out.stat().st_size}


def export_video(recording_path: str | Path, out: str | Path, fmt: str = "mp4", fps: float = 30, speed: float = 1.0,
                 size: tuple[int, int] = (1280, 720), hold: float = 0.0,
                 progress: Callable[[int, int], None] | None = None, clock: str = "time") -> Path:
    """Writes the race in a recording as an MP4 or GIF that looks like the page; returns `out`.

    `speed` 2 plays twice as fast; `hold` adds seconds of the final state at the end; `progress(done, total)`
    is called after each video frame; `clock="passes"` runs it on forward passes. Raises SourceError with one clear sentence on bad input or a failed
    write, leaving no file at `out`.
    """
    _export(recording_path, out, fmt, fps, speed, size, hold, progress, clock)
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
