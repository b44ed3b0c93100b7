"""The video's picture: the page's layout redrawn with PIL and numpy at any size, a static background drawn once
and each side redrawn only where its shown frame changed (the rectangles drawn go to the encoder as `dirty`)."""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from app.errors import UserError
from app.export.video.fonts import NEWLINE, SANS, TAB, Glyphs, bold, coverage, font, one_line
from app.export.video.palette import (
    BADGE,
    BORDER,
    FG,
    HEAT,
    HEAT_KEY,
    HEAT_NAMES,
    LEGEND,
    LINE,
    MUTED,
    PANEL,
    PASS_RATE,
    SWATCH_EDGE,
    TICK,
    UI,
    UI_MUTED,
    WHITE,
)
from app.export.video.track import HeatStrip, Track
from app.trace.frames import SIDES, Recording, origin
from app.view.side import CELLS, DELETED, cell_styles, legend_seen, status_sentence
from app.view.theme import MASK, STATUS_TEXT, TERMINAL

MIN_SIZE, MAX_SIZE = (480, 270), (3840, 2160)
POSITIONS = "position in the answer \u2192"  # the heatmap's axis across, the player's words (app/view/player/dom.js)


def speed_text(speed: float) -> str:
    """A playback speed as the header shows it: two significant digits under 1 (0.41, a race stretched to the watch
    pace), three above (2, 12.5), never the float's full length."""
    return f"{speed:.2g}" if speed < 1 else f"{speed:.3g}"


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
        self.origin = origin(rec.header)  # a run this server did not make says so, in a line under the prompt
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
            tr.heat = HeatStrip(tr.width, len(tr.frames), self.heat_w, self.heat_h, tr.pinned, tr.columns)
        self.status_text: str | None = None
        most = (self.inner_w * 5 // 8) // self.glyphs.cw  # room for the timer; the name gets the rest
        self.head_cells = {tr.key: max([1] + [len(tr.timer(i, most)) for i in range(len(tr.frames))])
                           for tr in self.tracks}

    # -- layout and the static background

    def _geometry(self) -> None:
        px, g = self.px, self.glyphs
        self.pad = px(14)
        self.prompt_y, self.row_h = self.pad, px(22)
        self.origin_y = self.prompt_y + self.row_h
        self.status_y = self.origin_y + (self.row_h if self.origin else 0)
        shown = f" \u00b7 {speed_text(self.speed)}\u00d7 speed" if self.speed != 1 else ""
        clock = self._clock_text(self.end) + shown
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
        face = self.sans[12]
        self.axis_h = max(px(16), sum(face.getmetrics()))  # the positions' axis under the heatmap
        self.heat_y = h - px(8) - self.axis_h - self.heat_h
        labels = [label for tr in self.tracks for label in tr.axes()[:3]]
        self.axis_w = max([0] + [math.ceil(face.getlength(label)) for label in labels]) + px(4)  # frames' axis
        self.heat_x = self.inner_x + self.axis_w + px(7)
        self.heat_w = self.inner_w - self.axis_w - 2 * px(7)
        self.cap_h = max(px(18), g.ch)
        self.cap_y = self.heat_y - px(4) - self.cap_h
        self.text_y = self.msg_y + self.msg_h + px(4)
        self.text_h = self.cap_y - px(4) - self.text_y
        self.grid_x, self.grid_y = self.inner_x + px(6), self.text_y + px(4)
        self.cols = (self.inner_w - 2 * px(6)) // g.cw
        self.rows_n = (self.text_h - 2 * px(4)) // g.ch
        if self.rows_n < 1 or self.cols < 8:
            raise UserError(f"{self.W}x{self.H} is too small to draw the race; use at least "
                            f"{MIN_SIZE[0]}x{MIN_SIZE[1]}.")

    def _legend_items(self) -> list[tuple[int, Callable[[Image.Image, int, int], None]]]:
        px, face, g = self.px, self.sans[13], self.glyphs
        items: list[tuple[int, Callable[[Image.Image, int, int], None]]] = []
        seen = set().union(*(legend_seen(tr.rows) for tr in self.tracks))  # only what occurs, as the player's legend
        if any(tr.pinned for tr in self.tracks):
            seen |= {"pinned", "given"}
        legend = [item for item in LEGEND if CELLS[item[0]] in seen]
        heat_keys = [item for item in HEAT_KEY if HEAT_NAMES[item[0]] in seen]
        self.legend_names = [CELLS[i] for i, _, _ in legend] + [HEAT_NAMES[i] for i, _ in heat_keys]
        for style, sample, label in legend:
            ids = np.array([[g.gid(c) for c in sample]])
            cells = g.render(ids, np.full(ids.shape, style))
            width = cells.shape[1] + px(5) + math.ceil(face.getlength(label))

            def draw(img: Image.Image, x: int, y: int, cells: np.ndarray = cells, label: str = label) -> None:
                img.paste(Image.fromarray(cells), (x, y))
                ImageDraw.Draw(img).text((x + cells.shape[1] + px(5), y + g.ch // 2), label, font=face, fill=FG,
                                         anchor="lm")
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
                d.rectangle([x, mid - sw // 2, x + sw - 1, mid - sw // 2 + sw - 1], fill=tuple(HEAT[code]),
                            outline=SWATCH_EDGE)
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
        if self.origin:
            bold(d, (self.pad, self.origin_y), one_line(self.origin, face, self.W - 2 * self.pad, self.has_sans), face,
                 FG)
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
        for (px0, py0, _, _), tr in zip(self.panels, self.tracks):
            self._axes(d, px0, py0, tr)
        return np.array(img)

    def _axes(self, d: ImageDraw.ImageDraw, x0: int, y0: int, tr: Track) -> None:
        """The heatmap's axes as the player labels them: frames down (the first and last frame's time or pass, and
        the axis's name between them where there is room), positions across (0, the name, the last position)."""
        face, px = self.sans[12], self.px
        top, bottom, name, last = tr.axes()
        if not top:
            return
        right = x0 + self.heat_x - px(7) - px(2)
        d.text((right, y0 + self.heat_y), top, font=face, fill=FG, anchor="ra")
        d.text((right, y0 + self.heat_y + self.heat_h), bottom, font=face, fill=FG, anchor="rd")
        if self.heat_h >= 3 * sum(face.getmetrics()):
            bold(d, (right, y0 + self.heat_y + self.heat_h // 2), name, face, FG, "rm")
        y = y0 + self.heat_y + self.heat_h + 1 + self.axis_h // 2
        left, end = x0 + self.heat_x, x0 + self.heat_x + self.heat_w
        d.text((left, y), "0", font=face, fill=FG, anchor="lm")
        d.text((end, y), last, font=face, fill=FG, anchor="rm")
        room = self.heat_w - 2 * math.ceil(face.getlength(last)) - px(24)
        if room > 0:
            bold(d, ((left + end) // 2, y), one_line(POSITIONS, face, room, self.has_sans), face, FG, "mm")

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
            self.put(self.pad, self.status_y, self._text_box(status, self.W - 2 * self.pad, self.px(20), self.sans[13],
                                                             FG, heavy=True))

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
        speed = f" \u00b7 {speed_text(self.speed)}\u00d7 speed" if self.speed != 1 else ""
        pixels = self.glyphs.line([(self._clock_text(t), UI), (speed, UI_MUTED)], self.clock_cells)
        self.put(self.W - self.pad - pixels.shape[1], self.prompt_y, pixels)

    def _side(self, i: int, tr: Track, idx: int) -> None:
        x0, y0 = self.panels[i][:2]
        status = tr.status(idx)
        self._header(x0, y0, tr, idx, status)
        message = tr.message if status in TERMINAL else ""
        row = tr.rows[idx] if idx >= 0 else None
        note = (row.get("note") or "") if row is not None and not message else ""  # the frame's note, as the page's
        note = note or ("" if message else tr.draft_line)  # else a revising side's line (the page's own line)
        if tr.drawn.get("message") != (message, status, note):
            tr.drawn["message"] = (message, status, note)
            self.put(x0 + self.inner_x, y0 + self.msg_y, self._note(note) if note else self._message(message, status))
        settled_all = idx == len(tr.rows) - 1 and tr.end_status == "done" and tr.ended
        top, lines = self._text(x0, y0, tr, row, settled_all)
        caption = f"frame {idx + 1} / {len(tr.frames)}" if idx >= 0 else ""
        if lines > self.rows_n:
            caption += f" \u00b7 lines {top + 1}\u2013{top + self.rows_n} of {lines}"
        cells = self.inner_w // 2 // self.glyphs.cw
        self.put(x0 + self.inner_x + self.inner_w - cells * self.glyphs.cw,
                 y0 + self.cap_y + (self.cap_h - self.glyphs.ch) // 2,
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
        d.rounded_rectangle([bx, mid - bh // 2, bx + badge_w, mid - bh // 2 + bh], radius=bh // 2, fill=fill,
                            outline=edge)
        d.text((bx + badge_w // 2, mid), badge, font=small, fill=FG, anchor="mm")
        return np.asarray(img)

    def _note(self, note: str) -> np.ndarray:
        """A frame's note (the forward process's t) in the message strip, bold on white."""
        img = Image.new("RGB", (self.inner_w, self.msg_h), WHITE)
        face = self.sans[13]
        bold(ImageDraw.Draw(img), (0, self.msg_h // 2), one_line(note, face, self.inner_w, self.has_sans), face, FG,
             "lm")
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
        number of lines and the last line holding a change (-1: none). A token the frame deleted is drawn, struck
        through, where it was."""
        cols, g = self.cols, self.glyphs
        lin: list[int] = []
        col: list[int] = []
        gid: list[int] = []
        sty: list[int] = []
        if row is None:
            return lin, col, gid, sty, 1, -1
        at = [0, 0, -1]  # line, column, the last line holding a change

        def place(ids: tuple[int, ...], style: int, code: int) -> None:
            line, c = at[0], at[1]
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
            at[0], at[1] = line, c
            if code:
                at[2] = line

        masks, codes = row["m"], row["ch"]
        gone: dict[int, list[str]] = {}
        for _, before, tok in row.get("del") or ():
            gone.setdefault(before, []).append(tok)
        for i, (tok, style) in enumerate(zip(row["tok"], cell_styles(row, settled_all, pinned))):
            for dropped in gone.get(i, ()):
                place(g.token(dropped), DELETED, 1)
            place(self.mask_ids if masks and masks[i] else g.token(tok), style, codes[i])
        for dropped in gone.get(len(row["tok"]), ()):
            place(g.token(dropped), DELETED, 1)
        return lin, col, gid, sty, at[0] + 1, at[2]

    def _text(self, x0: int, y0: int, tr: Track, row: dict[str, Any] | None, settled_all: bool) -> tuple[int, int]:
        """Redraws the text rows whose cells changed; scrolls (like a terminal) only to keep the latest change in
        view."""
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
        margin = self.px(7) - 1
        ticks = np.full((self.heat_h, margin, 3), WHITE, np.uint8)
        if idx >= 0:
            r0, r1 = heat.span(idx)
            mid = (r0 + r1 - 1) // 2
            ticks[max(0, mid - self.px(1)):mid + self.px(1)] = TICK
        self.put(x0 + self.heat_x - 1 - margin, y0 + self.heat_y, ticks)
        self.put(x0 + self.heat_x + self.heat_w + 1, y0 + self.heat_y, ticks)

    def palette_sample(self) -> Image.Image:
        """The background and every badge: what a GIF palette must cover beside its fixed colours; info["schema2"]
        says the race draws schema 2's states (or a revising side's), whose colours the palette then holds too."""
        parts = [self.canvas.copy()]
        for status in BADGE:
            fill, edge = BADGE[status]
            parts.append(np.broadcast_to(np.array(fill, np.uint8), (8, self.W, 3)))
            parts.append(np.broadcast_to(np.array(edge, np.uint8), (8, self.W, 3)))
        sample = Image.fromarray(np.concatenate(parts))
        sample.info["schema2"] = any(row.get("st") is not None or row.get("rv") is not None
                                     for tr in self.tracks for row in tr.rows)
        return sample
