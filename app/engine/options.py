"""Each source setting declared once, as dataclass field metadata: its label, range or choices, and help.

Validation (`check`), reading a value from the page or the CLI (`coerce`), the page's controls (`settings_spec`)
and the flags of `python -m app generate` (app/cli/generate.py) are all derived from the declaration, so they cannot
disagree. Every source kind declares its settings this way: the samplers here, the Hugging Face loader, the API
sources and replay in app/sources/.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from dataclasses import dataclass, field, fields
from typing import Any, Callable

from app.errors import UserError


@dataclass(frozen=True)
class Option:
    """One setting. `max` may name another setting (steps: at most gen_length); `presets` are the values the page
    offers in a list (others in range are valid too); with `off`, None turns the feature off (0 or "off" when given).

    Rules a reading follows (`coerce`): with `clamp`, a number out of range is moved into it rather than refused (the
    API sources, whose servers clamp too); with `follows`, the setting left unset (or given as 0) takes that other
    setting's value (steps: one per answer token); with `replaces`, turning this setting on turns that one off unless
    it was moved from its default (the factor rule replaces the default threshold); with `own`, None (left out, or
    given empty) takes the model's own value, read from its generation config when it loads. `shown`: whether the
    page offers a control (the CLI offers every setting)."""

    label: str
    min: float | None = None
    max: float | str | None = None
    step: float | None = None
    choices: tuple[Any, ...] | None = None
    presets: tuple[Any, ...] | None = None
    off: bool = False
    help: str = ""
    cli: str | None = None  # the flag of `python -m app generate` when not the setting's own name
    clamp: bool = False
    follows: str | None = None
    replaces: str | None = None
    own: bool = False
    shown: bool = True

    @property
    def name(self) -> str:
        """The label without its parenthesis, to start a sentence about the setting."""
        return self.label.split(" (")[0]


def option(default: Any, label: str, **spec: Any) -> Any:
    """A dataclass field with its declaration (the keywords of `Option`)."""
    return field(default=default, metadata={"option": Option(label, **spec)})


TWIN_NO_REPEAT_NGRAM = 4  # the twins' guard: no repeated run of 4 tokens (greedy decoding otherwise loops: "I will be
# fun. I will be fun."; runs of 7 let such short sentences repeat), given to every twin alike so a race compares
# decoding with the same guard on both sides (`python -m app bench --only twins`, "guard")


TWIN_STUTTER_GUARD = True  # the twins' stutter guard (`no_repeat`, app/engine/stutter.py: never a token next to the
# same token), given to every twin alike as the guard above: with runs of 4 it took the masked twin's stutter from
# 0.71% to 0 at a better perplexity and left the AR twin's text as it was; runs of 5 or 6 let sentences repeat
# (`python -m scripts.twin_guard --compare`, docs/twins.md)


def no_repeat_ngram(default: int) -> Any:
    """The guard against repeated runs (app/engine/repeats.py), declared alike for every sampler that runs it: the AR,
    masked and uniform twins' settings each hold it as `no_repeat_ngram`, as transformers' generate() holds
    `no_repeat_ngram_size`."""
    return option(default, "No repeated runs (tokens, 0 = off)", min=0, max=16, step=1,
                  help="Never complete a run of this many tokens that the prompt or answer already has (as Hugging "
                       "Face's no_repeat_ngram_size): breaks the loops greedy decoding falls into. Both twins run it "
                       "alike.")


def stutter_guard(default: bool) -> Any:
    """The stutter guard (app/engine/stutter.py), declared alike for every sampler that runs it: the AR, masked and
    uniform twins' settings each hold it as `no_repeat`, so a race gives both sides the same guards."""
    return option(default, "Stutter guard",
                  help="Never write a token next to the same token: left to right, never the token just written; in "
                       "diffusion, a guess equal to a written neighbour's is not allowed, and of two equal guesses "
                       "side by side one pass keeps only the left (positions written together cannot see each "
                       "other). Newlines and punctuation may repeat: a paragraph break is two newlines. Every "
                       "built-in twin runs it alike.")


def _value_type(hint: Any) -> type:
    """int for `int`, float for `float | None`, tuple for `tuple[str, ...]`."""
    if isinstance(hint, types.UnionType):
        return next(t for t in typing.get_args(hint) if t is not type(None))
    return typing.get_origin(hint) or hint


