"""Event options the page's boxes share: quiet handlers, and the bound on handlers that read a whole recording."""

from __future__ import annotations

from typing import Any

from app.ui.budgets import queued

QUIET: dict[str, Any] = {"show_progress": "hidden", "api_name": False}  # no spinner, not in the API page
LIBRARY: dict[str, Any] = queued("library")  # handlers that list, rename or delete in a visitor's library
READS: dict[str, Any] = queued("recording")  # the handlers that read a whole recording (after Stop, Load, Upload,
# Download, a browser race's save), under their budget (app/ui/budgets.py)
