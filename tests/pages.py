"""Browser-test helper shared by the page, presenter and HTML-export tests."""

from __future__ import annotations

from typing import Any


def watch_errors(tab: Any) -> list[str]:
    """Collects the tab's console errors and uncaught exceptions; a test asserts the list stays empty."""
    errors: list[str] = []
    tab.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    tab.on("pageerror", lambda e: errors.append(str(e)))
    return errors
