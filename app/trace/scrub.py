"""Keys out of everything a race stores or shows: one scrubber for frames (text, tokens, usage, candidates),
recording headers, messages and logs.

An endpoint can echo the key it was sent into its answer, a prompt can quote one, an error body can repeat it.
The race knows every key it could hold (typed into the page, or in the host's environment) and passes each
frame, header and message through here before it is written, queued for the page or logged.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

from app.trace.frames import Frame

REDACTED = "[key]"
MIN_KEY = 8  # shorter values are not keys worth hiding, and hiding them would eat ordinary words
MIN_TAIL = 4  # a text ending in this much of a key's start hides it: the rest may come in the next chunk
ENV_TOKENS = ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN")


def known_keys(secrets: dict[str, dict[str, Any]] | None = None) -> list[str]:
    """Every key a race could hold: those typed into the page and those in *_API_KEY (and HF token) environment
    variables, longest first so a key that contains another is replaced whole."""
    typed = [str(v) for entry in (secrets or {}).values() for k, v in entry.items() if k == "api_key" and v]
    env = [v for k, v in os.environ.items() if (k.endswith("_API_KEY") or k in ENV_TOKENS) and v]
    return sorted({k.strip() for k in typed + env if len(k.strip()) >= MIN_KEY}, key=len, reverse=True)


def scrub_text(text: str, keys: list[str]) -> str:
    """`text` with every key replaced by [key], and a trailing start of a key (a key cut between two streamed
    chunks) hidden too, so no frame shows a key piece by piece."""
    if not keys or not text:
        return text
    for key in keys:
        if key in text:
            text = text.replace(key, REDACTED)
    for key in keys:
        if key[:MIN_TAIL] not in text[-len(key):]:
            continue
        for n in range(min(len(key) - 1, len(text)), MIN_TAIL - 1, -1):
            if text.endswith(key[:n]):
                return text[:-n] + REDACTED
    return text


def scrub_value(value: Any, keys: list[str]) -> Any:
    """A JSON-like value (a header, usage, settings) with every string in it, dict keys included, scrubbed."""
    if not keys:
        return value
    if isinstance(value, str):
        return scrub_text(value, keys)
    if isinstance(value, list):
        return [scrub_value(v, keys) for v in value]
    if isinstance(value, tuple):
        return tuple(scrub_value(v, keys) for v in value)
    if isinstance(value, dict):
        return {scrub_value(k, keys): scrub_value(v, keys) for k, v in value.items()}
    return value


def scrub_frame(frame: Frame, keys: list[str]) -> Frame:
    """The frame with its text, tokens, usage, candidate tokens and note scrubbed (the same frame when nothing
    changes)."""
    if not keys:
        return frame
    changes: dict[str, Any] = {}
    for name in ("text", "tokens", "usage", "candidates", "note"):
        value = getattr(frame, name)
        if value is not None:
            clean = scrub_value(value, keys)
            if clean != value:
                changes[name] = clean
    return dataclasses.replace(frame, **changes) if changes else frame
