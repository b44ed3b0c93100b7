"""Event options the page's boxes share: quiet handlers, and the bound on handlers that read a whole recording."""

from __future__ import annotations

from typing import Any

from app.ui.budgets import queued

# no spinner, and no loading status kept on the outputs: Gradio's page refreshes the status of every output any such
# handler ever had on each streamed update of any other (with the lessons' and the race's, a third of the page's main
# thread during a race, and long tasks of 150 ms: issue 52)
HIDDEN: dict[str, Any] = {"show_progress": "hidden", "show_progress_on": []}
QUIET: dict[str, Any] = {**HIDDEN, "api_name": False}  # and not in the API page
LIBRARY: dict[str, Any] = queued("library")  # handlers that list, rename or delete in a visitor's library
READS: dict[str, Any] = queued("recording")  # the handlers that read a whole recording (after Stop, Load, Upload,
# Download, a browser race's save), under their budget (app/ui/budgets.py)
