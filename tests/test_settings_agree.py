"""For every source kind and each backend it runs on, the page's controls, the validation and the flags of `python -m
app generate` agree, because all three are read from one declaration of each setting (app/engine/options.py) and the
backend's list of what it honours (app/sources/base.py `Backend`)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from app.cli.generate import describe, parser
from app.engine.options import Option, coerce, declared
from app.errors import UserError
from app.sources.base import REGISTRY, Backend, load_plugins

load_plugins()
KINDS = sorted(REGISTRY)
BACKENDS = [(prefix, b.key) for prefix in KINDS for b in REGISTRY[prefix].backends]


def backend(prefix: str, key: str) -> Backend:
    return next(b for b in REGISTRY[prefix].backends if b.key == key)


def declarations(prefix: str, key: str) -> list[tuple[Any, str, type, Option]]:
    """(the defaults object, name, value type, declaration) of every setting the backend honours."""
    b = backend(prefix, key)
    return [(d, name, kind, o) for d in b.options for name, (kind, o) in declared(type(d)).items() if name in b.names]


def read(d: Any, given: dict[str, Any]) -> Any:
    """The settings a source of this kind would run with for these raw values (its defaults from `d`)."""
    return coerce(type(d), given, "test", base=d)


def page_top(d: Any, o: Option) -> float:
    """The largest value the page's slider offers (a maximum named after another setting: its largest preset)."""
    return max(declared(type(d))[o.max][1].presets) if isinstance(o.max, str) else o.max


@pytest.mark.parametrize(("prefix", "key"), BACKENDS)
def test_every_backend_declares_its_settings_and_the_page_offers_exactly_the_shown_ones(prefix: str, key: str) -> None:
    b = backend(prefix, key)
    assert b.options and b.names, f"{prefix} ({key}) declares no settings with option()"
    shown = {name for _, name, kind, o in declarations(prefix, key) if o.shown and kind is not tuple}
    assert set(b.settings) == shown and set(b.settings) <= set(REGISTRY[prefix].settings)


@pytest.mark.parametrize(("prefix", "key"), BACKENDS)
def test_each_control_shows_the_declared_label_help_and_range(prefix: str, key: str) -> None:
    spec = backend(prefix, key).settings
    for d, name, kind, o in declarations(prefix, key):
        if name not in spec:
            continue
        entry = spec[name]
        assert entry["label"].startswith(o.label.rstrip(")")) and entry.get("info", "") == o.help, name
        if kind is bool:
            assert entry["choices"] == [True, False]
        elif o.choices or o.presets:
            assert entry["choices"] == list(o.choices or o.presets), name
        elif kind in (int, float):
            low = 0 if o.follows else o.min
            assert (entry["min"], entry["max"], entry["step"]) == (low, page_top(d, o), o.step), name
        else:
            assert not {"min", "max", "choices"} & set(entry), name  # free text: a textbox


@pytest.mark.parametrize(("prefix", "key"), BACKENDS)
def test_the_controls_at_their_defaults_run_the_kinds_defaults(prefix: str, key: str) -> None:
    """The page passes its raw values back: left alone, they are the settings the kind starts from (steps included,
    which follow the answer length)."""
    spec = backend(prefix, key).settings
    for d in backend(prefix, key).options:
        given = {name: spec[name]["default"] for name in declared(type(d)) if name in spec}
        assert read(d, given) == d


@pytest.mark.parametrize(("prefix", "key"), BACKENDS)
def test_validation_accepts_every_value_a_control_offers_and_nothing_beyond(prefix: str, key: str) -> None:
    spec = backend(prefix, key).settings
    for d, name, kind, o in declarations(prefix, key):
        if name not in spec or kind not in (int, float):
            continue
        room = {o.max: page_top(d, o)} if isinstance(o.max, str) else {}  # the other setting at its largest too
        values = spec[name].get("choices") or [spec[name]["min"], spec[name]["max"]]
        for value in values:
            got = getattr(read(d, {**room, name: value}), name)
            assert got == value or (value == 0 and (o.off or o.follows)), (name, value, got)
        if "choices" in spec[name]:
            continue
        step = o.step or 1
        for beyond, nearest in ((spec[name]["max"] + step, spec[name]["max"]), (o.min - step, o.min)):
            if o.clamp:
                assert getattr(read(d, {**room, name: beyond}), name) == nearest, name
            elif not (o.follows and beyond == 0):  # 0 is how the page says "follow"
                with pytest.raises(UserError):
                    read(d, {**room, name: beyond})


def test_openai_max_tokens_offered_and_accepted_are_one_range() -> None:
    spec = REGISTRY["openai"].settings["max_tokens"]
    (d,) = REGISTRY["openai"].options
    assert read(d, {"max_tokens": spec["max"]}).max_tokens == spec["max"]
    assert read(d, {"max_tokens": spec["max"] * 10}).max_tokens == spec["max"]


@pytest.mark.parametrize(("prefix", "key"), BACKENDS)
def test_every_setting_has_a_generate_flag_described_by_its_declaration(prefix: str, key: str) -> None:
    p = parser()
    actions = {a.dest: a for a in p._actions}
    for d, name, kind, o in declarations(prefix, key):
        assert name in actions, f"generate has no flag for {prefix}'s {name}"
        flag = actions[name].option_strings[-1]
        assert flag == "--" + (o.cli or name).replace("_", "-")
        assert re.sub(r"\s+", "", describe(type(d), name)) in re.sub(r"\s+", "", actions[name].help), (prefix, name)
        if kind in (int, float) and name in REGISTRY[prefix].settings:
            top = REGISTRY[prefix].settings[name].get("max")
            if top is None:
                continue
            args = vars(p.parse_args(["--prompt", "p", flag, str(top)]))
            room = {o.max: top} if isinstance(o.max, str) else {}
            assert getattr(read(d, {**room, name: args[name]}), name) == top, (prefix, name)



def test_titles_compare_a_following_setting_with_its_declared_default_not_the_controls_0() -> None:
    from app.analysis.labels import side_labels
    from app.sources.base import setting_defaults

    labels = side_labels({"left": {"name": "local-diffusion", "settings": {"steps": 128}},
                          "right": {"name": "local-diffusion", "settings": {"steps": 32}}}, setting_defaults())
    assert labels == {"left": "local-diffusion \u00b7 defaults", "right": "local-diffusion \u00b7 steps=32"}
