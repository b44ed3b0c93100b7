"""Inception's Mercury as a source (`mercury`, `mercury:MODEL`): its `diffusing` stream, frame by frame.

With `diffusing` on, each chunk carries the whole noisy draft (replace); off, Mercury sends
block-sized deltas (append). `display_text` hides the `<|think_end|>`-style markers that leak into
the stream; frames keep the raw text.
"""

from __future__ import annotations

import os
import re
import threading
from typing import Any, Iterator

from app.errors import SourceError
from app.sources.base import SourceKind, on_off, register
from app.sources.openai_chat import (DEFAULT_TIMEOUT, ENTERED_KEY, check_base_url, number, public_url,
                                     stream_chat)
from app.trace import Frame

DEFAULT_BASE_URL = "https://api.inceptionlabs.ai/v1"
DEFAULT_MODEL = "mercury-2"
EFFORTS = ("instant", "low", "medium", "high")
TEMPERATURE_RANGE = (0.5, 1.0)
DEFAULT_TEMPERATURE = 0.75
DEFAULT_MAX_TOKENS = 1024
MAX_TOKENS = 50_000
MARKER = re.compile(r"<\|[A-Za-z0-9_]{1,40}\|>")


def display_text(raw: str) -> str:
    """Raw model text minus `<|think_end|>`-style control markers, which should not be shown (the record keeps them)."""
    return MARKER.sub("", raw)


class MercurySource:
    """Mercury with Inception's `diffusing` and `reasoning_effort` extras: the official openai SDK sends the request,
    and Converge's own parser (app.sources.openai_chat.stream_chat) reads the stream.

    `notice` is a sentence for the user when a setting was changed to one Mercury accepts (the temperature is
    clamped to 0.5-1.0); the race shows it as the side's message and records it with how the side ended."""

    def __init__(self, model: str = "", *, base_url: str | None = None, api_key: str | None = None,
                 temperature: Any = DEFAULT_TEMPERATURE, reasoning_effort: Any = "instant",
                 max_tokens: Any = DEFAULT_MAX_TOKENS, diffusing: Any = True, timeout: Any = DEFAULT_TIMEOUT) -> None:
        model = (model or "").strip()
        self.name = f"mercury:{model}" if model else "mercury"
        self.model = model or DEFAULT_MODEL
        self.base_url = check_base_url(base_url or os.environ.get("INCEPTION_BASE_URL") or DEFAULT_BASE_URL)
        self._api_key = api_key or None
        self.temperature = number(temperature, "temperature", *TEMPERATURE_RANGE)
        asked = float(temperature)
        self.notice = (f"Mercury accepts a temperature from {TEMPERATURE_RANGE[0]:.1f} to {TEMPERATURE_RANGE[1]:.1f}, "
                       f"so {asked:g} was sent as {self.temperature:g}." if asked != self.temperature else None)
        effort = str(reasoning_effort or "").strip().lower()
        if effort not in EFFORTS:
            raise SourceError(f"reasoning_effort must be one of {', '.join(EFFORTS)}, not {reasoning_effort!r}.")
        self.reasoning_effort = effort
        self.max_tokens = int(number(max_tokens, "max_tokens", 1, MAX_TOKENS))
        self.diffusing = on_off(diffusing, "diffusing")
        self.timeout = number(timeout, "timeout", 1.0, 600.0)

    def __repr__(self) -> str:
        return f"MercurySource({self.settings()!r})"

    def settings(self) -> dict[str, Any]:
        return {"model": self.model, "base_url": public_url(self.base_url), "temperature": self.temperature,
                "reasoning_effort": self.reasoning_effort, "max_tokens": self.max_tokens,
                "diffusing": self.diffusing, "timeout": self.timeout}

    def stream(self, prompt: str, cancel: threading.Event) -> Iterator[Frame]:
        key = self._api_key or os.environ.get("INCEPTION_API_KEY")
        if not key:
            raise SourceError("Set INCEPTION_API_KEY to your Inception API key (or enter one) to use Mercury.")
        yield from stream_chat(base_url=self.base_url, api_key=key,
                               key_hint=ENTERED_KEY if self._api_key else "INCEPTION_API_KEY",
                               model=self.model, prompt=prompt,
                               params={"temperature": self.temperature, "max_tokens": self.max_tokens},
                               extra_body={"diffusing": self.diffusing, "reasoning_effort": self.reasoning_effort},
                               cancel=cancel, timeout=self.timeout)


register(SourceKind(
    prefix="mercury",
    make=MercurySource,
    label="Inception Mercury, diffusing stream (INCEPTION_API_KEY)",
    takes_arg=True,
    takes_key=True,
    settings={
        "temperature": {"default": DEFAULT_TEMPERATURE, "label": "Temperature", "min": TEMPERATURE_RANGE[0],
                        "max": TEMPERATURE_RANGE[1], "step": 0.05, "info": "Mercury accepts 0.5 to 1.0."},
        "reasoning_effort": {"default": "instant", "label": "Reasoning effort", "choices": list(EFFORTS),
                             "info": "instant shows text at once; higher efforts reason first, hidden, before any text."},
        "max_tokens": {"default": DEFAULT_MAX_TOKENS, "label": "Max tokens", "min": 1, "max": MAX_TOKENS, "step": 1,
                       "info": "Reasoning tokens count against this budget."},
        "diffusing": {"default": True, "label": "Diffusing stream", "choices": [True, False],
                      "info": "Off shows Mercury's ordinary block-by-block stream."},
    },
))