_DECLARED: dict[type, dict[str, tuple[type, Option]]] = {}  # declared's, read once per class


def declared(cls: type) -> dict[str, tuple[type, Option]]:
    """Every setting of a settings dataclass: name -> (its value type, its declaration); each field must have one."""
    if cls not in _DECLARED:
        hints = typing.get_type_hints(cls)
        _DECLARED[cls] = {f.name: (_value_type(hints[f.name]), f.metadata["option"]) for f in fields(cls)}
    return _DECLARED[cls]


def number(x: float) -> str:
    """A bound as a sentence shows it: 2 rather than 2.0."""
    return f"{x:g}"


def bounds(cls: type, o: Option, top: float | None = None) -> str:
    """What a number may be, as a sentence says it: "between 0 and 2", "above 0 and at most 1 (or off)"; a maximum
    named after another setting reads "the answer length", with its value `top` when given."""
    hi: str | None
    if isinstance(o.max, str):
        hi = f"the {declared(cls)[o.max][1].name.lower()}" + ("" if top is None else f" ({number(top)})")
    else:
        hi = None if o.max is None else number(o.max)
    low = number(o.min or 0)  # a number is declared with its minimum
    if o.off:
        return f"above {low} and at most {hi} (or off)"
    return f"at least {low}" if hi is None else f"between {low} and {hi}"


def shown(value: Any) -> str:
    """A given value as a sentence quotes it: its repr, a whole number of over 20 digits said so (Python will not
    write one of over 4,300 digits at all) and a long text cut short, so any value gets its one sentence."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10 ** 20:
        return "a number of over 20 digits"
    text = repr(value)
    return text if len(text) <= 40 else text[:36] + "\u2026"


def check(settings: Any) -> None:
    """Refuses any setting outside its declared type, range or choices with one sentence naming the fix."""
    for key, (kind, o) in declared(type(settings)).items():
        v = getattr(settings, key)
        if ((o.off or o.own) and v is None) or kind is tuple:
            continue
        fix = f"not {shown(v)}: change {key}."
        if kind is bool and not isinstance(v, bool):
            raise UserError(f"{o.name} must be on or off, {fix}")
        if o.choices is not None and v not in o.choices:
            raise UserError(f"{o.name} must be one of {', '.join(map(str, o.choices))}, {fix}")
        if kind is int and (not isinstance(v, int) or isinstance(v, bool)):
            raise UserError(f"{o.name} must be a whole number, {fix}")
        if kind is float and (not isinstance(v, (int, float)) or isinstance(v, bool)):
            raise UserError(f"{o.name} must be a number, {fix}")
        if kind in (int, float):
            hi = getattr(settings, o.max) if isinstance(o.max, str) else o.max
            if not (o.min < v if o.off else o.min <= v) or (hi is not None and v > hi):
                raise UserError(f"{o.name} must be {bounds(type(settings), o, hi)}, {fix}")


_ON = ("true", "on", "yes", "1")
_NO = ("false", "off", "no", "0")
OFF = (None, "", "off", "none", "None")  # with 0: the values that turn an optional number off (or let it follow)


def on_off(value: Any, name: str) -> bool:
    """The one reading of an on/off setting from the page, the CLI or JSON (True, "on", "yes", "1", ...);
    anything else is refused with a sentence naming the setting."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower() if isinstance(value, (str, int)) else None
    if text in _ON or text in _NO:
        return text in _ON
    raise UserError(f"The {name} setting must be on or off (true or false), not {shown(value)}.")


def _finite(value: Any) -> float:
    """A number from a float, an int or a string; ValueError for a bool, NaN or infinity."""
    if isinstance(value, bool):
        raise ValueError(value)
    x = float(value)
    if not math.isfinite(x):
        raise ValueError(value)
    return x


def _read(key: str, kind: type, o: Option, value: Any, read_tuple: Callable[[Any], tuple[Any, ...]]) -> Any:
    """One given value as its declared type; ValueError or TypeError when it cannot be."""
    if kind is bool:
        return on_off(value, key)
    if kind is int:
        x = _finite(value)
        if x != int(x):
            raise ValueError(value)
        return int(x)
    if kind is float:
        return _finite(value)
    if kind is tuple:
        return read_tuple(value)
    text = str(value)
    if o.choices is not None and text not in o.choices:  # a choice is matched ignoring case and spaces
        return next((c for c in o.choices if str(c).lower() == text.strip().lower()), text)
    return text


