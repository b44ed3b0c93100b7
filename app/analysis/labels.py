"""Panel titles: a race's side names, with the settings that tell two runs of one source apart; and a run's name in a
list: its sources, with the settings each moved from the defaults."""

from __future__ import annotations

from typing import Any


def side_labels(sources: dict[str, Any], defaults: dict[str, dict[str, Any]] | None = None) -> dict[str, str]:
    """Panel titles from a header's sources: the source name, plus, when both sides run the same source (compare
    mode: "local-diffusion · scoring=random"), the settings that differ between them, each side naming only those
    it moved from the source's default (`defaults`: source prefix -> setting -> default; None is written "off"), or
    "defaults" when it moved none of them."""
    def entry(side: str) -> tuple[str, dict[str, Any]]:
        given = sources.get(side)
        value = given if isinstance(given, dict) else {}
        settings = value.get("settings")
        settings = settings if isinstance(settings, dict) else {}
        return str(value.get("name", side)), settings

    names = {side: entry(side) for side in sources}
    if len(names) != 2 or len({name for name, _ in names.values()}) != 1:
        return {side: name for side, (name, _) in names.items()}
    (_, a), (_, b) = names.values()
    differ = [k for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]

    def moved(name: str, settings: dict[str, Any]) -> list[str]:
        known = (defaults or {}).get(name.partition(":")[0])
        return [k for k in differ if known is None or k not in known or not _same(settings.get(k), known[k])]

    def title(name: str, settings: dict[str, Any]) -> str:
        keys = moved(name, settings)
        if differ and not keys:
            return name + " \u00b7 defaults"  # the other side moved something; this one is at its defaults
        return name + "".join(f" \u00b7 {k}={_setting_text(settings.get(k))}" for k in keys[:3])

    return {side: title(name, settings) for side, (name, settings) in names.items()}


MOVED_SHOWN = 6  # settings a side's name lists before "+N more"
VALUE_CHARS = 40  # a setting's value as a name shows it (a recording from elsewhere may hold any text there)


def moved_settings(name: str, settings: dict[str, Any], defaults: dict[str, dict[str, Any]]) -> list[str]:
    """"key=value" for each setting source `name` declares (`defaults`: source prefix -> setting -> default) that is
    not its default, in the order the recording lists them, and "pins" when text was pinned; what a source records
    beyond its settings (its model, its address) is not a setting."""
    known = defaults.get(name.partition(":")[0], {})
    moved = [f"{key}={_setting_text(value)[:VALUE_CHARS]}" for key, value in settings.items()
             if key in known and not _same(value, known[key])]
    return moved + (["pins"] if settings.get("pins") else [])


def run_name(sources: dict[str, Any], defaults: dict[str, dict[str, Any]]) -> str:
    """What a run is, from its header's sources: each side's source with the settings it moved from the defaults,
    "local-diffusion (steps=32, scoring=random) vs local-ar", so two runs of one pair of sources read apart in a list
    (the presenter's picker)."""
    parts = []
    for side in ("left", "right"):
        entry = sources.get(side)
        if not isinstance(entry, dict):
            continue
        name, settings = str(entry.get("name", side)), entry.get("settings")
        moved = moved_settings(name, settings if isinstance(settings, dict) else {}, defaults)
        more = f", +{len(moved) - MOVED_SHOWN} more" if len(moved) > MOVED_SHOWN else ""
        parts.append(f"{name} ({', '.join(moved[:MOVED_SHOWN])}{more})" if moved else name)
    return " vs ".join(parts)


def _same(value: Any, default: Any) -> bool:
    """Whether a setting reads as its default (None, 0 and False all mean off)."""
    off = (None, 0, False)
    return value == default or (value in off and default in off and not isinstance(value, str))


def _setting_text(value: Any) -> str:
    return "off" if value is None else str(value)
