"""The trust level the page runs at, chosen by how it is launched, and the capabilities it turns off.

Local (bound to a loopback address, the default): the visitor is the host, and everything works.
Served (`--host` anything else, `--share`, or a Hugging Face Space): visitors are strangers, so what could run
their code on this machine, spend or leak the host's keys, reach the host's network or show one visitor's runs
to another is off unless the host turns it back on with `--allow CAPABILITY`. The page hides what is off and
every handler refuses it too, since any handler can be called through Gradio's queue API.
"""

from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass
from typing import Iterable, Mapping

CAPABILITIES: dict[str, str] = {
    "hf-models": "Hugging Face models by any id or folder (otherwise only those named with --hf-model)",
    "remote-code": "trust_remote_code: a Hugging Face model's own Python code runs on this machine; with hf-models "
                   "this hands every visitor code execution here",
    "env-keys": "races on the host's API keys from the environment (otherwise each visitor types their own key)",
    "upload": "uploading recordings into the library",
    "shared-library": "one library for everyone (otherwise each visitor sees only their own runs and the examples)",
}
# each capability as the page's note names it to a visitor (the ids above are the host's, for --allow)
IN_WORDS: dict[str, str] = {
    "hf-models": "Hugging Face models other than those the host chose",
    "remote-code": "running a model's own code on this server",
    "env-keys": "the host's API keys",
    "upload": "uploading recordings",
    "shared-library": "one library shared by everyone",
}
ENV_ALLOW, ENV_HF_MODELS, ENV_BASE_URLS = "CONVERGE_ALLOW", "CONVERGE_HF_MODELS", "CONVERGE_BASE_URLS"
HF_PREFIXES = ("hf-diffusion", "hf-ar")


def _clean_url(url: str) -> str:
    return (url or "").strip().rstrip("/")


@dataclass(frozen=True)
class Policy:
    """What visitors of this page may do. `served` is the trust level; `reason` says what made it so."""

    served: bool = False
    reason: str = ""
    allowed: frozenset[str] = frozenset()
    hf_models: tuple[str, ...] = ()
    base_urls: tuple[str, ...] = ()

    def can(self, capability: str) -> bool:
        """Whether visitors may use `capability` (always on a local page)."""
        return not self.served or capability in self.allowed

    @property
    def owner_scoped(self) -> bool:
        """Whether each visitor has a library of their own."""
        return not self.can("shared-library")

    def offers(self, prefix: str) -> bool:
        """Whether the page offers a kind of source at all (the Hugging Face ones need a model visitors may use)."""
        return prefix not in HF_PREFIXES or self.can("hf-models") or bool(self.hf_models)

    def hf_model_allowed(self, model: str) -> bool:
        """Whether visitors may load this Hugging Face id or folder: any when allowed, else exactly one the host
        named."""
        return self.can("hf-models") or model in self.hf_models

    def base_url_allowed(self, url: str) -> bool:
        """Whether a visitor's base URL may be used: any on a local page, only the host's list when served."""
        return not self.served or _clean_url(url) in {_clean_url(u) for u in self.base_urls}

    def off(self) -> list[str]:
        return [c for c in CAPABILITIES if not self.can(c)]

    def on(self) -> list[str]:
        return [c for c in CAPABILITIES if self.served and self.can(c)]

    def summary(self) -> str:
        """What the launcher prints at start: the trust level, what is off and what the host turned back on."""
        if not self.served:
            return "Local page: everything is on (visitors can reach it only from this machine)."
        lines = [f"Served page ({self.reason}): visitors are treated as strangers."]
        lines += [f"  off: {c}: {CAPABILITIES[c]}" for c in self.off()]
        lines += [f"  on (--allow {c}): {CAPABILITIES[c]}" for c in self.on()]
        if self.hf_models:
            lines.append(f"  Hugging Face models visitors may run: {', '.join(self.hf_models)}")
        lines.append(f"  base URLs visitors may use: {', '.join(self.base_urls) or 'none'}")
        lines.append("  Turn one back on with --allow CAPABILITY (see python -m app --help).")
        return "\n".join(lines)

    def page_note(self) -> str:
        """The page's one-paragraph note on a served page ('' on a local one)."""
        if not self.served:
            return ""
        off = "; ".join(IN_WORDS[c] for c in self.off()) or "nothing"
        text = (f"**This page is served to others**, so some things are off: {off}. Your recordings are "
                + ("shared with everyone here." if self.can("shared-library") else "visible to you only.")
                + (" API sources need your own key." if not self.can("env-keys") else ""))
        if self.on():
            text += f" The host turned back on: {'; '.join(IN_WORDS[c] for c in self.on())}."
        return text


LOCAL = Policy()


def is_loopback(host: str) -> bool:
    """Whether binding to `host` keeps the page on this machine."""
    host = (host or "").strip().strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def served_reason(host: str, share: bool, env: Mapping[str, str]) -> str:
    """Why the page is served to others ('' when it is local)."""
    if env.get("SPACE_ID"):
        return "running on a Hugging Face Space"
    if share:
        return "--share"
    if not is_loopback(host):
        return f"--host {host}"
    return ""


def _listed(values: Iterable[str] | None, env_value: str | None) -> tuple[str, ...]:
    items = [*(values or []), *(env_value or "").split(",")]
    return tuple(dict.fromkeys(v.strip() for v in items if v and v.strip()))


def from_launch(host: str = "127.0.0.1", share: bool = False, allow: Iterable[str] | None = None,
                hf_models: Iterable[str] | None = None, base_urls: Iterable[str] | None = None,
                env: Mapping[str, str] | None = None) -> Policy:
    """The policy for a launch: the options given plus CONVERGE_ALLOW, CONVERGE_HF_MODELS and CONVERGE_BASE_URLS
    (comma-separated, for Spaces). Raises ValueError for a capability that does not exist."""
    env = os.environ if env is None else env
    allowed = _listed(allow, env.get(ENV_ALLOW))
    unknown = [c for c in allowed if c not in CAPABILITIES]
    if unknown:
        raise ValueError(f"Unknown capability {unknown[0]!r}: choose from {', '.join(CAPABILITIES)}.")
    reason = served_reason(host, share, env)
    return Policy(served=bool(reason), reason=reason, allowed=frozenset(allowed),
                  hf_models=_listed(hf_models, env.get(ENV_HF_MODELS)),
                  base_urls=tuple(_clean_url(u) for u in _listed(base_urls, env.get(ENV_BASE_URLS))))
