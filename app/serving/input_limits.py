"""The size of everything a visitor may send, declared once: each kind of input, the most characters it may hold, the
kinds of value it may be, and the one sentence that refuses it.

Why: a value's size decides what the work after it costs (tokenising a prompt, parsing pins, rendering them, storing
them in a recording), so every input is measured against this table before any of that work starts (the page does it
for every handler in app/ui/guard.py). A refused value is never repeated or logged: `fingerprint` names it by its
length and a short hash instead.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Limit:
    """One kind of input: how a sentence names it, the most characters it may hold, and the JSON types it may be."""

    what: str
    chars: int
    types: tuple[type, ...] = (str,)


LIMITS: dict[str, Limit] = {
    "prompt": Limit("The prompt", 20_000),
    "pins": Limit("The pinned text", 4_000),
    "draft": Limit("The draft to start from", 20_000),  # as long as a prompt: a run's answer pasted back
    "model": Limit("A model name", 300),
    "key": Limit("An API key", 512),
    "base_url": Limit("A base URL", 500),
    "name": Limit("A recording name", 120),
    "choice": Limit("A picked value", 200, (str, int, float)),
    "number": Limit("A number setting", 32, (int, float)),
    "flag": Limit("A switch", 8, (bool,)),
    "owner": Limit("The browser's library id", 256),
    "file": Limit("An uploaded file's description", 4_096, (dict,)),
    "example": Limit("An example prompt's number", 32, (int,)),
    # both sides' settings widgets in one box (app/ui/packed.py): about 200, each checked against its own limit too
    "settings": Limit("The race's settings", 64_000),
    # a race run in the visitor's browser, gzip-compressed and base64 (a 256-token race's frames pack in about 0.2 MB)
    "browser-race": Limit("The race run in your browser", 1_500_000),
}
MAX_PROMPT_CHARS = LIMITS["prompt"].chars
MAX_PINS_CHARS = LIMITS["pins"].chars


def size(value: Any, cap: int) -> int:
    """Characters in `value` (every string and key inside it; 1 for each other item), counted only until past `cap`."""
    total, todo = 0, [value]
    while todo and total <= cap:
        item = todo.pop()
        if isinstance(item, str):
            total += len(item)
        elif isinstance(item, dict):
            total += len(item)
            todo.extend(item.keys())
            todo.extend(item.values())
        elif isinstance(item, (list, tuple)):
            total += len(item)
            todo.extend(item)
        else:
            total += 1
    return total


def refusal(field: str, value: Any) -> str | None:
    """The sentence that refuses `value` for this kind of input, or None when it is within its limit."""
    limit = LIMITS[field]
    if value is None:
        return None
    if not isinstance(value, limit.types) or (isinstance(value, bool) and bool not in limit.types):
        return f"{limit.what} was sent as the wrong kind of value; reload the page and try again."
    if size(value, limit.chars) > limit.chars:
        return f"{limit.what} is over {limit.chars:,} characters; shorten it."
    return None


def check(field: str, value: Any) -> None:
    """Raises ValueError with the refusing sentence when `value` is over its limit (for callers outside the page)."""
    sentence = refusal(field, value)
    if sentence:
        raise ValueError(sentence)


def fingerprint(value: Any) -> str:
    """How a log names a visitor's value without repeating it: its length and the start of its SHA-256."""
    text = value if isinstance(value, str) else repr(value)
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    return f"{len(text):,} characters, sha256 {digest}"
