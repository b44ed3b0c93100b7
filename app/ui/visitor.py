"""Who is asking, and what they may race: a page visitor's owner id, and the source factory that applies the
trust policy (app/serving/policy.py) to each side of a visitor's race.

Every page handler can also be called through Gradio's queue API, so the checks live here, where the race is
built, not in what the page shows. Whatever the trust level, a visitor's `replay:` names a library entry, not a
file, and a base URL the visitor typed never gets the host's key. On a served page a visitor also cannot run a
model's own code, load a Hugging Face model the host did not name, use a base URL the host did not list, or (by
default) race on the host's keys; failures at a visitor's own endpoint are told in one generic sentence, so the
page cannot be used to map the host's network.
"""

from __future__ import annotations

import os
import re
import secrets
import threading
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from app.engine.options import on_off
from app.errors import UserError
from app.serving.policy import HF_PREFIXES, LOCAL, Policy
from app.sources.base import REGISTRY, Source, SourceBase, load_plugins, make_source
from app.sources.listing import LISTED, TYPE_A_NAME, list_models
from app.sources.openai_chat import ENTERED_KEY, host_of
from app.trace.frames import Frame

OWNER_TOKEN = re.compile(r"[A-Za-z0-9_-]{16,128}")


@dataclass(frozen=True)
class Visitor:
    """The page's policy, the id of the visitor's own library (None: the one shared library) and the client address
    their requests come from (app/ui/address.py; None when unknown), which disk bounds are also counted by."""

    policy: Policy = LOCAL
    owner: str | None = None
    address: str | None = None


def new_owner() -> str:
    """A fresh owner id for a browser: random, so no visitor can guess another's."""
    return secrets.token_urlsafe(24)


def owner_of(policy: Policy, token: Any) -> str | None:
    """The owner a request acts for: None when the library is shared; else the browser's id, the secret the page-load
    handler gave this session. A call from a session that never opened the page gets a fresh one, which reaches
    nothing: a library is opened by its owner's secret, never by a session hash (which its holder may show)."""
    if not policy.owner_scoped:
        return None
    if isinstance(token, str) and OWNER_TOKEN.fullmatch(token):
        return token
    return f"anonymous-{new_owner()}"


def check_side(policy: Policy, spec: str, settings: dict[str, Any]) -> None:
    """Raises UserError (one sentence for the visitor) when the policy forbids this side; `settings` holds the
    side's settings and its typed key, if any."""
    load_plugins()
    prefix, _, arg = spec.partition(":")
    kind = REGISTRY.get(prefix)
    if kind is None:
        return  # make_source names the known sources
    if prefix in HF_PREFIXES:
        if not policy.hf_model_allowed(arg):
            named = ", ".join(policy.hf_models)
            raise UserError("This server runs only the Hugging Face models its host named"
                            + (f": {named}." if named else ", and it named none."))
        if on_off(settings.get("trust_remote_code", False), "trust_remote_code") and not policy.can("remote-code"):
            raise UserError("Running a model's own code (trust_remote_code) is off on this server.")
    base_url = str(settings.get("base_url") or "").strip()
    if base_url:
        if not policy.base_url_allowed(base_url):
            raise UserError("That base URL is not one this server allows; leave it empty or use one the host listed.")
        if not str(settings.get("api_key") or "").strip():
            raise UserError("Enter an API key for that base URL: "
                            "the host's key goes only to the endpoint the host set.")
    if kind.takes_key and not policy.can("env-keys") and not str(settings.get("api_key") or "").strip():
        raise UserError("Enter your own API key: this server does not lend its keys to visitors.")


