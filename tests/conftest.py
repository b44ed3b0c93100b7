"""Shared fixtures: a loopback server speaking Inception's wire format, a recordings folder, the page, a browser."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Iterator

import pytest

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


@pytest.fixture(autouse=True)
def recordings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test saves its runs in its own folder, never in the repo's recordings/."""
    folder = tmp_path / "recordings"
    folder.mkdir()
    monkeypatch.setenv("CONVERGE_RECORDINGS", str(folder))
    return folder


@pytest.fixture(scope="session")
def wire_server() -> Iterator[str]:
    """Base URL (ending in /v1) of a real HTTP server on 127.0.0.1 that speaks the Mercury wire format."""
    from tests.wire_server import serve

    with serve() as base_url:
        yield base_url


@pytest.fixture
def api_env(wire_server: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """Points both the Mercury and the OpenAI-compatible sources at the loopback server."""
    from tests.wire_server import DEFAULT_KEY as TEST_KEY

    for prefix in ("INCEPTION", "OPENAI"):
        monkeypatch.setenv(f"{prefix}_API_KEY", TEST_KEY)
        monkeypatch.setenv(f"{prefix}_BASE_URL", wire_server)
    return wire_server


@pytest.fixture(scope="session")
def browser():
    """Debian's Chromium driven by playwright; skipped with a reason where it is not installed."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    if not os.path.exists(CHROMIUM):
        pytest.skip("Chromium is not installed (apt-get install chromium)")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield b
        b.close()
