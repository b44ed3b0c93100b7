"""The site's files on a served page (app/ui/site_files.py behind the door, app/ui/door.py): one address is sent a few
at once and the rest wait their turn, up to a bound past which it is refused, so no visitor keeps the server busy
sending files; a reply leaves a chunk at a time, so a client that never reads holds one chunk, not the file, and a
client that takes nothing for the send timeout is closed and frees its turn."""

from __future__ import annotations

import asyncio
import gzip
import random
from pathlib import Path
from typing import Any

from app.serving.policy import from_launch
from app.ui.budgets import SEND_CHUNK, SITE
from app.ui.door import Door
from app.ui.site_files import SITE_ROUTE, SiteFiles
from tests.fixtures import run_async

SERVED = from_launch("0.0.0.0", False, env={})
IN_ALL = SITE.connections + SITE.waiting  # downloads one address may have running or waiting


def request(address: str, name: str = "race.js") -> dict[str, Any]:
    return {"type": "http", "method": "GET", "path": SITE_ROUTE + name, "headers": [], "client": (address, 1234)}


async def never_disconnects() -> dict[str, Any]:
    await asyncio.Event().wait()
    return {}


def test_an_address_is_sent_a_few_files_at_once_and_refused_past_its_bound(tmp_path: Path) -> None:
    (tmp_path / "race.js").write_text("var x = 1;\n")

    async def passed_on(scope: Any, receive: Any, send: Any) -> None:
        raise AssertionError("a site file reached the page")

    async def work() -> tuple[int, list[int], int, int]:
        door = Door(SiteFiles(passed_on, tmp_path), policy=SERVED)
        release = asyncio.Event()
        started: list[int] = []
        statuses: list[int] = []

        def sender(k: int) -> Any:
            async def send(message: dict[str, Any]) -> None:
                if message["type"] == "http.response.start":
                    statuses.append(message["status"])
                    if message["status"] == 200:
                        started.append(k)
                        await release.wait()  # a slow download holds its turn
            return send

        held = [asyncio.create_task(door(request("10.0.0.1"), never_disconnects, sender(k))) for k in range(IN_ALL)]
        while len(started) < SITE.connections or door.turns.held() < IN_ALL:
            await asyncio.sleep(0)  # a turn of the loop for each request to start or wait for its turn
        sending = len(started)
        await door(request("10.0.0.1"), never_disconnects, sender(-1))  # one more than the bound: refused at once
        refused = statuses[-1]
        other = asyncio.create_task(door(request("10.0.0.2"), never_disconnects, sender(-2)))
        while -2 not in started:  # another address is not held up by the first one's turns
            await asyncio.sleep(0)
        release.set()
        await asyncio.gather(*held, other)
        return sending, statuses, refused, door.turns.held()

    sending, statuses, refused, left = run_async(work())
    assert sending == SITE.connections
    assert refused == 429
    assert statuses.count(200) == IN_ALL + 1 and left == 0


def test_a_reply_leaves_a_chunk_at_a_time_and_a_reader_that_stops_is_closed(tmp_path: Path, monkeypatch: Any) -> None:
    """The door hands a 1 MB reply to the connection SEND_CHUNK bytes at a time; when the client takes nothing for
    the send timeout, the request ends (the server closes the connection) and its turn is free again."""
    import app.ui.door as door_module

    monkeypatch.setattr(door_module, "SEND_TIMEOUT", 0.2)  # a client that never reads: no need to wait 30 s here
    script = bytes(range(256)) * 4096  # 1 MB of what does not compress (sent as it is)
    (tmp_path / "big.js").write_bytes(script)
    draw = random.Random(0)
    gzipped = ("var numbers = " + repr([draw.random() for _ in range(20_000)]) + ";\n").encode()  # 0.4 MB, 0.2 gzipped
    (tmp_path / "words.js").write_bytes(gzipped)

    async def work() -> tuple[list[int], list[int], list[int], int]:
        door = Door(SiteFiles(None, tmp_path), policy=SERVED)
        sizes: list[int] = []
        never = asyncio.Event()

        async def reads(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.body":
                sizes.append(len(message.get("body", b"")))

        await door(request("10.0.0.3", "big.js"), never_disconnects, reads)
        packed: list[int] = []

        async def reads_packed(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.body":
                packed.append(len(message.get("body", b"")))

        scope = {**request("10.0.0.3", "words.js"), "headers": [(b"accept-encoding", b"gzip")]}
        await door(scope, never_disconnects, reads_packed)  # the compressed bytes in memory: chunked as well
        taken: list[int] = []

        async def stops_reading(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.body":
                if taken:
                    await never.wait()  # the client reads one chunk and no more
                taken.append(len(message.get("body", b"")))

        await asyncio.wait_for(door(request("10.0.0.4", "big.js"), never_disconnects, stops_reading), 30)
        return sizes, packed, taken, door.turns.held()

    sizes, packed, taken, held = run_async(work())
    assert sum(sizes) == len(script) and max(sizes) == SEND_CHUNK and \
        sum(n > 0 for n in sizes) == len(script) // SEND_CHUNK
    assert len(packed) > 1 and max(packed) <= SEND_CHUNK
    assert taken == [SEND_CHUNK] and held == 0


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
