"""A loopback HTTP server that stands in for the Hugging Face Hub: the routes huggingface_hub's snapshot_download
reads (a repository's revision, its file tree, each file's headers and bytes), serving local folders as repositories.

Tests point HF_ENDPOINT at it (`with serve({"org/name": folder}) as url: ...`). A repository may claim sizes it does
not hold (`claims`: file name -> bytes), so a model too big for the machine can be listed without being stored.
`served` counts the file bodies sent, so a test can tell that nothing was downloaded.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Iterator

SHA = "0123456789abcdef0123456789abcdef01234567"  # the one commit every repository is at


def _files(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())


def _handler(repos: dict[str, Path], claims: dict[str, dict[str, int]], served: list[str]) -> type:
    class Hub(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            return

        def _json(self, body: dict) -> None:
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _missing(self) -> None:
            self.send_response(404)
            self.send_header("X-Error-Code", "RepoNotFound")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def _route(self, body: bool) -> None:
            path = self.path.split("?")[0]
            for repo, folder in repos.items():
                info = f"/api/models/{repo}/revision/"
                if path.startswith(info) and body:
                    names = sorted(set(_files(folder)) | set(claims.get(repo, {})))
                    return self._json({"id": repo, "modelId": repo, "sha": SHA, "private": False, "gated": False,
                                       "disabled": False, "siblings": [{"rfilename": n} for n in names]})
                tree = f"/api/models/{repo}/tree/"
                if path.startswith(tree) and body:
                    sizes = {n: (folder / n).stat().st_size for n in _files(folder)} | claims.get(repo, {})
                    data = json.dumps([{"type": "file", "path": n, "size": size,
                                        "oid": hashlib.sha1(n.encode()).hexdigest()}
                                       for n, size in sorted(sizes.items())]).encode()
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                resolve = f"/{repo}/resolve/"
                if path.startswith(resolve):
                    name = path[len(resolve):].partition("/")[2]
                    claimed = claims.get(repo, {}).get(name)
                    file = folder / name
                    if claimed is None and not file.is_file():
                        return self._missing()
                    data = file.read_bytes() if file.is_file() else b""
                    size = claimed if claimed is not None else len(data)
                    self.send_response(200)
                    self.send_header("X-Repo-Commit", SHA)
                    self.send_header("ETag", f'"{hashlib.sha256(data + str(size).encode()).hexdigest()}"')
                    self.send_header("Content-Length", str(size))
                    self.end_headers()
                    if body:
                        served.append(name)
                        self.wfile.write(data)
                    return
            return self._missing()

        def do_GET(self) -> None:
            self._route(body=True)

        def do_HEAD(self) -> None:
            self._route(body=False)

    return Hub


@contextlib.contextmanager
def serve(repos: dict[str, Path], claims: dict[str, dict[str, int]] | None = None,
          served: list[str] | None = None) -> Iterator[str]:
    """The Hub stand-in on 127.0.0.1 for the duration of the block; yields its base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(repos, claims or {}, served if served is not None else []))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
