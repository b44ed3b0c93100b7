"""The one error type every room raises for the user to read, and the one way a count is written in what they read,
both kept at the bottom so any room may import them.

Sources, the engine, the store, the exports and the page all raise UserError; it lives here rather than in
app/sources/base.py so that the engine and the exports need not import the sources to report a failure. `counted`
writes "1 token" and "2 tokens" alike for every room (the player's JavaScript has its own, common.js `counted`).
"""

from __future__ import annotations


class UserError(Exception):
    """A failure to show the user as one clear sentence (bad key, rate limit, corrupt weights...)."""


def counted(n: int, one: str, many: str | None = None) -> str:
    """A count and its noun, singular for exactly one ("1 token", "2 tokens", "1,024 tokens"); `many` is the plural
    when it is not `one` + "s" ("1 pass", "2 passes"). Why: a count of one once read "1 tokens"."""
    return f"{n:,} {one if n == 1 else many or one + 's'}"
