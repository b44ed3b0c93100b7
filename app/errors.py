"""The one error type every room raises for the user to read, kept at the bottom so any room may import it.

Sources, the engine, the store, the exports and the page all raise UserError; it lives here rather than in
app/sources/base.py so that the engine and the exports need not import the sources to report a failure.
"""

from __future__ import annotations


class UserError(Exception):
    """A failure to show the user as one clear sentence (bad key, rate limit, corrupt weights...)."""
