"""A served page's `/` and `/config` are made once and sent again (app/ui/page_cache.py), so one address asking for the
config over and over no longer makes Gradio deep-copy the page's config for each request (issue 49, item 6); what
varies the reply (its host name) is asked of Gradio again, and a local page passes everything on."""

from __future__ import annotations

import gzip
from typing import Any

from app.serving.policy import LOCAL, Policy, from_launch
from app.ui import door
from app.ui.page_cache import KEPT, PageCache
from tests.fixtures import run_async


class _Page:
    """A page the door watches, by identity."""


class _Gradio:
    """Stands for Gradio's routes: answers each request with its host and a count, and counts what reached it."""

    def __init__(self, page: Any, status: int = 200) -> None:
        self.page, self.status, self.reached = page, status, []

    def get_blocks(self) -> Any:
        return self.page

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        host = dict(scope["headers"]).get(b"host", b"")
        self.reached.append((scope["path"], host))
        await send({"type": "http.response.start", "status": self.status, "headers": []})
        await send({"type": "http.response.body", "body": b"%s %d" % (host, len(self.reached)), "more_body": True})
        await send({"type": "http.response.body", "body": b"!"})


def ask(cache: PageCache, gradio: _Gradio, path: str, host: bytes = b"example.org", gzipped: bool = False) -> bytes:
    said: list[bytes] = []
    encoding: list[bytes] = []

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.body":
            said.append(message.get("body", b""))
        else:
            encoding.extend(v for k, v in message["headers"] if k == b"content-encoding")

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    headers = [(b"host", host)] + ([(b"accept-encoding", b"gzip, deflate")] if gzipped else [])
    scope = {"type": "http", "method": "GET", "path": path, "headers": headers, "app": gradio, "query_string": b""}
    run_async(cache(scope, receive, send))
    body = b"".join(said)
    return gzip.decompress(body) if encoding == [b"gzip"] else body


def watched(policy: Policy, status: int = 200) -> tuple[PageCache, _Gradio]:
    page = _Page()
    door.watch(page, policy)
    gradio = _Gradio(page, status)
    return PageCache(gradio), gradio


def test_a_served_pages_config_is_made_once_per_host_and_sent_again() -> None:
    cache, gradio = watched(from_launch("0.0.0.0", False, env={}))
    first = [ask(cache, gradio, path) for path in ("/config", "/")]
    again = [ask(cache, gradio, path) for path in ("/config", "/config/", "/")]
    assert first == [b"example.org 1!", b"example.org 2!"] and again == [first[0], first[0], first[1]]
    assert ask(cache, gradio, "/config", b"other.org") == b"other.org 3!"  # its root URL differs: asked again
    assert ask(cache, gradio, "/gradio_api/info") == b"example.org 4!"  # any other route: always passed on
    for n in range(KEPT + 2):  # host names that vary per request only ever miss, and keep at most KEPT replies
        ask(cache, gradio, "/config", b"h%d" % n)
    assert len(cache._kept) == KEPT


def test_a_kept_reply_is_sent_gzip_compressed_to_a_client_that_takes_it() -> None:
    cache, gradio = watched(from_launch("0.0.0.0", False, env={}))
    first = ask(cache, gradio, "/config", gzipped=True)
    assert ask(cache, gradio, "/config", gzipped=True) == first == b"example.org 1!"  # decompressed by `ask`
    start, body = next(iter(cache._kept.values()))
    assert (b"content-encoding", b"gzip") in start["headers"] and gzip.decompress(body) == first
    assert ask(cache, gradio, "/config") == b"example.org 2!"  # one that does not take gzip is answered apart


def test_a_failed_reply_and_a_local_page_are_never_kept() -> None:
    cache, gradio = watched(from_launch("0.0.0.0", False, env={}), status=500)
    assert ask(cache, gradio, "/config") != ask(cache, gradio, "/config") and len(gradio.reached) == 2
    cache, gradio = watched(LOCAL)
    assert ask(cache, gradio, "/config") == b"example.org 1!" and ask(cache, gradio, "/config") == b"example.org 2!"
