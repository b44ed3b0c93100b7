"""The page's colours and token styles as the video draws them: RGB tuples and numpy tables from app/view/theme.json."""

from __future__ import annotations

import numpy as np

from app.view.side import CELLS
from app.view.theme import MASK, THEME, hex_rgb, rgb

PASS_RATE = THEME["pass_rate"]  # forward passes per second of video at speed 1, as the player plays them

# The page's colours, light theme (app/view/theme.json).
FG, MUTED, WHITE, PANEL, BORDER = rgb("fg"), rgb("muted"), rgb("bg"), rgb("panel"), rgb("border")
MASK_FG, SWATCH_EDGE, NEW, CHANGED = rgb("mask"), rgb("swatch-edge"), rgb("new"), rgb("changed")
LINE = {"left": rgb("left"), "right": rgb("right")}
# Heatmap cells in priority order (a cell covering several positions or frames shows the highest): the order
# of theme.json's heat (empty, unchanged, masked, given, new, changed, remasked and among them schema 2's noise,
# drafted, inserted, edited, renoised, deleted, and a revising side's revised), which HeatStrip's codes follow.
HEAT_NAMES = list(THEME["heat"])
HEAT = np.array([hex_rgb(THEME["heat"][name]) for name in HEAT_NAMES], np.uint8)
H_UNCHANGED, H_MASKED, H_GIVEN, H_NOISE, H_DRAFTED, H_DELETED, H_REVISED = (
    HEAT_NAMES.index(name) for name in ("unchanged", "masked", "given", "noise", "drafted", "deleted", "revised"))
CODE_HEAT = np.array([HEAT_NAMES.index(name) for name in THEME["codes"]], np.uint8)  # each code's heat, by its name
BADGE = {status: (rgb(bg), rgb(edge)) for status, (bg, edge) in THEME["badges"].items()}

# Cell styles: the page's token styles (app/view/side.py CELLS, coloured as theme.json says), then mono UI text on
# white.
NORMAL, MASKED, DRAFT, FRESH, CHANGE, REMASK = (CELLS.index(name) for name in
                                                 ("unchanged", "masked", "draft", "new", "changed", "remasked"))
NOISE, RENOISE, DELETE = (CELLS.index(name) for name in ("noise", "renoised", "deleted"))
KEPT, REVISED, REOPENED = (CELLS.index(name) for name in ("kept", "revised", "reopened"))  # from a draft (issue 53)
UI, UI_MUTED = len(CELLS), len(CELLS) + 1
_CELLS = [THEME["styles"][name] for name in CELLS]
STYLE_FG = np.array([rgb(st["ink"]) for st in _CELLS] + [FG, MUTED], np.uint16)
STYLE_BG = np.array([rgb(st["paper"]) for st in _CELLS] + [WHITE, WHITE], np.uint16)
# outside the glyph band: the surface under the text
STYLE_AREA = np.array([PANEL] * len(CELLS) + [WHITE] * 2, np.uint16)
FRESH_MARK, DRAFT_MARK, REMASK_MARK = (rgb(THEME["styles"][name]["mark"]) for name in ("new", "draft", "remasked"))
RENOISE_MARK, DELETE_MARK = (rgb(THEME["styles"][name]["mark"]) for name in ("renoised", "deleted"))
REVISED_MARK, REOPENED_MARK = (rgb(THEME["styles"][name]["mark"]) for name in ("revised", "reopened"))
NOISE_INK = rgb("noise")  # noise's speckle
TICK = rgb("remasked")  # the heatmap's frame marks, in the darkest ink
LEGEND = [(CELLS.index(name), MASK if THEME["styles"][name].get("glyph") == "mask" else THEME["sample"],
           THEME["styles"][name]["label"]) for name in THEME["legend"] if name in CELLS]
HEAT_KEY = [(HEAT_NAMES.index(name), label) for name, label in THEME["heat_key"]]
# legend styles and heat cells drawn only when what they name occurs (pins; schema 2's states and changes)
ONLY_IF_SEEN = frozenset(THEME["only_if_seen"])
# the heat colours a GIF's palette always holds (schema 1's, pins' given among them), and schema 2's, which it holds
# only when a frame draws them, so a schema 1 race's GIF keeps the palette it always had
_SCHEMA2 = ONLY_IF_SEEN - {"pinned", "given"}
HEAT_FIXED = [tuple(HEAT[i].tolist()) for i, name in enumerate(HEAT_NAMES) if name not in _SCHEMA2]
HEAT_SCHEMA2 = [tuple(HEAT[i].tolist()) for i, name in enumerate(HEAT_NAMES) if name in _SCHEMA2] + [
    rgb(name) for name in ("noise", "edited", "inserted", "renoised", "deleted",  # and their token styles' colours,
                           "kept", "revised-bg", "revised", "reopened")]  # a revising side's among them
