"""Inception's Mercury as a source (`mercury`, `mercury:MODEL`): its `diffusing` stream, frame by frame.

With `diffusing` on, each chunk carries the whole noisy draft (replace); off, Mercury sends
block-sized deltas (append). `display_text` hides the `<|think_end|>`-style markers that leak into
the stream; frames keep the raw text.
"""

from __future__ import annotations

import os
import re
import threading
from dataclasses import dataclass
from typing import Any, Iterator

from app.engine.options import coerce, declared, option
from app.errors import UserError
from app.sources.base import SourceBase, SourceKind, register
from app.sources.openai_chat import DEFAULT_TIMEOUT, ENTERED_KEY, check_base_url, public_url, stream_chat
from app.trace.frames import Frame

DEFAULT_BASE_URL = "https://api.inceptionlabs.ai/v1"
DEFAULT_MODEL = "mercury-2"
EFFORTS = ("instant", "low", "medium", "high")
MARKER = re.compile(r"<\|[A-Za-z0-9_]{1,40}\|>")


def display_text(raw: str) -> str:
    """Raw model text minus `<|think_end|>`-style control markers, which should not be shown (the record keeps them)."""
    return MARKER.sub("", raw)


@dataclass
class MercurySettings:
    """Mercury's settings, each declared once (app/engine/options.py); a number out of range is moved into it."""

    temperature: float = option(0.75, "Temperature", min=0.5, max=1.0, step=0.05, clamp=True,
                                help="Mercury accepts 0.5 to 1.0.")
    reasoning_effort: str = option("instant", "Reasoning effort", choices=EFFORTS,
                                   help="instant shows text at once; higher efforts reason first, hidden, before any "
                                        "text.")
    max_tokens: int = option(1024, "Max tokens", min=1, max=50_000, step=1, clamp=True,
                             help="Reasoning tokens count against this budget.")
    diffusing: bool = option(True, "Diffusing stream", help="Off shows Mercury's ordinary block-by-block stream.")
    base_url: str = option("", "Base URL", shown=False,
                           help=f"Empty uses INCEPTION_BASE_URL or {DEFAULT_BASE_URL}.")
    timeout: float = option(DEFAULT_TIMEOUT, "Timeout (seconds without a byte)", min=1.0, max=600.0, step=1.0,
                            clamp=True, shown=False)


class MercurySource(SourceBase):
    """Mercury with Inception's `diffusing` and `reasoning_effort` extras: the official openai SDK sends the request,
    and Converge's own parser (app.sources.openai_chat.stream_chat) reads the stream.

    `notice` is a sentence for the user when a setting was changed to one Mercury accepts (the temperature is
    clamped to 0.5-1.0); the race shows it as the side's message and records it with how the side ended."""

    cannot_why = "its API takes a prompt, not a draft to revise"  # in app/sources/revise.py `cannot`

    def __init__(self, model: str = "", *, api_key: str | None = None, **settings: Any) -> None:
        model = (model or "").strip()
        self.name = f"mercury:{model}" if model else "mercury"
        self.model = model or DEFAULT_MODEL
        self._api_key = api_key or None
        s = coerce(MercurySettings, settings, "mercury")
        self.base_url = check_base_url(s.base_url or os.environ.get("INCEPTION_BASE_URL") or DEFAULT_BASE_URL)
        self.temperature, self.reasoning_effort, self.max_tokens = s.temperature, s.reasoning_effort, s.max_tokens
        self.diffusing, self.timeout = s.diffusing, s.timeout
        given = settings.get("temperature")
        asked = float(given if given is not None else s.temperature)
        o = declared(MercurySettings)["temperature"][1]
        self.notice = (f"Mercury accepts a temperature from {o.min:.1f} to {o.max:.1f}, so {asked:g} was sent as "
                       f"{self.temperature:g}." if asked != self.temperature else None)

    def __repr__(self) -> str:
        return f"MercurySource({self.settings()!r})"

    def settings(self) -> dict[str, Any]:
        return {"model": self.model, "base_url": public_url(self.base_url), "temperature": self.temperature,
                "reasoning_effort": self.reasoning_effort, "max_tokens": self.max_tokens,
                "diffusing": self.diffusing, "timeout": self.timeout}

    def stream(self, prompt: str, cancel: threading.Event, defer: bool = False) -> Iterator[Frame]:
        """Mercury's answer as it streams, a frame per chunk (stream_chat).
        `defer` is never given (`defers` is False)."""
        key = self._api_key or os.environ.get("INCEPTION_API_KEY")
        if not key:
            raise UserError("Set INCEPTION_API_KEY to your Inception API key (or enter one) to use Mercury.")
        yield from stream_chat(base_url=self.base_url, api_key=key,
                               key_hint=ENTERED_KEY if self._api_key else "INCEPTION_API_KEY",
                               model=self.model, prompt=prompt,
                               params={"temperature": self.temperature, "max_tokens": self.max_tokens},
                               extra_body={"diffusing": self.diffusing, "reasoning_effort": self.reasoning_effort},
                               cancel=cancel, timeout=self.timeout)


register(SourceKind(prefix="mercury", make=MercurySource, takes_arg=True, takes_key=True,
                    label="Inception Mercury, diffusing stream (INCEPTION_API_KEY)", options=(MercurySettings(),)))
