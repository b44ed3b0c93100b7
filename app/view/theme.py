"""The theme (app/view/theme.json): colours, legend, status words, the mask glyph and the token styles, in one file.

The page's player gets it as a JSON object (`theme_json`, the `THEME` its parts read) and as CSS custom properties
before player.css (`css_rules`); the video export reads the same values through `rgb`. So a colour or a label is
changed in theme.json alone. The change codes' names come from where they are declared (app/analysis/states.py
`CODE_NAMES`, a code its index), added as `codes`: each names its style and its heat colour here.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from app.analysis.states import CODE_NAMES

THEME: dict[str, Any] = json.loads((Path(__file__).resolve().parent / "theme.json").read_text(encoding="utf-8"))
THEME["codes"] = list(CODE_NAMES)
COLORS: dict[str, Any] = THEME["colors"]
MASK: str = THEME["mask"]
STATUS_TEXT: dict[str, str] = THEME["status"]
TERMINAL: tuple[str, ...] = tuple(THEME["terminal"])


def hex_rgb(value: str) -> tuple[int, int, int]:
    """'#56B4E9' as (86, 180, 233)."""
    return int(value[1:3], 16), int(value[3:5], 16), int(value[5:7], 16)


def light(name: str) -> str:
    """A named colour on the light theme (the one the video draws)."""
    value = COLORS[name]
    return value[0] if isinstance(value, list) else value


def rgb(name: str) -> tuple[int, int, int]:
    """A named colour on the light theme as an RGB triple."""
    return hex_rgb(light(name))


def _declarations(colors: dict[str, Any]) -> str:
    # one light-dark() pair per colour: the player's color-scheme (set by player.css) picks the half
    return "".join(f"  --cv-{name}: {f'light-dark({v[0]}, {v[1]})' if isinstance(v, list) else v};\n"
                   for name, v in colors.items())


def css_rules() -> str:
    """The theme as CSS: custom properties on .cv-player (presenter mode overrides some) and the status badges.

    Scoped to .cv-player rather than :root so that presenter mode and the lessons' spotlight, which read the
    same names, see the player's own values."""
    heat = "".join(f"  --cv-heat-{name}: {value};\n" for name, value in THEME["heat"].items())
    badges = "".join(f".cv-badge.cv-st-{status} {{ background: var(--cv-{bg}); border-color: var(--cv-{edge}); }}\n"
                     for status, (bg, edge) in THEME["badges"].items())
    return (f".cv-player {{\n{_declarations(COLORS)}{heat}}}\n"
            f".cv-player.cv-presenter {{\n{_declarations(THEME['presenter'])}}}\n{badges}")


def theme_json() -> str:
    """The theme as a JavaScript object literal for the player (ASCII JSON with no '<' in it, safe in a <script>)."""
    text = json.dumps(THEME, ensure_ascii=True, separators=(",", ":"))
    if "<" in text:
        raise ValueError("app/view/theme.json must not contain '<': it is inlined in a <script> element")
    return text
