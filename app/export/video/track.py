"""One side of a recorded race as the video plays it: its frames on the chosen clock, its timer text, and its
heatmap grown one row per frame; and `load`, which reads a recording to export."""

from __future__ import annotations

import bisect
import logging
from itertools import accumulate
from pathlib import Path
from typing import Any

import numpy as np

from app.errors import UserError
from app.export import read_for_export
from app.export.video.palette import (
    CODE_HEAT,
    H_DELETED,
    H_DRAFTED,
    H_GIVEN,
    H_MASKED,
    H_NOISE,
    H_REVISED,
    H_UNCHANGED,
    HEAT,
    WHITE,
)
from app.trace.frames import Recording
from app.view.side import heat_columns, recorded_side

log = logging.getLogger("converge.export")


class HeatStrip:
    """One side's heatmap (rows = frames, columns = positions) at display size, one row added per frame."""

    def __init__(self, positions: int, frames: int, width: int, height: int, pinned: frozenset[int],
                 columns: tuple[list[list[int]], list[list[int]], int] | None = None) -> None:
        self.columns = columns  # a side whose frames insert or delete positions: side.heat_columns
        positions = columns[2] if columns else positions
        self.n, self.h = max(1, frames), height
        self.pinned = np.array(sorted(p for p in pinned if p < max(1, positions)), np.int64)  # given from frame 0
        self.starts = (np.arange(width) * max(1, positions)) // width
        self.twin = np.searchsorted(self.starts, self.starts, side="right") - 1  # the last display column of each start
        self.positions = max(1, positions)
        self.cells = np.zeros((height, width), np.uint8)
        self.pixels = np.full((height, width, 3), WHITE, np.uint8)
        self.count = 0
        self.fresh: tuple[int, int] | None = (0, height)

    def span(self, k: int) -> tuple[int, int]:
        r0 = k * self.h // self.n
        return r0, max(r0 + 1, (k + 1) * self.h // self.n)

    def add(self, row: dict[str, Any]) -> None:
        """Adds a frame's row in work of its own length (not the widest frame's): past its end every position is 0,
        which leaves a column's maximum as it was, so only the columns that start inside it are reduced."""
        ch = np.asarray(row["ch"], np.uint8)
        codes = np.zeros(max(1, len(ch)), np.uint8)
        if len(ch):
            masked = np.asarray(row["m"], bool) if row["m"] is not None else np.zeros(len(ch), bool)
            quiet = np.where(masked, H_MASKED, H_UNCHANGED)
            if row.get("st") is not None:
                states = np.frombuffer(row["st"].encode("ascii"), np.uint8)
                quiet = np.where(states == ord("n"), H_NOISE, np.where(states == ord("d"), H_DRAFTED, quiet))
            if row.get("rv") is not None:  # a revising side: a quiet token edited from the draft has its own cell
                letters = np.frombuffer(row["rv"].encode("ascii"), np.uint8)
                quiet = np.where((letters == ord("e")) & (quiet == H_UNCHANGED), H_REVISED, quiet)
            codes[:len(ch)] = np.where(ch == 0, quiet, CODE_HEAT[ch])
            given = self.pinned[self.pinned < len(ch)]
            codes[given] = H_GIVEN
        r0, r1 = self.span(self.count)
        if self.columns is not None:
            self.cells[r0:r1] = np.maximum(self.cells[r0:r1], self._aligned(codes[:len(ch)])[None, :])
        else:
            if row.get("del") and row.get("st") is None:  # a text state that shrank: as many deleted cells past its end
                gone = np.full(len(row["del"]), H_DELETED, np.uint8)
                codes = np.concatenate([codes[:len(ch)], gone])[:self.positions]
            cols = int(np.searchsorted(self.starts, len(codes), side="left"))  # the columns starting inside the row
            self.cells[r0:r1, :cols] = np.maximum(self.cells[r0:r1, :cols],
                                                  np.maximum.reduceat(codes, self.starts[:cols])[None, :])
        self.pixels[r0:r1] = HEAT[self.cells[r0:r1]]
        self.fresh = (min(r0, self.fresh[0]), max(r1, self.fresh[1])) if self.fresh else (r0, r1)
        self.count += 1

    def _aligned(self, codes: np.ndarray) -> np.ndarray:
        """A row's codes placed in the columns its positions keep (and its deletions in theirs), reduced to the display
        columns (each the largest code among the columns it spans), in work of the row's own length and the display's
        width: a side whose frames each insert new positions has as many columns as positions ever made, and placing
        each row among all of them cost frames x columns."""
        assert self.columns is not None
        cols, gone, _ = self.columns
        at = np.concatenate([np.asarray(cols[self.count], np.int64), np.asarray(gone[self.count], np.int64)])
        values = np.concatenate([codes, np.full(len(gone[self.count]), H_DELETED, np.uint8)])
        out = np.zeros(len(self.starts), np.uint8)
        np.maximum.at(out, np.searchsorted(self.starts, at, side="right") - 1, values)
        return out[self.twin]

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
        draft = side.draft
        self.draft_line = draft["line"] if draft else ""  # a side that started from a draft: what it did with it
        self.width = max((len(r["tok"]) for r in self.rows), default=0)
        self.columns = heat_columns(self.rows)
        self.in_place = side.in_place()
        self.shown: int | None = None
        self.top = 0
        self.grid: tuple[np.ndarray, np.ndarray] | None = None
        self.heat: HeatStrip | None = None
        self.drawn: dict[str, Any] = {}

    def index_at(self, t: float) -> int:
        return bisect.bisect_right(self.reach, t) - 1

    def axes(self) -> tuple[str, str, str, str]:
        """The heatmap's axis labels, as the player's: its first and last frame's time (or pass, on the forward-pass
        clock) down the side with the axis's name, and its last position across (the first is 0)."""
        if not self.frames:
            return "", "", "", ""
        when = (lambda f: f"pass {f.nfe}") if self.on_passes else (lambda f: f"{f.t:.2f} s")
        columns = self.columns[2] if self.columns is not None else self.width
        return (when(self.frames[0]), when(self.frames[-1]), "passes \u2193" if self.on_passes else "time \u2193",
                str(max(columns - 1, 0)))

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
    """Reads a recording for export; a file that is not one raises UserError naming the problem."""
    rec = read_for_export(path)
    if not any(rec.frames.values()):
        raise UserError(f"{Path(path).name} has no frames to export: record a race first.")
    for warning in rec.warnings:
        log.warning(warning)
    return rec


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
