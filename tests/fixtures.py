"""Fixtures for twins, servers and browsers, defined once for the whole suite (conftest.py loads this module as a
plugin): whether the twins' weights are here, loopback wire servers, the page served in this process, and Chromium.

Test modules import `HAVE_TWINS` and `needs_twins` from here; fixtures need no import.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
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
# Debian's Chromium for the tests: its headless shell (package chromium-headless-shell, the build playwright itself
# runs for headless pages: the same Blink, lighter than the full browser in its headless mode) where
# it is installed, else the browser itself
CHROMIUM = shutil.which("chromium-headless-shell") or shutil.which("chromium") or "/usr/bin/chromium"


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
        pytest.skip("Chromium is not installed (apt-get install chromium-headless-shell)")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield b
        b.close()


def run_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder this run's workers share (pytest-xdist gives each worker a folder inside it); without workers, the
    run's own base folder. Never shared with another run."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@contextlib.contextmanager
def held(lock: Path) -> Iterator[None]:
    """Holds an exclusive lock on the file `lock` (made if absent): one worker at a time builds what they share."""
    with lock.open("a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def built_once(tmp_path_factory: pytest.TempPathFactory, name: str, build: Any) -> Path:
    """What `build(folder)` writes into `folder`, built by the first worker that asks and read by every other
    worker of the run from the same folder (a marker file says the build finished)."""
    shared = run_folder(tmp_path_factory) / f"built-{name}"
    with held(run_folder(tmp_path_factory) / f"built-{name}.lock"):
        if not (shared / "done").is_file():
            shutil.rmtree(shared, ignore_errors=True)  # a build a failed worker left half done
            shared.mkdir(parents=True)
            build(shared)
            (shared / "done").touch()
    return shared


def needs_site_runtime() -> None:
    """Skips (with the reason) where the static site cannot be built: no onnx package, or no onnxruntime-web and no
    npm to install it, or npm that could not install it (no registry in reach)."""
    pytest.importorskip("onnx", reason="the onnx package (requirements.txt) builds the site's graphs")
    from app.errors import UserError
    from app.site.build import runtime_dir, runtime_installed

    if not runtime_installed() and shutil.which("npm") is None:
        pytest.skip("npm is not installed, so onnxruntime-web cannot be installed to build the site")
    try:
        runtime_dir()
    except UserError as e:
        pytest.skip(f"onnxruntime-web is unavailable: {e}")


@pytest.fixture(scope="session")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The static site's folder (`python -m app site`), built once per run and shared by every worker and test that
    reads it (npm ci on first use, as on a fresh machine). Tests only read it."""
    if not HAVE_TWINS:
        pytest.skip("assets/models/*.safetensors are absent (train the twins first)")
    needs_site_runtime()
    from app.site.build import build_site

    return built_once(tmp_path_factory, "site", lambda folder: build_site(folder / "site")) / "site"


@pytest.fixture(scope="session")
def single(site: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The single-file site (`--single-file`), made once per run from the folder above."""
    from app.site.build import build_single

    made = built_once(tmp_path_factory, "single", lambda folder: build_single(folder / "converge.html", site=site))
    return made / "converge.html"


@pytest.fixture(scope="module")
def server_url() -> Iterator[str]:
    """The whole app served in this process on 127.0.0.1 (tests/pages.py serve_page), one per test module: one per
    run was tried (issue 52), and a lesson's race then waited for good behind what an earlier module's tests had left
    on the page's server, so each module starts from a fresh one."""
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
