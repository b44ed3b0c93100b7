"""Pinned text (infilling): the sampler keeps pins given from the first step, sources check and refuse pins
with one sentence, and hostile pinned text comes back as the same text."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from app.engine import diffusion
from app.engine.diffusion import DiffusionSettings
from app.engine.model import random_model
from app.engine.pins import AR_PINS, resolve_pins
from app.errors import UserError
from app.export.html import export_html
from app.export.video.scene import Scene
from app.sources.base import make_source
from app.trace.frames import RecordingWriter, make_header
from app.trace.reading import read_recording
from app.trace.store import EXAMPLES_DIR
from app.view.side import PINNED, cell_styles, recorded_sides
from app.view.theme import THEME, hex_rgb, rgb
from tests.hostile import HOSTILE, as_stored
from tests.pages import browser_tab
from tests.test_samplers import PROMPT, config
from tests.test_ui import ROOT, examples, only_recording, page, side_text, start, wait_status  # noqa: F401

PINS = {3: 11, 4: 12, 20: 13, 31: 14}


@pytest.mark.parametrize("remask", [0.0, 0.9])
def test_pinned_positions_are_never_masked_committed_or_remasked(remask: float) -> None:
    model = random_model(config(), seed=0)
    s = DiffusionSettings(gen_length=32, steps=16, block_length=8, temperature=1.0, remask=remask,
                          threshold=None, stop_at_eos=False, seed=3)
    steps = list(diffusion.generate(model, PROMPT, s, pins=PINS))
    where = np.array(sorted(PINS))
    assert steps[-1].done and not steps[-1].masked.any()
    assert remask == 0.0 or any(st.remasked for st in steps)  # the remasking path really ran
    for st in steps:
        assert not st.masked[where].any()
        assert st.ids[where].tolist() == [PINS[p] for p in where]
        assert not set(st.committed) & set(PINS) and not set(st.remasked) & set(PINS)
        assert not set(st.candidates) & set(PINS)
    assert sum(len(st.committed) - len(st.remasked) for st in steps) == 32 - len(PINS)


def test_the_answer_does_not_end_before_its_last_pin() -> None:
    model = random_model(config(eos_id=0), seed=1)
    s = DiffusionSettings(gen_length=32, steps=32, block_length=32, threshold=None, eos_discount=1.0, seed=0)
    last = list(diffusion.generate(model, PROMPT, s, pins={30: 9}))[-1]
    assert model.eos_id not in last.ids[:30].tolist() and last.ids[30] == 9


def test_local_diffusion_keeps_pinned_text_in_every_frame_and_the_final_text() -> None:
    src = make_source("local-diffusion", gen_length=64, pins=["40: The end."])
    tok = src.tok
    pinned = resolve_pins(tok, src.opts.pins, 64)
    frames = list(src.stream("Once upon a time", threading.Event()))
    want = tok.token_strings(list(pinned.values()))
    for f in frames:
        assert [f.tokens[p] for p in sorted(pinned)] == want and not any(f.masked[p] for p in pinned)
    assert " The end." in frames[-1].text
    assert list(src.settings()["pins"]) == ["40: The end."]  # what the recording's header keeps


@pytest.mark.parametrize("pins, says", [
    (["10:abc", "11:x"], "overlaps another pin at position 11: move one of them"),
    (["62:a long ending"], "falls outside the answer of 64 tokens: pin it at"),
    (["0:" + "word " * 80], "shorten the pins or raise the answer length"),
    (["x:text"], "is not POSITION:TEXT: write it like 40:the end"),
    (["5:"], "has no text after the colon"),
])
def test_pins_that_do_not_fit_get_one_sentence_naming_the_fix(pins: list[str], says: str) -> None:
    with pytest.raises(UserError) as e:
        list(make_source("local-diffusion", gen_length=64, pins=pins).stream("Once", threading.Event()))
    assert says in str(e.value) and str(e.value).count(". ") == 0


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """tests/test_hf.py's tiny Hugging Face models, imported here so that without torch only this file's HF test
    skips (an import at the top would skip the whole file, numpy tests too)."""
    pytest.importorskip("torch", reason="torch is not installed")
    pytest.importorskip("transformers", reason="transformers is not installed")
    from tests.test_hf import build_tiny_models

    return build_tiny_models(tmp_path_factory.mktemp("hf"))


def test_hf_diffusion_keeps_pins_and_refuses_text_its_tokenizer_cannot_spell(tiny: dict[str, Path]) -> None:
    src = make_source(f"hf-diffusion:{tiny['bert']}", gen_length=16, steps=8, block_length=8, stop_at_eos=False,
                      chat=False, pins=["12:cat"])
    frames = list(src.stream("once upon a time", threading.Event()))
    assert all(f.tokens[12].strip() == "cat" and not f.masked[12] for f in frames)
    with pytest.raises(UserError, match="does not tokenize to whole positions: use plain text"):
        resolve_pins(src.tok, ["3:qqqzzz"], 16)


def test_an_autoregressive_source_refuses_pins_and_accepts_none() -> None:
    with pytest.raises(UserError) as e:
        make_source("local-ar", pins=["3:end"])
    assert str(e.value) == AR_PINS.format(source="local-ar")
    assert make_source("local-ar", pins="").name == "local-ar"


def test_hostile_text_through_the_pin_path_comes_back_as_the_same_text() -> None:
    ran = 0
    for name, text in HOSTILE.items():
        src = make_source("local-diffusion", gen_length=256, steps=2, block_length=256, pins=[f"0:{text}"])
        try:
            frames = list(src.stream("Once", threading.Event()))
        except UserError as e:  # too long or not whole tokens for this tokenizer: still one sentence
            assert "\n" not in str(e) and str(e).endswith("."), name
            continue
        ran += 1
        assert frames[-1].text.startswith(as_stored(text)), name
    assert ran >= len(HOSTILE) // 2


ENDING = "40: The end."


@pytest.fixture(scope="module")
def pinned_recording(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A recording of the diffusion twin with a pinned ending beside the AR twin, as a race writes it."""
    path = tmp_path_factory.mktemp("pins") / "pinned.jsonl"
    sources = {"left": make_source("local-diffusion", gen_length=64, steps=16, pins=[ENDING]),
               "right": make_source("local-ar", gen_length=16)}
    w = RecordingWriter(path, make_header("Once upon a time", {k: {"name": s.name, "settings": s.settings()}
                                                               for k, s in sources.items()}))
    for side, src in sources.items():
        for frame in src.stream("Once upon a time", threading.Event()):
            w.frame(side, frame)
        w.end(side, "done")
    w.close()
    return path


