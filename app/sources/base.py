"""What every source implements, and the registry that turns a name like `openai:gpt-4o` into one.

A source yields Frames for a prompt and stops when `cancel` is set. Adding a source is one
module that calls `register`; the race, the UI and the CLI find it by name.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Protocol

from app.engine.options import settings_spec
from app.errors import UserError
from app.trace.frames import Frame


class Source(Protocol):
    """Anything that yields frames for a prompt and can be cancelled."""

    name: str

    def settings(self) -> dict[str, Any]:
        """The settings to record in the header (never a key)."""
        ...

    def stream(self, prompt: str, cancel: threading.Event) -> Iterator[Frame]:
        """Yields frames, the last with final=True; raises UserError with a user-facing message."""
        ...


@dataclass
class SourceKind:
    """A registered kind of source: `prefix` is the part of the name before ':'; `takes_key`: its factory
    accepts an `api_key` (the page then offers a key box, and a served page requires a typed key); `options`: the
    settings dataclasses its settings are declared in (app/engine/options.py), as the defaults it starts from;
    `settings`: the page's controls, built from them (`settings_spec`) but for the `hidden` ones."""

    prefix: str
    make: Callable[..., Source]
    label: str
    takes_arg: bool = False
    takes_key: bool = False
    options: tuple[Any, ...] = ()
    hidden: tuple[str, ...] = ()
    settings: dict[str, Any] = field(init=False)

    def __post_init__(self) -> None:
        specs = [settings_spec(o) for o in self.options]
        self.settings = {k: v for spec in specs for k, v in spec.items() if k not in self.hidden}


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
        raise UserError(f"Unknown source {spec!r}. Known sources: {names}.")
    if kind.takes_arg:
        return kind.make(arg, **settings)
    if arg:
        raise UserError(f"Source {prefix!r} takes no ':' argument.")
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
