"""Event options the page's boxes share: quiet handlers, and the bound on handlers that read a whole recording."""

from __future__ import annotations

from typing import Any

RECORDING_CONCURRENCY = 2  # handlers that read a whole recording (after Stop, Load, Upload, Download) at once
QUIET: dict[str, Any] = {"show_progress": "hidden", "api_name": False}  # no spinner, not in the API page
READS: dict[str, Any] = {"concurrency_limit": RECORDING_CONCURRENCY, "concurrency_id": "recording"}