def _unset(value: Any) -> bool:
    """Whether a given value means "none given" for a setting that follows another (None, "off", 0)."""
    try:
        return value in OFF or _finite(value) == 0
    except (TypeError, ValueError):
        return False


def lines(value: Any) -> tuple[str, ...]:
    """A list setting from the CLI (a list) or the page (one item a line), blank items dropped."""
    items = value.splitlines() if isinstance(value, str) else list(value or ())
    return tuple(str(v) for v in items if str(v).strip())


def coerce(cls: type, given: dict[str, Any], source: str, base: Any = None,
           read_tuple: Callable[[Any], tuple[Any, ...]] = lines) -> Any:
    """Builds `cls` (a settings dataclass) from the page's or the CLI's raw values, each read as its declared type,
    then checked; settings not given come from `base` (default: cls()), or follow the setting they are declared to.

    Numbers may come as floats or strings; 0 or "off" turns an optional setting off; None leaves a setting unset;
    `read_tuple` reads a list setting (pins). The declared rules then apply: clamp, follows, replaces (`Option`)."""
    settings = declared(cls)
    defaults = base if base is not None else cls()
    out: dict[str, Any] = {}
    follow = [k for k, (_, o) in settings.items() if o.follows and k not in given]
    for key, value in given.items():
        if key not in settings:
            raise UserError(f"{source} has no setting {shown(key)}; its settings are: {', '.join(settings)}.")
        kind, o = settings[key]
        if o.follows and _unset(value):
            follow.append(key)
            continue
        try:
            if o.off and (value in OFF or _finite(value) == 0):
                out[key] = None
            elif o.own and isinstance(value, str) and not value.strip():
                out[key] = None
            elif value is not None:
                out[key] = _read(key, kind, o, value, read_tuple)
        except (TypeError, ValueError, OverflowError):
            give = {int: "a whole number", float: "a number"}.get(kind, "text")
            raise UserError(f"Setting {key} of {source} cannot be {shown(value)}: give {give}.") from None
    s = dataclasses.replace(defaults, **out)
    for key, (kind, o) in settings.items():
        v = getattr(s, key)
        if o.clamp and v is not None:
            hi = getattr(s, o.max) if isinstance(o.max, str) else o.max
            setattr(s, key, kind(max(o.min, v) if hi is None else min(max(o.min, v), hi)))
    for key in follow:
        setattr(s, key, getattr(s, str(settings[key][1].follows)))
    for key, (_, o) in settings.items():
        if o.replaces and out.get(key) is not None and out.get(o.replaces, getattr(defaults, o.replaces)) == \
                getattr(defaults, o.replaces):
            setattr(s, o.replaces, None)
    if hasattr(s, "validate"):
        return s.validate()
    check(s)
    return s


def settings_spec(s: Any) -> dict[str, dict[str, Any]]:
    """The page's control for each shown setting of `s` (a settings dataclass, giving the defaults), from its
    declaration: a setting that may be off, or that follows another, offers 0 for that; one that may be the model's
    own is a number box left empty for that (`own` in its entry)."""
    settings = declared(type(s))
    out: dict[str, dict[str, Any]] = {}
    for name, (kind, o) in settings.items():
        if kind is tuple or not o.shown:
            continue  # pins have their own box on the page
        value = getattr(s, name)
        entry = {"default": value, "label": o.label}
        if o.off:
            entry.update(default=value or 0.0, label=f"{o.label} (0 = off)")
        if o.follows:
            follows = f"0 = the {settings[o.follows][1].name.lower()}"
            label = f"{o.label[:-1]}; {follows})" if o.label.endswith(")") else f"{o.label} ({follows})"
            entry.update(default=0, label=label)
        if o.own:
            own = "empty = the model's own"
            label = f"{o.label[:-1]}; {own})" if o.label.endswith(")") else f"{o.label} ({own})"
            entry.update(label=label, own=True)
        if kind is bool:
            entry["choices"] = [True, False]
        elif o.choices or o.presets:
            entry["choices"] = list(o.choices or o.presets or ())
        elif kind in (int, float):  # a slider; a maximum named after another setting is its largest offered value
            top = max(settings[o.max][1].presets or ()) if isinstance(o.max, str) else o.max
            entry.update(min=0 if o.follows else o.min, max=top, step=o.step)
        if o.help:
            entry["info"] = o.help
        out[name] = entry
    return out
