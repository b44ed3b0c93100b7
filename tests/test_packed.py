"""Both sides' settings reach the Run handler as one box (app/ui/packed.py, issue 52): the handler's inputs are a
score, not two hundred, and each value in the box is read and refused as its own widget would be."""

from __future__ import annotations

import json
from typing import Any

import pytest

from app.serving.policy import LOCAL
from app.ui.guard import NOT_A_CHOICE, OUT_OF_RANGE, UNREADABLE, packed_refusal
from app.ui.layout import build
from app.ui.packed import PACKS, Pack, unpacked


@pytest.fixture(scope="module")
def page() -> tuple[Any, Pack]:
    demo = build(LOCAL)
    race = next(fn for fn in demo.fns.values() if fn.api_name == "race")
    pack = next(PACKS[c._id] for c in race.inputs if c._id in PACKS)
    return demo, pack


def test_the_race_handlers_take_the_settings_as_one_box(page: tuple[Any, Pack]) -> None:
    demo, pack = page
    assert len(pack.widgets) > 150 and all(k.startswith(("left-", "right-")) for k in pack.widgets)
    races = [fn for fn in demo.fns.values() if pack.box in fn.inputs]
    assert len(races) == 3  # Run, and a lesson's Run and Try it
    for fn in races:
        assert len(fn.inputs) < 25 and not set(map(id, fn.inputs)) & set(map(id, pack.widgets.values()))


def test_the_box_reads_as_the_widgets_would_and_a_widget_left_out_keeps_its_default(page: tuple[Any, Pack]) -> None:
    _, pack = page
    defaults = [w.preprocess(w.value) for w in pack.widgets.values()]
    assert unpacked(pack, pack.box.value) == defaults
    steps = list(pack.widgets).index("left-local-diffusion-steps")
    values = unpacked(pack, json.dumps({"left-local-diffusion-steps": 12.0}))
    assert values[steps] == 12 and values[:steps] + values[steps + 1:] == defaults[:steps] + defaults[steps + 1:]
    for bad in ("not json", "[1, 2]", json.dumps({"left-no-such-setting": 1}), None):
        with pytest.raises(ValueError):
            unpacked(pack, bad)


def test_each_value_in_the_box_is_refused_as_its_widget_would_refuse_it(page: tuple[Any, Pack]) -> None:
    _, pack = page
    box = pack.box._id
    assert packed_refusal(box, pack.box.value) is None
    assert packed_refusal(box, json.dumps({"left-local-diffusion-steps": 10**9})) == (OUT_OF_RANGE, "number", 10**9)
    order = next(k for k, w in pack.widgets.items() if type(w).__name__ == "Dropdown")
    assert packed_refusal(box, json.dumps({order: "no such choice"}))[:2] == (NOT_A_CHOICE, "choice")
    assert packed_refusal(box, json.dumps({order: "x" * 1_000}))[0].endswith("characters; shorten it.")
    assert packed_refusal(box, "[1, 2, 3]")[0] == UNREADABLE
