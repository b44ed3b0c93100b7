"""The page and its config, made once and sent again to every visitor of a served page who asks the same way.

Why: Gradio builds `GET /` and `GET /config` anew for each request, a deep copy of the page's config (about 0.5 MB)
each time, so 16 connections from one address asking for the config over and over made every other visitor's page
load wait seconds. Both replies are the same for every visitor asking through the same host name (the config's root
URL is all that varies, by the Host and X-Forwarded-* headers), so this ASGI middleware, behind the door
(app/ui/door.py, which still holds each address to its turns), keeps the last KEPT of them by the request's method,
path, query and those headers, and sends a kept one again, gzip-compressed (once, when kept) to a client that takes
it (the config shrinks from about 475 kB to about 40 kB). Only a whole 200 reply of at most MAX_BYTES is kept; a
local page passes everything on.
"""

from __future__ import annotations

import gzip
from collections import OrderedDict
from typing import Any

from app.ui.door import Receive, Scope, Send, page_of
from app.ui.site_files import accepts_gzip

CACHED = ("/", "/config")
KEPT = 16  # replies kept (a host name that varies per request only ever misses, within the door's turns)
MAX_BYTES = 4 * 2**20
KEYED = (b"host", b"x-forwarded-host", b"x-forwarded-proto", b"forwarded", b"accept-encoding", b"cookie")


class PageCache:
    """Sends a served page's `/` and `/config` from the replies it kept (see above); passes the rest on."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self._kept: OrderedDict[tuple[Any, ...], tuple[dict[str, Any], bytes]] = OrderedDict()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "").rstrip("/") or "/"
        if scope.get("type") != "http" or scope.get("method") not in ("GET", "HEAD") or path not in CACHED:
            return await self.app(scope, receive, send)
        blocks, policy = page_of(scope)
        if policy is None or not policy.served:
            return await self.app(scope, receive, send)
        headers = sorted((k.lower(), v) for k, v in scope.get("headers", []) if k.lower() in KEYED)
        key = (id(blocks), scope["method"], path, scope.get("query_string", b""), *headers)
        kept = self._kept.get(key)
        if kept is not None:
            self._kept.move_to_end(key)
            await send(kept[0])
            return await send({"type": "http.response.body", "body": kept[1]})
        start: dict[str, Any] = {}
        chunks: list[bytes] = []
        size = 0

        async def keep(message: dict[str, Any]) -> None:
            nonlocal size
            if message["type"] == "http.response.start":
                start.update(message)
            elif size <= MAX_BYTES:
                chunks.append(message.get("body", b""))
                size += len(chunks[-1])
            await send(message)
            if message["type"] == "http.response.body" and not message.get("more_body") and \
                    start.get("status") == 200 and size <= MAX_BYTES:
                self._kept[key] = packed(start, b"".join(chunks), scope)
                while len(self._kept) > KEPT:
                    self._kept.popitem(last=False)

        await self.app(scope, receive, keep)


def packed(start: dict[str, Any], body: bytes, scope: Scope) -> tuple[dict[str, Any], bytes]:
    """The reply to keep: gzip-compressed, with its headers saying so, when the client takes gzip and the reply is
    not compressed already; as it came otherwise."""
    headers = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"]
    if not accepts_gzip(scope) or any(k.lower() == b"content-encoding" for k, _ in headers):
        return start, body
    body = gzip.compress(body, 6)
    headers += [(b"content-encoding", b"gzip"), (b"vary", b"Accept-Encoding"),
                (b"content-length", str(len(body)).encode())]
    return {**start, "headers": headers}, body
