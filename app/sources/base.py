"""What every source implements, and the registry that turns a name like `openai:gpt-4o` into one.

A source yields Frames for a prompt and stops when `cancel` is set. Adding a source is one
module that calls `register`; the race, the UI and the CLI find it by name.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Callable, Iterator, Protocol, cast

from app.engine.draft import Plan, Revision
from app.engine.options import declared, settings_spec
from app.errors import UserError
from app.trace.frames import Frame


class Source(Protocol):
    """Anything that yields frames for a prompt and can be cancelled. What it offers beyond that is declared, so the
    race need not probe (`SourceBase` offers none of it, and a source that inherits it declares only what it does)."""

    name: str
    cpu_bound: bool  # it runs a local model: a race gives it one of the shared CPU slots (app/race/compute.py)
    defers: bool  # stream(defer=True) leaves decoding its frames' strings to Frame.ready(), off its clock
    notice: str | None  # a sentence for the user about a setting it changed, shown when it starts and ends
    plan: Plan | None  # set by `revise`: the draft its next stream starts from (None: from nothing)
    cannot_why: str  # why it cannot start from a draft, where it cannot (app/sources/revise.py `cannot`)

    def settings(self) -> dict[str, Any]:
        """The settings to record in the header (never a key)."""
        ...

    def stream(self, prompt: str, cancel: threading.Event, defer: bool = False) -> Iterator[Frame]:
        """Yields frames, the last with final=True; raises UserError with a user-facing message. The race passes
        `defer=self.defers`, so only a source that `defers` is ever asked to."""
        ...

    def check_pins(self) -> None:
        """Raises the UserError its pins would raise in its run (text its tokenizer cannot spell, past the answer,
        overlapping), so the page refuses them before either side runs; nothing for a source without pins."""
        ...

    def revise(self, revision: Revision, prompt: str) -> Plan:
        """Its plan for starting from `revision`'s draft (app/sources/revise.py), kept for its next `stream`, which
        then starts from it; a UserError when the draft cannot fit. A plan that is not `revise` says why in `notice`."""
        ...

    def draft_json(self) -> dict[str, Any] | None:
        """Its plan as the header's sources entry keeps it (`Plan.to_json`, the draft as its display strings)."""
        ...

    def planned(self, plan: Plan) -> Plan:
        """Keeps `plan` for its next stream and says what it means for this side (its note) in `notice`."""
        ...


class SourceBase:
    """The defaults of a Source's optional parts: not CPU-bound, decodes its own frames, changed no setting.
    Why: a source inherits this and sets only what it does, so the race reads every part without probing."""

    cpu_bound = False
    defers = False
    notice: str | None = None
    plan: Plan | None = None  # set by `revise`: the draft its next stream starts from
    cannot_why = "it takes no text to start from"  # why it cannot start from a draft, in `cannot`'s sentence

    def check_pins(self) -> None:
        """A source that takes no pins has none to refuse."""

    def revise(self, revision: Revision, prompt: str) -> Plan:
        """A source with no way to start from text writes from nothing and says so (app/sources/revise.py `cannot`)."""
        from app.sources.revise import cannot

        return self.planned(cannot(cast(Source, self).name, self.cannot_why))  # a base only a Source inherits

    def draft_json(self) -> dict[str, Any] | None:
        """Its plan as the header keeps it; a source without a tokenizer of its own shows no draft tokens."""
        from app.sources.revise import header_entry

        return header_entry(self.plan, None) if self.plan is not None else None

    def planned(self, plan: Plan) -> Plan:
        """Keeps `plan` for the next stream and adds its note (an AR prefix, a source that cannot) to `notice`."""
        self.plan = plan
        if plan.note:
            self.notice = f"{self.notice} {plan.note}" if self.notice else plan.note
        return plan


@dataclass
class Backend:
    """One way a kind of source runs, and the settings it honours: those declared in `options` (settings
    dataclasses, as the defaults it starts from; app/engine/options.py) but the ones named in `without`, which that
    way of running never applies. `why_not` holds the sentence that refuses one of those where a general one would
    mislead or a pointer helps (pins on an autoregressive model); `{source}` and `{name}` in it name the source and
    the setting. What the page shows, what the CLI accepts and what the recording keeps all follow `names`; a backend
    that writes around pinned text is one that declares `pins`."""

    key: str
    label: str
    options: tuple[Any, ...] = ()
    without: tuple[str, ...] = ()
    why_not: dict[str, str] = field(default_factory=dict)

    @property
    def names(self) -> tuple[str, ...]:
        """The settings this backend honours, in declaration order."""
        return tuple(n for o in self.options for n in declared(type(o)) if n not in self.without)

    @property
    def settings(self) -> dict[str, dict[str, Any]]:
        """The page's control for each setting it honours and shows (`settings_spec`)."""
        return {k: v for o in self.options for k, v in settings_spec(o).items() if k not in self.without}

    @property
    def pins(self) -> bool:
        """Whether this backend writes around pinned text (it declares the `pins` setting)."""
        return "pins" in self.names

    def refuse(self, given: dict[str, Any], source: str) -> None:
        """A UserError, one sentence naming `source` and the setting, for the first given setting this backend does
        not honour; a setting given as None, or pins given as none, is no setting."""
        for name, value in given.items():
            if name in self.names or value is None or (name == "pins" and not value):
                continue
            why = self.why_not.get(name, "{source} has no setting {name!r}; its settings are: {names}.")
            raise UserError(why.format(source=source, name=name, names=", ".join(self.names)))


