"""How long a race may run: one wall-clock limit for every race, generous on this machine, a few minutes when served.

`python -m app --race-limit SECONDS` sets it, else CONVERGE_RACE_LIMIT, else the launcher's default: LOCAL_RACE_LIMIT,
or SERVED_RACE_LIMIT when the page is served to others. A race that reaches it stops both sides and keeps every frame.
"""

from __future__ import annotations

import math
import os

LOCAL_RACE_LIMIT = 900.0
SERVED_RACE_LIMIT = 180.0
MIN_RACE_LIMIT, MAX_RACE_LIMIT = 1.0, 86_400.0
ENV = "CONVERGE_RACE_LIMIT"

_default = LOCAL_RACE_LIMIT
_chosen: float | None = None


def parse_limit(value: str | float) -> float:
    """A limit in seconds from a flag or the environment; raises ValueError with one sentence when it is not one."""
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"The race limit must be a number of seconds, not {str(value)[:40]!r}.") from None
    if not (math.isfinite(seconds) and MIN_RACE_LIMIT <= seconds <= MAX_RACE_LIMIT):
        raise ValueError(f"The race limit must be from {MIN_RACE_LIMIT:g} to {MAX_RACE_LIMIT:g} seconds.")
    return seconds


def configure(seconds: float | None = None, served: bool = False) -> float:
    """The launcher's choice: an explicit limit (the flag), else the served or local default; returns the limit now."""
    global _chosen, _default
    _chosen = None if seconds is None else parse_limit(seconds)
    _default = SERVED_RACE_LIMIT if served else LOCAL_RACE_LIMIT
    return race_limit()


def race_limit() -> float:
    """Seconds a race may run: the flag, else CONVERGE_RACE_LIMIT (ignored when it is not a valid limit), else the
    default."""
    if _chosen is not None:
        return _chosen
    try:
        return parse_limit(os.environ[ENV])
    except (KeyError, ValueError):
        return _default


def limit_text(seconds: float) -> str:
    """'180 s' or '2.5 s': how the page and the recording name a limit."""
    return f"{seconds:g} s"


def stopped_at_limit(seconds: float) -> str:
    """The message a side ends with when its race reached the limit."""
    return f"Stopped after the {limit_text(seconds)} limit; every frame received is kept."
