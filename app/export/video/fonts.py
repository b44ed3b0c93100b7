"""Fonts and glyphs for the video: the shipped DejaVu faces, model text cleaned for drawing, and the glyph atlas
that rasterises each character once and blends each (style, character) cell once, so a text row is one gather."""

from __future__ import annotations

import math
import struct
import unicodedata
from functools import lru_cache
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from app.export.video.palette import (
    DELETE,
    DELETE_MARK,
    DRAFT,
    DRAFT_MARK,
    FRESH,
    FRESH_MARK,
    NOISE,
    NOISE_INK,
    REMASK,
    REMASK_MARK,
    RENOISE,
    RENOISE_MARK,
    REOPENED,
    REOPENED_MARK,
    REVISED,
    REVISED_MARK,
    STYLE_AREA,
    STYLE_BG,
    STYLE_FG,
    UI,
)

FONTS = Path(__file__).resolve().parents[3] / "assets" / "fonts"
MONO, SANS = FONTS / "DejaVuSansMono.ttf", FONTS / "DejaVuSans.ttf"
MISSING, ELLIPSIS = "\ufffd", "\u2026"
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
        noisy = (sty == NOISE) | (sty == RENOISE)
        if noisy.any():
            alpha[noisy] = self._slant(alpha[noisy])
        bg = np.where(self.band[None, None, :, None], STYLE_BG[sty][:, :, None, :], STYLE_AREA[sty][:, :, None, :])
        out = ((bg[:, :, :, None, :] * (255 - alpha) + STYLE_FG[sty][:, :, None, None, :] * alpha + 127) // 255
               ).astype(np.uint8)
        fresh, draft, remask = sty == FRESH, sty == DRAFT, sty == REMASK
        if fresh.any():
            out[fresh, self.under] = FRESH_MARK
        if draft.any():
            out[draft, self.under, ::2] = DRAFT_MARK
        if remask.any():
            self._box(out, remask, REMASK_MARK, 1)
        self._schema2_marks(out, sty, alpha)
        self._draft_marks(out, sty)
        return out

    def _draft_marks(self, out: np.ndarray, sty: np.ndarray) -> None:
        """A revising side's marks (issue 53), as the page's: a token edited from the draft underlined, solid, and a
        re-noised draft position still open underlined in dashes, each as thick as a stroke (kept has its paper)."""
        rows = slice(self.under, min(self.bottom, self.under + self.stroke))
        revised, reopened = sty == REVISED, sty == REOPENED
        if revised.any():
            out[revised, rows] = REVISED_MARK
        if reopened.any():
            dash = np.arange(self.cw) % 4 < 2
            out[reopened, rows] = np.where(dash[None, None, :, None], np.array(REOPENED_MARK, np.uint8),
                                           out[reopened, rows])

    def _box(self, out: np.ndarray, where: np.ndarray, colour: tuple[int, int, int], dash: int) -> None:
        """An outline round the glyph band of the cells `where`, every `dash`-th pixel pair drawn (1: solid)."""
        t, b, w = self.top, self.bottom, self.stroke
        step = slice(None, None, dash)
        out[where, t:t + w, step] = colour
        out[where, b - w:b, step] = colour
        out[where, t:b:dash, :w] = colour
        out[where, t:b:dash, -w:] = colour

    def _slant(self, alpha: np.ndarray) -> np.ndarray:
        """Glyphs leaned right, a row further the higher it is: noise's italic, drawn from the one mono face."""
        out = np.zeros_like(alpha)
        for y in range(self.ch):
            shift = max(0, (self.bottom - y) // 5)
            out[:, y, shift:] = alpha[:, y, :self.cw - shift] if shift < self.cw else 0
        return out

    def _schema2_marks(self, out: np.ndarray, sty: np.ndarray, alpha: np.ndarray) -> None:
        """Noise's speckle (where the glyph is not), re-noised's dashed outline and a deleted token's strike (an
        inserted token has its own paper)."""
        noisy = (sty == NOISE) | (sty == RENOISE)
        if noisy.any():
            speckle = np.zeros((self.ch, self.cw), bool)
            speckle[self.top + 1:self.bottom:3, 1::3] = True
            out[noisy] = np.where((speckle[None, :, :, None] & (alpha[noisy] < 64)), NOISE_INK, out[noisy])
        renoise = sty == RENOISE
        if renoise.any():
            self._box(out, renoise, RENOISE_MARK, 2)
        delete = sty == DELETE
        if delete.any():
            mid = (self.top + self.bottom) // 2
            out[delete, mid:mid + self.stroke] = DELETE_MARK

    def line(self, parts: list[tuple[str, int]], cells: int) -> np.ndarray:
        """One right-aligned line of mono UI text, `cells` wide, from (text, style) parts (ASCII-safe strings)."""
        ids = [(self.gid(c), style) for text, style in parts for c in text][-cells:]
        gid = np.zeros((1, cells), np.int32)
        sty = np.full((1, cells), UI, np.int8)
        if ids:
            gid[0, cells - len(ids):] = [i for i, _ in ids]
            sty[0, cells - len(ids):] = [s for _, s in ids]
        return self.render(gid, sty)
