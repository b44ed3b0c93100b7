"""A visitor of a page on loopback, speaking HTTP and Gradio's queue API by hand from a chosen loopback address
(127.0.0.1, 127.0.0.2, ...: every 127/8 address reaches a server bound to 127.0.0.1), so a test can be two clients."""

from __future__ import annotations

import http.client
import json
import socket
import urllib.parse
import uuid
from typing import Any

TIMEOUT = 60.0


class Visitor:
    """HTTP requests from one loopback source address to the page at `url`."""

    def __init__(self, url: str, source: str = "127.0.0.1") -> None:
        parts = urllib.parse.urlparse(url)
        self.host, self.port, self.source = parts.hostname or "127.0.0.1", parts.port or 80, source

    def _conn(self, timeout: float = TIMEOUT) -> http.client.HTTPConnection:
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout, source_address=(self.source, 0))

    def get(self, path: str) -> tuple[int, bytes]:
        conn = self._conn()
        try:
            conn.request("GET", path)
            r = conn.getresponse()
            return r.status, r.read()
        finally:
            conn.close()

    def post(self, path: str, body: dict[str, Any]) -> tuple[int, Any]:
        conn = self._conn()
        try:
            conn.request("POST", path, json.dumps(body).encode(), {"Content-Type": "application/json"})
            r = conn.getresponse()
            raw = r.read()
        finally:
            conn.close()
        try:
            return r.status, json.loads(raw)
        except ValueError:
            return r.status, raw.decode("utf-8", "replace")

    def join(self, fn_index: int, data: list[Any], session: str | None = None) -> tuple[int, Any, str]:
        """Joins the queue: (HTTP status, the answer, the session hash used)."""
        session = session or uuid.uuid4().hex
        status, answer = self.post("/gradio_api/queue/join", {"data": data, "fn_index": fn_index,
                                                              "session_hash": session, "event_data": None,
                                                              "trigger_id": None})
        return status, answer, session

    def result(self, session: str, event_id: str, timeout: float = 120.0) -> dict[str, Any]:
        """Reads the session's event stream until `event_id` completes; returns its process_completed message."""
        conn = self._conn(timeout)
        try:
            conn.request("GET", f"/gradio_api/queue/data?session_hash={session}")
            stream = conn.getresponse()
            while line := stream.readline():
                text = line.decode("utf-8").strip()
                if not text.startswith("data:"):
                    continue
                message = json.loads(text[5:])
                if message.get("msg") == "process_completed" and message.get("event_id") == event_id:
                    return message
        finally:
            conn.close()
        raise AssertionError("the event stream ended without process_completed")

    def call(self, fn_index: int, data: list[Any], session: str | None = None) -> tuple[int, Any]:
        """Joins and waits: (200, the process_completed message), or (status, the refusal) when the join was refused."""
        status, answer, session = self.join(fn_index, data, session)
        if status != 200:
            return status, answer
        return status, self.result(session, answer["event_id"])

    def upload(self, files: list[tuple[str, bytes]]) -> tuple[int, str]:
        """POSTs files to Gradio's upload route with `Expect: 100-continue`, so a refusal comes before the body is
        sent (as curl does for a large body); (status, response text)."""
        boundary = uuid.uuid4().hex
        head = b"".join(f"--{boundary}\r\nContent-Disposition: form-data; name=\"files\"; filename=\"{name}\"\r\n"
                        "Content-Type: application/octet-stream\r\n\r\n".encode() + data + b"\r\n"
                        for name, data in files) + f"--{boundary}--\r\n".encode()
        sock = socket.create_connection((self.host, self.port), timeout=TIMEOUT, source_address=(self.source, 0))
        try:
            sock.sendall((f"POST /gradio_api/upload HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
                          f"Content-Type: multipart/form-data; boundary={boundary}\r\nContent-Length: {len(head)}\r\n"
                          "Expect: 100-continue\r\nConnection: close\r\n\r\n").encode())
            reader = sock.makefile("rb")
            status = int(reader.readline().split()[1])
            if status == 100:
                while reader.readline() not in (b"\r\n", b""):
                    pass
                sock.sendall(head)
                status = int(reader.readline().split()[1])
            length = 0
            while (line := reader.readline()) not in (b"\r\n", b""):
                name, _, value = line.decode("latin-1").partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value)
            return status, reader.read(length).decode("utf-8", "replace")
        finally:
            sock.close()