def given_positions() -> list[int]:
    return sorted(resolve_pins(make_source("local-diffusion").tok, [ENDING], 64))


def test_the_first_frame_lists_the_pinned_positions_and_no_later_frame_repeats_them(pinned_recording: Path) -> None:
    rec = read_recording(pinned_recording)
    left = rec.frames["left"]
    assert left[0].pinned == given_positions() and all(f.pinned is None for f in left[1:])
    assert all(f.pinned is None for f in rec.frames["right"])


def test_pinned_cells_are_styled_as_given_in_every_row_of_the_view(pinned_recording: Path) -> None:
    sides = recorded_sides(read_recording(pinned_recording))
    left, where = sides["left"], given_positions()
    assert left.pinned == frozenset(where) and sides["right"].pinned == frozenset()
    for row in left.rows:
        styles = cell_styles(row, settled_all=False, pinned=left.pinned)
        assert [styles[p] for p in where] == [PINNED] * len(where)
        assert PINNED not in [s for i, s in enumerate(styles) if i not in left.pinned]
    assert [cell_styles(r, False) for r in sides["right"].rows] == [cell_styles(r, False, sides["right"].pinned)
                                                                    for r in sides["right"].rows]


def test_the_video_draws_pinned_cells_in_their_colour_and_the_heatmap_shows_them_given(pinned_recording: Path) -> None:
    rec = read_recording(pinned_recording)
    scene = Scene(rec, (1280, 720))
    x, y, w, _ = scene.panels[0]
    text = scene.canvas[y + scene.text_y:y + scene.text_y + scene.text_h, x + scene.inner_x:x + scene.inner_x + w]
    heat = scene.canvas[y + scene.heat_y:y + scene.heat_y + scene.heat_h,
                        x + scene.heat_x:x + scene.heat_x + scene.heat_w]
    legend = scene.canvas[scene.legend_y:scene.legend_y + scene.legend_h]
    pinned, given = np.array(rgb("pinned"), np.uint8), np.array(hex_rgb(THEME["heat"]["given"]), np.uint8)

    def has(pixels: np.ndarray, colour: np.ndarray) -> bool:
        return bool((pixels == colour).all(axis=-1).any())

    assert has(legend, pinned) and has(legend, given)  # the legend names both
    assert not has(text, pinned) and not has(heat, given)  # before the first frame
    scene.draw(rec.frames["left"][0].t)  # the first frame: every other position is still masked
    assert has(text, pinned)
    first = heat[:scene.tracks[0].heat.span(0)[1]]
    columns = [-(-p * scene.heat_w // scene.tracks[0].width) for p in given_positions()]  # a column of each
    assert all((first[:, c] == given).all() for c in columns)
    scene.draw(rec.frames["left"][-1].t)
    assert has(text, pinned) and all((heat[:, c] == given).all() for c in columns)  # given in every row
    plain = Scene(read_recording(EXAMPLES_DIR / "01-confidence-blocks.jsonl"), (1280, 720))
    plain.draw(plain.end)
    assert not has(plain.canvas, pinned) and not has(plain.canvas, given)  # no pins: no pinned legend entry


@pytest.mark.browser
def test_a_pinned_ending_stays_in_every_diffusion_frame_of_a_twin_race(page: Any, recordings: Path) -> None:
    page.click("#pins-box button.label-wrap")  # the pins sit in a closed box under the prompt
    page.locator("#pins textarea").fill("100: The end.")
    start(page, "Once upon a time")
    wait_status(page, "done")
    rec = read_recording(only_recording(recordings))
    assert list(rec.header["sources"]["left"]["settings"]["pins"]) == ["100: The end."]
    assert "pins" not in rec.header["sources"]["right"]["settings"]
    tok = make_source("local-diffusion").tok
    where = sorted(resolve_pins(tok, ["100: The end."], 128))
    want = tok.token_strings(tok.encode(" The end."))
    held = page.evaluate(f"document.querySelector('{ROOT}').convergePlayer.state.sides.left.rows.map(r => r.tok)")
    assert len(held) == len(rec.frames["left"]) > 2
    for row, frame in zip(held, rec.frames["left"]):
        assert [row[p] for p in where] == want == [frame.tokens[p] for p in where]
    assert " The end." in rec.frames["left"][-1].text
    assert " The end." in side_text(page, "left", "cv-text")
    assert_pins_drawn(page, ROOT, where)


def assert_pins_drawn(page: Any, root: str, where: list[int]) -> None:
    """The left panel draws exactly the pinned positions in the pinned style, its heatmap holds them as given from
    the first row on, and the legend shows the pinned entry (the right side, without pins, has none)."""
    drawn = page.evaluate(f"""() => {{
        const root = document.querySelector('{root}'), side = root.convergePlayer.state.sides.left;
        const given = () => [...document.querySelectorAll('{root} .cv-side[data-side=left] .cv-tok.'
                                                           + '{THEME["styles"]["pinned"]["class"]}')]
                            .map((n) => n.textContent).join('');
        const last = given(), panel = root.querySelector('.cv-side[data-side=left]');
        for (let i = 0; i === 0 || (panel.dataset.step !== '0' && i < 1000); i++) {{  // to the left's first frame
          root.convergePlayer.seek(i);
          root.convergePlayer.paint();
        }}
        const cols = {where}.map((p) => [...Array(side.rows.length).keys()].map((r) => side.heat[r * side.heatW + p]));
        return {{text: last, first: given(), step: panel.dataset.step, cols: cols,
                 legend: !root.querySelector('.cv-legend [data-style=pinned]').hidden,
                 heatKey: !root.querySelector('.cv-legend [data-heat=given]').hidden,
                 right: root.convergePlayer.state.sides.right.pinned}};
    }}""")
    tok = make_source("local-diffusion").tok
    assert drawn["text"] == drawn["first"] == " The end." and drawn["step"] == "0"
    r, g, b = hex_rgb(THEME["heat"]["given"])
    assert all(cell == (255 << 24 | b << 16 | g << 8 | r) for col in drawn["cols"] for cell in col)
    assert drawn["legend"] and drawn["heatKey"] and drawn["right"] is None
    assert tok.decode(tok.encode(" The end.")) == drawn["text"]


@pytest.mark.browser
def test_the_html_export_of_a_pinned_race_shows_the_pins_as_given(browser: Any, pinned_recording: Path,
                                                                   tmp_path: Path) -> None:
    out = export_html(pinned_recording, tmp_path / "pinned.html")
    with browser_tab(browser, out.as_uri()) as tab:
        tab.wait_for_selector("#converge[data-status=done][data-mode=replay]")
        assert_pins_drawn(tab, "#converge", given_positions())


@pytest.mark.browser
def test_a_race_without_pins_shows_no_pinned_legend_entry(page: Any) -> None:
    start(page, "Once upon a time")
    wait_status(page, "done")
    hidden = page.evaluate(f"[...document.querySelectorAll('{ROOT} .cv-legend [data-style=pinned], "
                           f"{ROOT} .cv-legend [data-heat=given]')].map((n) => n.hidden)")
    assert hidden == [True, True]
    assert page.evaluate(f"document.querySelectorAll('{ROOT} .cv-side .cv-tok.cv-p').length") == 0


def test_the_write_the_ending_first_lesson_pins_an_ending_the_diffusion_twin_keeps() -> None:
    from app.lessons.guided import LESSONS

    lesson = next(x for x in LESSONS if x.title == "Write the ending first")
    spec, settings = lesson.sources()["left"]
    src = make_source(spec, **settings, pins=lesson.pins)
    text = list(src.stream(lesson.prompt, threading.Event()))[-1].text
    assert lesson.pins.partition(":")[2] in text


def test_pins_that_cannot_be_honoured_are_found_before_either_side_of_a_race_runs(tmp_path: Path) -> None:
    from app.race.run import Race
    from app.ui.race_ui import pins_refusal, unfit_pins

    assert "is not POSITION:TEXT" in (pins_refusal("40: fine\nx:text") or "")
    assert pins_refusal("40: The end.\n") is None and pins_refusal("") is None
    race = Race("Once", "local-diffusion", "local-ar", settings={"left": {"gen_length": 64, "pins": "62:a long end"},
                                                                 "right": {"gen_length": 8}}, folder=tmp_path)
    try:
        assert "falls outside the answer of 64 tokens" in (unfit_pins(race) or "")
        assert all(s.status == "waiting" and not s.frames for s in race.sides.values())  # checked, never started
    finally:
        race.close()
    fits = Race("Once", "local-diffusion", "local-ar", settings={"left": {"pins": ENDING}}, folder=tmp_path)
    fits.close()
    assert unfit_pins(fits) is None


def test_a_pin_of_one_token_says_one_token() -> None:
    tok = make_source("local-diffusion").tok
    one = next(w for w in (" end", " the", " a") if len(tok.encode(w)) == 1)
    with pytest.raises(UserError, match="\\(1 token at 64\\) falls outside the answer of 64 tokens"):
        resolve_pins(tok, [f"64:{one}"], 64)


@pytest.mark.browser
@pytest.mark.parametrize("pins, says", [("x: The end.", "is not POSITION:TEXT"),
                                        ("126: a long ending", "falls outside the answer of 128 tokens")])
def test_a_pin_that_cannot_be_honoured_is_refused_in_the_status_line_and_no_side_runs(
        page: Any, recordings: Path, pins: str, says: str) -> None:
    page.click("#pins-box button.label-wrap")
    page.locator("#pins textarea").fill(pins)
    start(page, "Once upon a time")
    page.wait_for_function(f"s => document.querySelector('{ROOT} .cv-status').textContent.includes(s)", arg=says)
    shown = page.evaluate(f"['left', 'right'].map((k) => document.querySelector('{ROOT}').convergePlayer.state"
                          ".sides[k].rows.length)")
    assert shown == [0, 0]  # neither side ran
    assert list(recordings.glob("*.jsonl")) == []  # and no half-failed run was saved