class QuietSource(SourceBase):
    """A visitor's endpoint on a served page: its frames pass through, and any failure becomes one generic sentence
    that says nothing about what answered (no status, no error body, no connect-or-refuse difference)."""

    def __init__(self, source: Source, host: str) -> None:
        self.source = source
        self.name = source.name
        self.host = host

    def settings(self) -> dict[str, Any]:
        return self.source.settings()

    def stream(self, prompt: str, cancel: threading.Event, defer: bool = False) -> Iterator[Frame]:
        """The endpoint's frames; a failure as one generic sentence. `defer` is never given (`defers` is False)."""
        frames = 0
        try:
            for frame in self.source.stream(prompt, cancel):
                frames += 1
                yield frame
        except UserError:
            after = f" after {frames} frame{'s' if frames != 1 else ''}" if frames else ""
            raise UserError(f"The request to {self.host} failed{after}: check the model name, your key and the "
                            "base URL.") from None


HF_LOAD_FAILED = ("That Hugging Face model could not be loaded on this server; check its name (a served page does not "
                  "say why, so it cannot be used to look around the server's disk).")


def allowed_source(visitor: Visitor, spec: str, **settings: Any) -> Source:
    """The one way the page makes a source or loads a model (races, Be the sampler, sweeps, the pass-cost chart): the
    policy's checks first, then the source, with `replay:` reading library names in the visitor's own library only.
    On a served page a Hugging Face load that fails says one sentence whatever the cause, so no error tells a visitor
    whether a path exists."""
    check_side(visitor.policy, spec, settings)
    prefix = spec.partition(":")[0]
    extra = {"paths": False, "owner": visitor.owner} if prefix == "replay" else {}
    try:
        source = make_source(spec, **settings, **extra)
    except UserError:
        if visitor.policy.served and prefix in HF_PREFIXES:
            raise UserError(HF_LOAD_FAILED) from None
        raise
    base_url = str(settings.get("base_url") or "").strip()
    if visitor.policy.served and base_url:
        return QuietSource(source, host_of(base_url))
    return source


def visitor_source(visitor: Visitor) -> Callable[..., Source]:
    """`make(spec, **settings_and_key)` for a visitor's race (Race's `make`): allowed_source for this visitor."""
    def make(spec: str, **settings: Any) -> Source:
        return allowed_source(visitor, spec, **settings)
    return make


def listing_endpoint(policy: Policy, prefix: str, base_url: str | None, key: str | None) -> tuple[str, str, str]:
    """(base URL, key, how to name the key) to list a source's models with, by the same rules as a race: a base URL
    the visitor typed gets only the key the visitor typed (and, on a served page, must be one the host listed); the
    host's own endpoint gets the typed key, else the host's key where the policy lends it. Raises UserError."""
    url_var, key_var, default_url = LISTED[prefix]
    base_url, key = (base_url or "").strip(), (key or "").strip()
    if base_url:
        if not policy.base_url_allowed(base_url):
            raise UserError("That base URL is not one this server allows, so no models are listed.")
        if not key:
            raise UserError(f"Enter an API key to list the models at that base URL: {TYPE_A_NAME}.")
        return base_url, key, ENTERED_KEY
    if key:
        return os.environ.get(url_var) or default_url, key, ENTERED_KEY
    if policy.can("env-keys") and os.environ.get(key_var):
        return os.environ.get(url_var) or default_url, os.environ[key_var], key_var
    lend = f"set {key_var} or enter a key" if policy.can("env-keys") else "enter your own API key"
    raise UserError(f"No API key to list models with ({lend}): {TYPE_A_NAME}.")


def visitor_models(policy: Policy, prefix: str, base_url: str | None, key: str | None) -> list[str]:
    """The models a source's endpoint lists for this visitor; raises UserError with one sentence when it cannot.
    On a served page a failure at a base URL the visitor typed says nothing about what answered (see QuietSource)."""
    url, api_key, hint = listing_endpoint(policy, prefix, base_url, key)
    try:
        return list_models(url, api_key, hint)
    except UserError:
        if policy.served and (base_url or "").strip():
            raise UserError(f"Could not list the models at {host_of(url)}: check the base URL and your key; "
                            f"{TYPE_A_NAME}.") from None
        raise
