"""Noise is legible (issue 51 item 4): a noise token never shows raw bytes or control characters, at the watch pace a
viewer sees the uniform twin's noise flicker and settle, and the heatmap's noise and masked colours are at least 10 L*
apart."""

from __future__ import annotations

import statistics
import unicodedata
from pathlib import Path

import pytest

from app.sources.local import UNREADABLE, legible
from app.trace.reading import read_recording
from app.view.pace import PACE, pace_factor
from app.view.theme import THEME
from tests.fixtures import needs_twins

PROMPT = "Once upon a time, a little turtle found a map in the sand."


def unreadable(text: str) -> bool:
    """Whether a string holds a character that is no visible text: a replacement character or a control one."""
    return any(c == "\ufffd" or unicodedata.category(c)[0] == "C" for c in text)


def lightness(hex_colour: str) -> float:
    """CIE L* of an sRGB colour (D65), as colour tools compute it."""
    def linear(v: float) -> float:
        return v / 12.92 if v <= 0.04045 else ((v + 0.055) / 1.055) ** 2.4

    r, g, b = (linear(int(hex_colour.lstrip("#")[i:i + 2], 16) / 255) for i in (0, 2, 4))
    y = 0.2126 * r + 0.7152 * g + 0.0722 * b
    return 116 * y ** (1 / 3) - 16 if y > 216 / 24389 else y * 24389 / 27


def test_a_noise_token_keeps_its_width_and_shows_no_byte_or_control_character() -> None:
    for raw, shown in (("\x0f", UNREADABLE), ("high\ufffd", "high" + UNREADABLE), (" Hd", " Hd"),
                       ("stretch'd\ufffd", "stretch'd" + UNREADABLE), ("\n\n", UNREADABLE * 2), (" the", " the")):
        assert legible(raw) == shown and len(legible(raw)) == len(raw)


def test_the_lightness_is_cie_lstar() -> None:
    assert round(lightness("#000000"), 1) == 0.0 and round(lightness("#ffffff"), 1) == 100.0
    assert round(lightness("#777777"), 1) == 50.0  # mid grey


def test_the_heatmaps_noise_and_masked_colours_are_at_least_10_lstar_apart() -> None:
    heat = THEME["heat"]
    assert abs(lightness(heat["noise"]) - lightness(heat["masked"])) >= 10


@pytest.fixture(scope="module")
def uniform_race(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from app.cli.record import record

    out = tmp_path_factory.mktemp("noise") / "race.jsonl"
    record(PROMPT, "local-uniform", "local-ar", out, settings={"left": {"gen_length": 32, "steps": 32},
                                                                "right": {"gen_length": 32}})
    return out


@needs_twins
def test_the_uniform_twins_noise_never_shows_raw_bytes(uniform_race: Path) -> None:
    from app.engine import uniform
    from app.sources.local import twin

    model, tok = twin("uniform")
    pool = uniform.noise_ids(model)
    assert any(unreadable(tok.token_strings([int(i)])[0]) for i in pool)  # the test can fail: the pool has byte pieces
    for i in pool:
        assert not unreadable(legible(tok.token_strings([int(i)])[0]))
    frames = read_recording(uniform_race).frames["left"]
    noise = [t for f in frames for t, s in zip(f.tokens or [], f.states or "") if s == "n"]
    assert noise and not any(unreadable(t) for t in noise)


@needs_twins
def test_at_the_watch_pace_the_noise_flickers_and_settles(uniform_race: Path) -> None:
    """Replayed at the page's pace, frames come no faster than 25 a second (the median), most frames redraw some noise,
    and the last holds none: every position settled."""
    rec = read_recording(uniform_race)
    frames = rec.frames["left"]
    factor = pace_factor(rec, pace=PACE)
    gaps = [(b.t - a.t) / factor for a, b in zip(frames, frames[1:])]
    assert statistics.median(gaps) >= 1 / 25
    flicker = sum(any(s == "n" and s0 == "n" and t != t0 for t, s, t0, s0 in
                      zip(b.tokens or [], b.states or "", a.tokens or [], a.states or ""))
                  for a, b in zip(frames, frames[1:]))
    assert flicker >= len(frames) // 2
    assert "n" not in (frames[-1].states or "")
