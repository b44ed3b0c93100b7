"""The static site's files, served read-only beside the page so that its visitors' browsers can race the twins.

The command line builds the site (`python -m app site`'s folder: onnxruntime-web, the twins' graphs, twins.json, the
samplers and the player's rows) once at start into a folder of its own and hands that folder to the page; the page's
browser race (app/ui/browser_race.js) fetches them from SITE_ROUTE on the page's own origin. This ASGI middleware,
in front of Gradio's routes and behind the door (app/ui/door.py), answers GET and HEAD for exactly the files that
folder held when the page started (a fixed list, read once: no path a visitor writes is ever joined to a folder),
each with its type and `nosniff`; any other path under SITE_ROUTE answers 404 and any other method 405. Nothing
under SITE_ROUTE reads a body or reaches Gradio. The files are large (the runtime and graphs, about 33 MB a visitor):
those that compress (the runtime's WebAssembly, the scripts, twins.json; not the graphs' weights) are compressed
once, at start, and sent gzip-compressed to a browser that accepts it (22 MB a visitor, the page included, in
`python -m app bench --only served`). On a served page the door (app/ui/door.py) holds these downloads to their
budget (app/ui/budgets.py SITE: so many at once an address, so many more waiting, a chunk at a time, a client that
stops reading closed), so no address can keep the server busy or its memory full sending files.
"""

from __future__ import annotations

import gzip
import re
from pathlib import Path
from typing import Any

from starlette.responses import FileResponse, PlainTextResponse, Response
from starlette.types import Receive, Scope, Send

SITE_ROUTE = "/converge-site/"
TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8",
         ".mjs": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8", ".wasm": "application/wasm",
         ".json": "application/json", ".onnx": "application/octet-stream"}
HEADERS = {"X-Content-Type-Options": "nosniff", "Cache-Control": "public, max-age=3600",
           "Cross-Origin-Resource-Policy": "same-origin"}
COMPRESSED = (".html", ".js", ".mjs", ".css", ".wasm", ".json")  # the graphs' float weights shrink by 8% only
NOT_ACCEPTED = re.compile(r"\s*q\s*=\s*0(\.0*)?\s*")  # "gzip;q=0": the client refuses it


def site_files(folder: Path) -> dict[str, Path]:
    """Every file the built site holds, by its path under SITE_ROUTE ('ort/ort.wasm.min.js'), of the types above;
    symbolic links and anything else are left out."""
    folder = folder.resolve()
    return {p.relative_to(folder).as_posix(): p for p in sorted(folder.rglob("*"))
            if p.is_file() and not p.is_symlink() and p.suffix in TYPES}


def accepts_gzip(scope: Scope) -> bool:
    """Whether the request's Accept-Encoding takes gzip (by name or `*`, without q=0)."""
    for key, value in scope.get("headers", []):
        if key.lower() != b"accept-encoding":
            continue
        for part in value.decode("latin-1").split(","):
            name, _, params = part.partition(";")
            if name.strip().lower() in ("gzip", "*") and not NOT_ACCEPTED.fullmatch(params):
                return True
    return False


class SiteFiles:
    """Serves the built site's files under SITE_ROUTE (GET and HEAD only, a fixed list); passes every other request
    on. With no folder (a page launched without the site), it passes everything on, and Gradio answers 404."""

    def __init__(self, app: Any, folder: Path | None = None) -> None:
        self.app = app
        self.files = site_files(Path(folder)) if folder is not None else {}
        self.gzipped = {name: gzip.compress(path.read_bytes(), 6) for name, path in self.files.items()
                        if path.suffix in COMPRESSED}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope.get("type") != "http" or not self.files or not path.startswith(SITE_ROUTE):
            await self.app(scope, receive, send)
            return
        found = self.files.get(path[len(SITE_ROUTE):] or "index.html")
        if scope.get("method") not in ("GET", "HEAD"):
            response: Any = PlainTextResponse("Only GET and HEAD reach the site's files.", status_code=405,
                                              headers={"Allow": "GET, HEAD"})
        elif found is None:
            response = PlainTextResponse("Not found.", status_code=404)
        else:
            response = self._response(path[len(SITE_ROUTE):] or "index.html", scope)
        await response(scope, receive, send)

    def _response(self, name: str, scope: Scope) -> Response:
        """The file `name`, gzip-compressed when it compresses and the browser accepts that."""
        found = self.files[name]
        packed = self.gzipped.get(name)
        if packed is None:
            return FileResponse(found, media_type=TYPES[found.suffix], headers=HEADERS)
        headers = {**HEADERS, "Vary": "Accept-Encoding"}
        if not accepts_gzip(scope):
            return FileResponse(found, media_type=TYPES[found.suffix], headers=headers)
        body = packed if scope.get("method") == "GET" else b""
        return Response(body, media_type=TYPES[found.suffix],
                        headers={**headers, "Content-Encoding": "gzip", "Content-Length": str(len(packed))})
