"""Each sampler setting declared once, as dataclass field metadata: its label, range or choices, and help.

Validation (`check`), the page's controls and coercion (app/sources/local.py) and the flags of
`python -m app generate` (app/generate.py) are all derived from the declaration, so they cannot disagree.
"""

from __future__ import annotations

import functools
import types
import typing
from dataclasses import dataclass, field, fields
from typing import Any

from app.errors import SourceError


@dataclass(frozen=True)
class Option:
    """One setting. `max` may name another setting (steps: at most gen_length); `presets` are the values the page
    offers in a list (others in range are valid too); with `off`, None turns the feature off (0 or "off" when given)."""

    label: str
    min: float | None = None
    max: float | str | None = None
    step: float | None = None
    choices: tuple[Any, ...] | None = None
    presets: tuple[Any, ...] | None = None
    off: bool = False
    help: str = ""
    cli: str | None = None  # the flag of `python -m app generate` when not the setting's own name

    @property
    def name(self) -> str:
        """The label without its parenthesis, to start a sentence about the setting."""
        return self.label.split(" (")[0]


def option(default: Any, label: str, **spec: Any) -> Any:
    """A dataclass field with its declaration (the keywords of `Option`)."""
    return field(default=default, metadata={"option": Option(label, **spec)})


def _value_type(hint: Any) -> type:
    """int for `int`, float for `float | None`, tuple for `tuple[str, ...]`."""
    if isinstance(hint, types.UnionType):
        return next(t for t in typing.get_args(hint) if t is not type(None))
    return typing.get_origin(hint) or hint


@functools.cache
def declared(cls: type) -> dict[str, tuple[type, Option]]:
    """Every setting of a settings dataclass: name -> (its value type, its declaration); each field must have one."""
    hints = typing.get_type_hints(cls)
    return {f.name: (_value_type(hints[f.name]), f.metadata["option"]) for f in fields(cls)}


def number(x: float) -> str:
    """A bound as a sentence shows it: 2 rather than 2.0."""
    return f"{x:g}"


def bounds(cls: type, o: Option, top: float | None = None) -> str:
    """What a number may be, as a sentence says it: "between 0 and 2", "above 0 and at most 1 (or off)"; a maximum
    named after another setting reads "the answer length", with its value `top` when given."""
    if isinstance(o.max, str):
        hi = f"the {declared(cls)[o.max][1].name.lower()}" + ("" if top is None else f" ({number(top)})")
    else:
        hi = None if o.max is None else number(o.max)
    if o.off:
        return f"above {number(o.min)} and at most {hi} (or off)"
    return f"at least {number(o.min)}" if hi is None else f"between {number(o.min)} and {hi}"


def check(settings: Any) -> None:
    """Refuses any setting outside its declared type, range or choices with one sentence naming the fix."""
    for key, (kind, o) in declared(type(settings)).items():
        v = getattr(settings, key)
        if (o.off and v is None) or kind is tuple:
            continue
        fix = f"not {v!r}: change {key}."
        if kind is bool and not isinstance(v, bool):
            raise SourceError(f"{o.name} must be on or off, {fix}")
        if o.choices is not None and v not in o.choices:
            raise SourceError(f"{o.name} must be one of {', '.join(map(str, o.choices))}, {fix}")
        if kind is int and (not isinstance(v, int) or isinstance(v, bool)):
            raise SourceError(f"{o.name} must be a whole number, {fix}")
        if kind is float and (not isinstance(v, (int, float)) or isinstance(v, bool)):
            raise SourceError(f"{o.name} must be a number, {fix}")
        if kind in (int, float):
            hi = getattr(settings, o.max) if isinstance(o.max, str) else o.max
            if not (o.min < v if o.off else o.min <= v) or (hi is not None and v > hi):
                raise SourceError(f"{o.name} must be {bounds(type(settings), o, hi)}, {fix}")
