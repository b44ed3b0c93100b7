"""What every source implements, and the registry that turns a name like `openai:gpt-4o` into one.

A source yields Frames for a prompt and stops when `cancel` is set. Adding a source is one
module that calls `register`; the race, the UI and the CLI find it by name.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Protocol

from app.errors import SourceError
from app.trace import Frame


_ON = ("true", "on", "yes", "1")
_OFF = ("false", "off", "no", "0")  # local.OFF is another thing: the words that turn an optional number off


def on_off(value: Any, name: str) -> bool:
    """The one reading of an on/off setting from the page, the CLI or JSON (True, "on", "yes", "1", ...);
    anything else is refused with a sentence naming the setting."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower() if isinstance(value, (str, int)) else None
    if text in _ON or text in _OFF:
        return text in _ON
    raise SourceError(f"The {name} setting must be on or off (true or false), not {value!r}.")


class Source(Protocol):
    """Anything that yields frames for a prompt and can be cancelled."""

    name: str

    def settings(self) -> dict[str, Any]:
        """The settings to record in the header (never a key)."""
        ...

    def stream(self, prompt: str, cancel: threading.Event) -> Iterator[Frame]:
        """Yields frames, the last with final=True; raises SourceError with a user-facing message."""
        ...


@dataclass
class SourceKind:
    """A registered kind of source: `prefix` is the part of the name before ':'; `takes_key`: its factory
    accepts an `api_key` (the page then offers a key box, and a served page requires a typed key)."""

    prefix: str
    make: Callable[..., Source]
    label: str
    takes_arg: bool = False
    takes_key: bool = False
    settings: dict[str, Any] = field(default_factory=dict)


REGISTRY: dict[str, SourceKind] = {}


def register(kind: SourceKind) -> SourceKind:
    REGISTRY[kind.prefix] = kind
    return kind


def make_source(spec: str, **settings: Any) -> Source:
    """Builds the source named by `spec` (`local-ar`, `mercury:mercury-2`, `replay:PATH`...)."""
    load_plugins()
    prefix, _, arg = spec.partition(":")
    kind = REGISTRY.get(prefix)
    if kind is None:
        names = ", ".join(sorted(REGISTRY))
        raise SourceError(f"Unknown source {spec!r}. Known sources: {names}.")
    if kind.takes_arg:
        return kind.make(arg, **settings)
    if arg:
        raise SourceError(f"Source {prefix!r} takes no ':' argument.")
    return kind.make(**settings)


_loaded = False


def load_plugins() -> None:
    """Imports the bundled source modules once; each registers itself."""
    global _loaded
    if _loaded:
        return
    _loaded = True
    import importlib
    import pkgutil

    import app.sources as pkg

    for info in pkgutil.iter_modules(pkg.__path__):
        if info.name != "base":
            importlib.import_module(f"app.sources.{info.name}")
