"""A slow reader holds bounded memory (issue 49, item 2): one address opens 800 connections to the largest file of
the browser race's site and never reads; the served page keeps its memory within 150 MB of where it was, refuses or
holds the excess, still opens for another address, and serves the first again once its connections close.

Before (app/ui/site_files.py handed each reply to the connection whole and then gave the address's turn back): the
issue's probe took the server from 631 MB to 1,967 MB with 800 connections to the runtime's WebAssembly, all
answered 200.
"""

from __future__ import annotations

import random
import time
from pathlib import Path
from typing import Iterator

import pytest

from app.bench.budgets import never_reading, peek
from app.ui.budgets import SITE
from app.ui.site_files import SITE_ROUTE
from tests.loopback_client import Visitor
from tests.reliability import tally
from tests.served import peak_mb, served_process

CONNECTIONS = 800
BIG = "ort/ort-wasm-simd-threaded.wasm"
BIG_BYTES = 5 * 2**20  # about the runtime's WebAssembly compressed; random bytes, so its gzip is as large
GROWTH_MB = 150


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("site")
    (folder / "ort").mkdir()
    (folder / BIG).write_bytes(random.Random(0).randbytes(BIG_BYTES))
    (folder / "index.html").write_text("<p>site</p>")
    return folder


@pytest.fixture
def opened(tmp_path: Path, site: Path) -> Iterator[tuple[str, object]]:
    with served_process(tmp_path / "log.txt", tmp_path / "recordings", site=site) as (url, proc):
        yield url, proc


def test_never_reading_connections_hold_bounded_memory_and_others_still_load_the_page(
        opened: tuple[str, object]) -> None:
    url, proc = opened
    port = int(url.rstrip("/").rsplit(":", 1)[1])
    other = Visitor(url, "127.0.0.2")
    assert other.get(SITE_ROUTE + "index.html")[0] == 200  # the site's files are there
    before = peak_mb(proc, "VmRSS")  # type: ignore[arg-type]
    sockets = [never_reading(port, SITE_ROUTE + BIG) for _ in range(CONNECTIONS)]
    try:
        deadline = time.monotonic() + 120
        while sum(bool(peek(s)) for s in sockets) < CONNECTIONS - SITE.waiting:  # all but those waiting their turn
            assert time.monotonic() < deadline, "the server did not answer the connections"
            time.sleep(0.1)  # polling interval, not synchronisation
        heads = [head for head in map(peek, sockets) if head]
        during = peak_mb(proc, "VmRSS")  # type: ignore[arg-type]
        started = time.monotonic()
        page, config = other.get("/"), other.get("/config")
        load_s = time.monotonic() - started
    finally:
        for s in sockets:
            s.close()
    assert heads.count(b"HTTP/1.1 200") == SITE.connections, "only the address's turns are sent a file"
    assert heads.count(b"HTTP/1.1 429") == CONNECTIONS - SITE.connections - SITE.waiting
    assert during - before <= GROWTH_MB, f"server memory grew {during - before:.0f} MB"
    assert page[0] == 200 and config[0] == 200
    deadline = time.monotonic() + 120
    while (again := Visitor(url).get(SITE_ROUTE + "index.html"))[0] != 200:  # its turns are freed once they close
        assert again[0] == 429 and time.monotonic() < deadline, again
        time.sleep(0.1)  # polling interval, not synchronisation
    after = peak_mb(proc, "VmRSS")  # type: ignore[arg-type]
    assert after - before <= GROWTH_MB
    print(f"slow readers: {CONNECTIONS} connections, server {before:.0f} -> {during:.0f} MB, after closing "
          f"{after:.0f} MB; another address's page load {load_s:.2f} s meanwhile")
    tally("route_attacks", CONNECTIONS)
    tally("route_breaches", heads.count(b"HTTP/1.1 200") - SITE.connections)
