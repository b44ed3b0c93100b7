"""Change codes are declared once (issue 52 item 3): app/analysis/states.py CODE_NAMES, a code its index; the player,
the browser race's rows and the video read the names from it, and each code names its style and heat colour in the
theme. A second table of code numbers anywhere fails here."""

from __future__ import annotations

import json
import re
from pathlib import Path

from app.analysis import changes, states
from app.view.theme import THEME

ROOT = Path(__file__).resolve().parents[1]
JS = [*(ROOT / "app/view/player").glob("*.js"), *(ROOT / "app/site/js").glob("*.js")]
# a code compared with, or declared as, a number: `code === 3`, `ch[i] === 6`, `UNCHANGED = 0`
NUMBERED = re.compile(r"(?:\bcode\b|\bch\[[^\]]+\])\s*[!=]==?\s*\d"
                      r"|\b(?:UNCHANGED|NEW|CHANGED|REMASKED|EDITED|RENOISED|INSERTED)\s*=\s*\d")


def test_every_code_names_a_style_and_a_heat_colour_in_the_theme() -> None:
    assert THEME["codes"] == list(states.CODE_NAMES)
    for name in states.CODE_NAMES[1:]:
        assert name in THEME["styles"] and name in THEME["heat"], name
    assert "unchanged" in THEME["heat"]


def test_the_analysis_reads_its_codes_from_the_one_declaration() -> None:
    assert [states.UNCHANGED, states.NEW, states.CHANGED, states.REMASKED, states.EDITED, states.RENOISED,
            states.INSERTED] == list(range(len(states.CODE_NAMES)))
    assert (changes.UNCHANGED, changes.NEW, changes.CHANGED, changes.REMASKED) == (0, 1, 2, 3)
    python = [p for p in (ROOT / "app").rglob("*.py") if p.name != "states.py"]
    for path in python:
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"^\s*UNCHANGED, NEW\b.*=\s*(?:0|range)", text, re.M), path


def test_no_javascript_numbers_a_change_code() -> None:
    found = [f"{p.name}: {m.group(0)}" for p in JS for m in NUMBERED.finditer(p.read_text(encoding="utf-8"))]
    assert not found, found


def test_the_browser_race_gets_the_codes_with_its_analysis_constants() -> None:
    from app.site.build import twins_data  # noqa: PLC0415 (the site room: its import is heavy)

    assert json.loads(json.dumps(twins_data()))["analysis"]["codes"] == list(states.CODE_NAMES)
