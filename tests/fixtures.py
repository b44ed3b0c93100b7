"""Fixtures for twins, servers and browsers, defined once for the whole suite (conftest.py loads this module as a
plugin): whether the twins' weights are here, loopback wire servers, the page served in this process, and Chromium.

Test modules import `HAVE_TWINS` and `needs_twins` from here; fixtures need no import.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, AsyncIterator, Coroutine, Iterator

import pytest

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "assets" / "models"
HAVE_TWINS = all((MODELS / f"{k}.safetensors").is_file() for k in ("diffusion", "ar"))
needs_twins = pytest.mark.skipif(not HAVE_TWINS,
                                 reason="assets/models/*.safetensors are absent (train the twins first)")
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


@pytest.fixture(scope="session")
def wire_server() -> Iterator[str]:
    """Base URL (ending in /v1) of a real HTTP server on 127.0.0.1 that speaks the Mercury wire format."""
    from tests.wire_server import serve

    with serve() as base_url:
        yield base_url


def point_sources_at(base_url: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """Points both the Mercury and the OpenAI-compatible sources at a loopback server, with its key."""
    from tests.wire_server import DEFAULT_KEY as TEST_KEY

    for prefix in ("INCEPTION", "OPENAI"):
        monkeypatch.setenv(f"{prefix}_API_KEY", TEST_KEY)
        monkeypatch.setenv(f"{prefix}_BASE_URL", base_url)
    return base_url


@pytest.fixture
def api_env(wire_server: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """Both API sources on the loopback server at its normal pace."""
    return point_sources_at(wire_server, monkeypatch)


@pytest.fixture(scope="session")
def fast_server() -> Iterator[str]:
    """A wire server that sends as fast as it can, so a race takes only as long as its fault."""
    from tests.wire_server import serve

    with serve(fps=0) as base_url:
        yield base_url


@pytest.fixture
def fast_env(fast_server: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """Both API sources on the fast wire server."""
    return point_sources_at(fast_server, monkeypatch)


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


@pytest.fixture(scope="module")
def server_url() -> Iterator[str]:
    """The whole app served in this process on 127.0.0.1 (tests/pages.py serve_page), one per test module."""
    from tests.pages import serve_page

    with serve_page() as url:
        yield url


def api_client(url: str):
    """A gradio_client Client of the served page that waits long for each answer: its default read timeout on the
    config fetch (5 s) ran out when two suites shared the machine at load 8 to 10; 300 s still ends a hung server."""
    from gradio_client import Client

    return Client(url, verbose=False, httpx_kwargs={"timeout": 300})


def run_async(work: Coroutine[Any, Any, Any]) -> Any:
    """What a coroutine returns, run on a fresh event loop in a thread of its own (the browser tests' Playwright keeps
    a loop running in this one)."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, work).result()


def drain(handler: AsyncIterator[Any]) -> list[Any]:
    """Every value an async generator handler (an export) yields, run to its end."""
    async def collect() -> list[Any]:
        return [value async for value in handler]
    return run_async(collect())
