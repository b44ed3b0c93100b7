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
from app.engine.pins import AR_REFUSAL, resolve_pins
from app.errors import SourceError
from app.sources.base import make_source
from tests.hostile import HOSTILE, as_stored
from app.trace import read_recording
from tests.test_hf import tiny  # noqa: F401 (the tiny Hugging Face models fixture)
from tests.test_samplers import PROMPT, config
from tests.test_ui import ROOT, examples, only_recording, page, server_url, side_text, start, wait_status  # noqa: F401

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
    with pytest.raises(SourceError) as e:
        list(make_source("local-diffusion", gen_length=64, pins=pins).stream("Once", threading.Event()))
    assert says in str(e.value) and str(e.value).count(". ") == 0


def test_hf_diffusion_keeps_pins_and_refuses_text_its_tokenizer_cannot_spell(tiny: dict[str, Path]) -> None:
    src = make_source(f"hf-diffusion:{tiny['bert']}", gen_length=16, steps=8, block_length=8, stop_at_eos=False,
                      chat=False, pins=["12:cat"])
    frames = list(src.stream("once upon a time", threading.Event()))
    assert all(f.tokens[12].strip() == "cat" and not f.masked[12] for f in frames)
    with pytest.raises(SourceError, match="does not tokenize to whole positions: use plain text"):
        resolve_pins(src.tok, ["3:qqqzzz"], 16)


def test_an_autoregressive_source_refuses_pins_and_accepts_none() -> None:
    with pytest.raises(SourceError) as e:
        make_source("local-ar", pins=["3:end"])
    assert str(e.value) == AR_REFUSAL
    assert make_source("local-ar", pins="").name == "local-ar"


def test_hostile_text_through_the_pin_path_comes_back_as_the_same_text() -> None:
    ran = 0
    for name, text in HOSTILE.items():
        src = make_source("local-diffusion", gen_length=256, steps=2, block_length=256, pins=[f"0:{text}"])
        try:
            frames = list(src.stream("Once", threading.Event()))
        except SourceError as e:  # too long or not whole tokens for this tokenizer: still one sentence
            assert "\n" not in str(e) and str(e).endswith("."), name
            continue
        ran += 1
        assert frames[-1].text.startswith(as_stored(text)), name
    assert ran >= len(HOSTILE) // 2


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


def test_the_write_the_ending_first_lesson_pins_an_ending_the_diffusion_twin_keeps() -> None:
    from app.lessons import LESSONS

    lesson = next(x for x in LESSONS if x.title == "Write the ending first")
    spec, settings = lesson.sources()["left"]
    src = make_source(spec, **settings, pins=lesson.pins)
    text = list(src.stream(lesson.prompt, threading.Event()))[-1].text
    assert lesson.pins.partition(":")[2] in text
