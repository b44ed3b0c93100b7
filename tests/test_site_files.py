"""The site's files on a served page (app/ui/site_files.py): one address is sent a few at once and the rest wait their
turn, up to a bound past which it is refused, so no visitor keeps the server busy sending files."""

from __future__ import annotations

import asyncio
import gzip
from pathlib import Path
from typing import Any

from app.ui.site_files import SENDING_AT_ONCE, SENDING_HELD, SITE_ROUTE, SiteFiles
from tests.fixtures import run_async


def request(address: str) -> dict[str, Any]:
    return {"type": "http", "method": "GET", "path": SITE_ROUTE + "race.js", "headers": [],
            "client": (address, 1234)}


def test_an_address_is_sent_a_few_files_at_once_and_refused_past_its_bound(tmp_path: Path) -> None:
    (tmp_path / "race.js").write_text("var x = 1;\n")

    async def passed_on(scope: Any, receive: Any, send: Any) -> None:
        raise AssertionError("a site file reached the page")

    async def work() -> tuple[int, list[int], int, int]:
        files = SiteFiles(passed_on, tmp_path)
        release = asyncio.Event()
        started: list[int] = []
        statuses: list[int] = []

        async def receive() -> dict[str, Any]:
            await asyncio.Event().wait()  # the client never disconnects
            return {}

        def sender(k: int) -> Any:
            async def send(message: dict[str, Any]) -> None:
                if message["type"] == "http.response.start":
                    statuses.append(message["status"])
                    if message["status"] == 200:
                        started.append(k)
                        await release.wait()  # a slow download holds its turn
            return send

        held = [asyncio.create_task(files(request("10.0.0.1"), receive, sender(k))) for k in range(SENDING_HELD)]
        while len(started) < SENDING_AT_ONCE:
            await asyncio.sleep(0)
        for _ in range(50):  # let every waiting request reach its turn's queue
            await asyncio.sleep(0)
        sending = len(started)
        await files(request("10.0.0.1"), receive, sender(-1))  # one more than the bound: refused at once
        refused = statuses[-1]
        other = asyncio.create_task(files(request("10.0.0.2"), receive, sender(-2)))
        while -2 not in started:  # another address is not held up by the first one's turns
            await asyncio.sleep(0)
        release.set()
        await asyncio.gather(*held, other)
        return sending, statuses, refused, len(files._sending)

    sending, statuses, refused, left = run_async(work())
    assert sending == SENDING_AT_ONCE
    assert refused == 429
    assert statuses.count(200) == SENDING_HELD + 1 and left == 0


def sent(files: SiteFiles, path: str, method: str = "GET", accept: str | None = None) -> tuple[dict[str, str], bytes]:
    """The headers and body the site's files answer one request with."""
    headers = [(b"accept-encoding", accept.encode())] if accept is not None else []
    scope = {"type": "http", "method": method, "path": SITE_ROUTE + path, "headers": headers,
             "client": ("10.0.0.3", 1234)}
    out: dict[str, Any] = {"body": b""}

    async def receive() -> dict[str, Any]:
        await asyncio.Event().wait()  # the client stays connected
        return {}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            out["headers"] = {k.decode(): v.decode() for k, v in message["headers"]}
        else:
            out["body"] += message.get("body", b"")

    run_async(files(scope, receive, send))
    return out["headers"], out["body"]


def test_what_compresses_is_sent_gzip_compressed_to_a_browser_that_accepts_it(tmp_path: Path) -> None:
    script = ("var words = " + repr(["fox"] * 2000) + ";\n").encode()
    weights = bytes(range(256)) * 64
    (tmp_path / "race.js").write_bytes(script)
    (tmp_path / "ar.onnx").write_bytes(weights)
    files = SiteFiles(None, tmp_path)
    headers, body = sent(files, "race.js", accept="gzip, deflate, br")
    assert headers["content-encoding"] == "gzip" and gzip.decompress(body) == script and len(body) < len(script) / 10
    assert headers["vary"] == "Accept-Encoding" and int(headers["content-length"]) == len(body)
    for refusing in (None, "identity", "gzip;q=0, br"):  # no gzip for a client that does not take it
        headers, body = sent(files, "race.js", accept=refusing)
        assert "content-encoding" not in headers and body == script, refusing
    headers, body = sent(files, "race.js", "HEAD", accept="gzip")
    assert headers["content-encoding"] == "gzip" and body == b"" and int(headers["content-length"]) > 0
    headers, body = sent(files, "ar.onnx", accept="gzip")  # weights barely compress: sent as they are
    assert "content-encoding" not in headers and body == weights