@dataclass
class SourceKind:
    """A registered kind of source: `prefix` is the part of the name before ':'; `takes_key`: its factory
    accepts an `api_key` (the page then offers a key box, and a served page requires a typed key); `passes`: other
    keywords its factory takes that are no settings (replay's `paths` and `owner`).

    Its settings are declared per backend: `options` and `without` make its one backend, or `backends` lists several,
    the first the default, and `backend_of(arg)` picks one for the part after ':' cheaply, before anything is loaded
    (hf-diffusion: from the model's config, a masked sampler or LLaDA2's pipeline). `settings`: every control any of
    its backends shows, for the page to render (each shown only while its backend is picked) and for titles'
    defaults."""

    prefix: str
    make: Callable[..., Source]
    label: str
    takes_arg: bool = False
    takes_key: bool = False
    options: tuple[Any, ...] = ()
    without: tuple[str, ...] = ()
    why_not: dict[str, str] = field(default_factory=dict)
    backends: tuple[Backend, ...] = ()
    backend_of: Callable[[str], str] | None = None
    passes: tuple[str, ...] = ()
    settings: dict[str, Any] = field(init=False)

    def __post_init__(self) -> None:
        if not self.backends:
            self.backends = (Backend(self.prefix, self.label, self.options, self.without, self.why_not),)
        self.settings = {}
        for b in self.backends:
            for name, spec in b.settings.items():
                if self.settings.setdefault(name, spec) != spec:
                    raise ValueError(f"{self.prefix}'s backends show {name} differently")

    def backend(self, arg: str = "") -> Backend:
        """The backend a source of this kind named with `arg` runs on (the first when the kind has one, or when
        `backend_of` names none of them)."""
        key = self.backend_of(arg) if self.backend_of is not None and len(self.backends) > 1 else None
        return next((b for b in self.backends if b.key == key), self.backends[0])

    @property
    def defaults(self) -> tuple[Any, ...]:
        """Every backend's settings dataclasses, as the defaults each starts from."""
        return tuple(o for b in self.backends for o in b.options)


REGISTRY: dict[str, SourceKind] = {}


def register(kind: SourceKind) -> SourceKind:
    REGISTRY[kind.prefix] = kind
    return kind


def kind_of(spec: str) -> tuple[SourceKind, str]:
    """The registered kind a source name like `hf-ar:gpt2` names, and the part after ':'; a UserError listing the
    known ones for any other."""
    load_plugins()
    prefix, _, arg = spec.partition(":")
    kind = REGISTRY.get(prefix)
    if kind is None:
        names = ", ".join(sorted(REGISTRY))
        raise UserError(f"Unknown source {spec!r}. Known sources: {names}.")
    return kind, arg


def honoured(spec: str, settings: dict[str, Any]) -> dict[str, Any]:
    """`settings` for the source named by `spec`, less those given as no value (None, no pins); a UserError, one
    sentence naming the source and the setting, for any other it does not honour (the CLI's and the page's settings
    alike pass here before any model is loaded). Keywords that are no settings (an API key) pass through."""
    kind, arg = kind_of(spec)
    plumbing = kind.passes + (("api_key",) if kind.takes_key else ())
    backend = kind.backend(arg)
    backend.refuse({k: v for k, v in settings.items() if k not in plumbing}, spec)
    return {k: v for k, v in settings.items() if k in plumbing or k in backend.names}


def make_source(spec: str, **settings: Any) -> Source:
    """Builds the source named by `spec` (`local-ar`, `mercury:mercury-2`, `replay:PATH`...) with the settings it
    honours, refusing any other (`honoured`)."""
    kind, arg = kind_of(spec)
    if arg and not kind.takes_arg:
        raise UserError(f"Source {kind.prefix!r} takes no ':' argument.")
    settings = honoured(spec, settings)
    return kind.make(arg, **settings) if kind.takes_arg else kind.make(**settings)


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


@lru_cache(maxsize=1)
def setting_defaults() -> dict[str, dict[str, Any]]:
    """Every registered source's settings defaults (prefix -> name -> default), for titles that name only the settings
    a side moved from them."""
    load_plugins()
    def default(kind: Any, name: str, spec: dict[str, Any]) -> Any:  # the declared default, not the control's 0
        return next((getattr(o, name) for o in kind.defaults if hasattr(o, name)), spec.get("default"))

    return {prefix: {name: default(kind, name, spec) for name, spec in kind.settings.items()}
            for prefix, kind in REGISTRY.items()}
