"""Each setting is declared once (app/engine/options.py): validation, the page's controls, the CLI flags and coercion
all follow the declaration, so a range cannot differ between them."""

from __future__ import annotations

import dataclasses
import re
import subprocess
import sys
from pathlib import Path

import pytest

from app.cli.generate import describe
from app.engine.autoregressive import ARSettings
from app.engine.diffusion import DiffusionSettings
from app.engine.options import check, coerce, declared, number
from app.errors import UserError
from app.hf.llada2 import PipelineSettings
from app.sources.base import REGISTRY
from app.sources.hf import HFLoad

ROOT = Path(__file__).resolve().parent.parent
CLASSES = (DiffusionSettings, ARSettings, HFLoad, PipelineSettings)
# a valid base for trying each number at its declared extremes: room for the largest values, and for the smallest
LARGE = {DiffusionSettings: DiffusionSettings(threshold=None), ARSettings: ARSettings(),
         PipelineSettings: PipelineSettings()}
SMALL = {DiffusionSettings: DiffusionSettings(gen_length=1, steps=1, block_length=1, threshold=None),
         ARSettings: ARSettings(), PipelineSettings: PipelineSettings()}


def numbers(cls: type) -> list[tuple[str, type, object]]:
    return [(name, kind, o) for name, (kind, o) in declared(cls).items() if kind in (int, float)]


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_every_setting_has_a_declaration_with_a_label_and_a_range_or_choices(cls: type) -> None:
    assert [f.name for f in dataclasses.fields(cls)] == list(declared(cls))
    for name, (kind, o) in declared(cls).items():
        assert o.label and kind in (int, float, bool, str, tuple), name
        if kind in (int, float):
            assert o.min is not None and (o.max is not None or o.presets), name
        if kind is str:
            assert o.choices or o.presets, name


@pytest.mark.parametrize("cls", (DiffusionSettings, ARSettings), ids=lambda c: c.__name__)
def test_each_number_validates_at_its_declared_bounds_and_is_refused_one_step_beyond(cls: type) -> None:
    for name, kind, o in numbers(cls):
        step = o.step or 1
        if o.max is not None:
            top = getattr(LARGE[cls], o.max) if isinstance(o.max, str) else o.max
            dataclasses.replace(LARGE[cls], **{name: kind(top)}).validate()
            assert getattr(coerce(cls, {name: str(top)}, "test", LARGE[cls]), name) == top
            with pytest.raises(UserError, match=rf"^{o.name} must be .*{number(top)}.*: change {name}\.$"):
                dataclasses.replace(LARGE[cls], **{name: kind(top + step)}).validate()
        low = o.min + step if o.off else o.min
        dataclasses.replace(SMALL[cls], **{name: kind(low)}).validate()
        with pytest.raises(UserError, match=rf"^{o.name} must be .*: change {name}\.$"):
            dataclasses.replace(SMALL[cls], **{name: kind(low - step)}).validate()


def test_both_samplers_offer_and_accept_temperatures_from_0_to_2() -> None:
    for cls in (DiffusionSettings, ARSettings):
        cls(temperature=2.0).validate()
        with pytest.raises(UserError, match="Temperature must be between 0 and 2"):
            cls(temperature=2.5).validate()
        assert (REGISTRY["local-diffusion" if cls is DiffusionSettings else "local-ar"]
                .settings["temperature"]["max"] == 2.0)


def test_coercion_reads_each_value_as_its_declared_type() -> None:
    s = coerce(DiffusionSettings, {"steps": 32.0, "temperature": "1", "scoring": "margin", "prefix_cache": "off",
                                         "threshold": "off", "filter": "0.5", "pins": "3:cat"}, "test")
    assert (s.steps, s.temperature, s.scoring, s.prefix_cache, s.threshold, s.filter, s.pins) == \
        (32, 1.0, "margin", False, None, 0.5, ("3:cat",))
    assert type(s.steps) is int and type(s.temperature) is float
    with pytest.raises(UserError, match="Setting seed of test cannot be 1.5: give a whole number"):
        coerce(ARSettings, {"seed": 1.5}, "test")
    with pytest.raises(UserError, match="Setting top_p of test cannot be 'most': give a number"):
        coerce(ARSettings, {"top_p": "most"}, "test")
    assert coerce(HFLoad, {"chat": "no", "device": "cuda:1"}, "test") == HFLoad(chat=False, device="cuda:1")
    with pytest.raises(UserError, match="Dtype must be one of auto, float32, bfloat16, float16, not 'int4'"):
        coerce(HFLoad, {"dtype": "int4"}, "test")


def test_a_number_of_any_length_is_refused_in_one_short_sentence() -> None:
    """A number of 5,000 digits is past what Python writes as text (its int conversion limit), so quoting it back
    failed and the page said only "Something went wrong"; a long text is quoted cut short."""
    for given in ({"seed": 10**5000}, {"gen_length": 10**5000}, {"seed": "9" * 5000}, {"stop_at_eos": 10**5000}):
        with pytest.raises(UserError) as refused:
            coerce(ARSettings, given, "test")
        said = str(refused.value)
        assert len(said) < 120 and said.endswith(".") and said.count(".") == 1, said
    with pytest.raises(UserError, match="^Seed must be between 0 and 9999, not a number of over 20 digits: change"):
        check(dataclasses.replace(ARSettings(), seed=10**5000))


def test_the_filter_control_is_offered_only_where_the_default_model_ships_a_filter() -> None:
    assert "filter" in REGISTRY["local-diffusion"].settings and "filter" not in REGISTRY["hf-diffusion"].settings


def test_generate_help_lists_every_declared_setting_with_its_help() -> None:
    proc = subprocess.run([sys.executable, "-m", "app", "generate", "--help"], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    flat = re.sub(r"\s+", "", proc.stdout)  # help is wrapped at spaces and hyphens
    shown: set[str] = set()
    for cls in CLASSES:  # a setting of both samplers is described once, by the first
        for name, (_, o) in declared(cls).items():
            flag = "--" + (o.cli or name).replace("_", "-")
            assert re.search(rf"{flag} [A-Z_:]+\s", proc.stdout), flag
            if name not in shown:
                assert re.sub(r"\s+", "", describe(cls, name)) in flat, flag
            shown.add(name)
