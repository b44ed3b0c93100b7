"""The static site's files, served read-only beside the page so that its visitors' browsers can race the twins.

The command line builds the site (`python -m app site`'s folder: onnxruntime-web, the twins' graphs, twins.json, the
samplers and the player's rows) once at start into a folder of its own and hands that folder to the page; the page's
browser race (app/ui/browser_race.js) fetches them from SITE_ROUTE on the page's own origin. This ASGI middleware,
in front of Gradio's routes and behind the door (app/ui/door.py), answers GET and HEAD for exactly the files that
folder held when the page started (a fixed list, read once: no path a visitor writes is ever joined to a folder),
each with its type and `nosniff`; any other path under SITE_ROUTE answers 404 and any other method 405. Nothing
under SITE_ROUTE reads a body or reaches Gradio.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Awaitable, Callable

from starlette.responses import FileResponse, PlainTextResponse

SITE_ROUTE = "/converge-site/"
TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8",
         ".mjs": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8", ".wasm": "application/wasm",
         ".json": "application/json", ".onnx": "application/octet-stream"}
HEADERS = {"X-Content-Type-Options": "nosniff", "Cache-Control": "public, max-age=3600",
           "Cross-Origin-Resource-Policy": "same-origin"}
Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


def site_files(folder: Path) -> dict[str, Path]:
    """Every file the built site holds, by its path under SITE_ROUTE ('ort/ort.wasm.min.js'), of the types above;
    symbolic links and anything else are left out."""
    folder = folder.resolve()
    return {p.relative_to(folder).as_posix(): p for p in sorted(folder.rglob("*"))
            if p.is_file() and not p.is_symlink() and p.suffix in TYPES}


class SiteFiles:
    """Serves the built site's files under SITE_ROUTE (GET and HEAD only, a fixed list); passes every other request
    on. With no folder (a page launched without the site), it passes everything on, and Gradio answers 404."""

    def __init__(self, app: Any, folder: Path | None = None) -> None:
        self.app = app
        self.files = site_files(Path(folder)) if folder is not None else {}

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
            response = FileResponse(found, media_type=TYPES[found.suffix], headers=HEADERS)
        await response(scope, receive, send)
