"""A loopback HTTP server that speaks Inception's documented chat wire format, faults included.

Tests drive the real `openai` SDK against it (`with serve() as base_url: ...`); run it by hand with
`python tests/wire_server.py --port 8011 --fps 15` and point a source at http://127.0.0.1:8011/v1.

Behaviour is chosen by the request:
- `diffusing: true` in the body: whole-draft frames whose noise settles block by block, left to right,
  while the draft grows (replace mode, `diffusion_meta`). Otherwise plain deltas to append: in blocks for
  `mercury*` models (Mercury's non-diffusing stream), word by word for any other model.
- The prompt picks the answer: the text after `ECHO:` in the last user message comes back verbatim.
- The model name picks a fault, see FAULTS. `max_tokens` cuts the answer (finish_reason "length").
Noise is seeded from the model and prompt, so every run of a request streams the same frames.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import random
import re
import select
import threading
import zlib
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Iterator

DEFAULT_KEY = "sk-wire-SENTINEL-6c1f0e9d2a"  # a sentinel: the suite fails if it shows up in any file, log or page
DEFAULT_FPS = 15.0
BLOCK = 24
STEPS = 4
MERCURY_BLOCK = 32
NOISE = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789%!#@&*?+=~"
ECHO = "ECHO:"
ANSWERS = (
    "Diffusion models draft the whole answer at once and refine it, while autoregressive models type one token after "
    "another.",
    "The capital of France is Paris, which sits on the Seine and has been the seat of government for centuries.",
    "Two plus two is four. Adding the same number twice is the same as multiplying it by two.",
    "A haiku has three lines of five, seven and five syllables, and often names a season.",
)
MODELS = ("mercury-2", "mercury-edit-2", "gpt-test")

FAULTS = {
    "fail-401": "401 authentication_error (the message echoes the key it was sent)",
    "fail-402": "402 account_error",
    "fail-404": "404 model_not_found",
    "fail-429": "429 rate_limit_error, no Retry-After",
    "fail-429-retry": "429 rate_limit_error with Retry-After: 7",
    "fail-500": "500 server_error",
    "fail-503": "503 Engine Overloaded, no Retry-After",
    "fail-503-retry": "503 Engine Overloaded with Retry-After: 5",
    "cut-after-N": "N content chunks, then the connection closes mid chunked body (no [DONE])",
    "eof-after-N": "N content chunks, then a clean EOF of a close-delimited body: no finish_reason, no [DONE]",
    "malformed-after-N": "N content chunks, then a chunk that is not valid JSON",
    "badshape-after-N": "N content chunks, then valid JSON of the wrong shape (choices is a string)",
    "error-after-N": "N content chunks, then an SSE error event {error: {...}} whose message echoes the key",
    "stall-after-N": "N content chunks, then silence until the client hangs up (for read timeouts)",
    "keepalive-after-N": "N content chunks, then an SSE keep-alive comment twice a second until the client hangs up "
                         "(bytes keep coming, so no read timeout ever fires)",
    "stall-headers": "never sends the response headers (for timeouts before the first byte)",
    "burst-N": "a normal stream written N events per socket write",
    "mixed": "diffusing frames (replace) for the first half of the answer, then plain deltas (append) for the rest",
    "echo-request": "answers with the JSON body of the request itself (never its headers)",
    "echo-key": "answers with the key it was sent (from the Authorization header), and names it in the usage too",
    "script-ID": "replays a response registered in-process with script(): any status, headers and body bytes, "
                 "one socket write per piece",
}
_ERRORS = {
    "401": (401, "authentication_error", "invalid_api_key"),
    "402": (402, "account_error", "account_inactive"),
    "404": (404, "invalid_request_error", "model_not_found"),
    "429": (429, "rate_limit_error", "rate_limit_reached"),
    "500": (500, "server_error", None),
    "503": (503, "server_error", "engine_overloaded"),
}
_RETRY_AFTER = {"429": "7", "503": "5"}
_MESSAGES = {
    "402": "Your account is not active.",
    "429": "Rate limit reached for requests.",
    "500": "The server had an error while processing your request.",
    "503": "Engine Overloaded",
}


@dataclass
class Script:
    """A response given byte for byte: status, headers, and body pieces each sent in one write (chunked)."""

    pieces: list[bytes | threading.Event]  # an Event holds the response there until a test sets it
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    complete: bool = True  # False: the connection closes without the chunked body's terminating chunk


SCRIPTS: dict[str, Script] = {}
_script_ids = itertools.count()


def script(pieces: list[bytes | threading.Event], status: int = 200, headers: dict[str, str] | None = None,
           complete: bool = True) -> str:
    """Registers a scripted response (tests and server share this process); returns the model name that selects it."""
    name = f"script-{next(_script_ids)}"
    SCRIPTS[name] = Script(list(pieces), status, dict(headers or {}), complete)
    return name


def parse_model(model: str) -> tuple[str, int]:
    """Split a model name into (behaviour, N): ("cut", 3) for "cut-after-3", ("burst", 4), ("ok", 0)."""
    m = re.fullmatch(r"(cut|eof|malformed|badshape|error|stall|keepalive)-after-(\d+)", model)
    if m:
        return m.group(1), int(m.group(2))
    m = re.fullmatch(r"burst-(\d+)", model)
    if m:
        return "burst", max(1, int(m.group(1)))
    if model in ("stall-headers", "echo-request", "echo-key", "mixed"):
        return model, 0
    m = re.fullmatch(r"fail-(\d{3})(-retry)?", model)
    if m and m.group(1) in _ERRORS:
        return "fail" + ("-retry" if m.group(2) else ""), int(m.group(1))
    return "ok", 0


def pieces(text: str) -> list[str]:
    """Word-sized pieces that join back to `text` exactly; the server's stand-in for tokens."""
    return re.findall(r"\S+\s*|\s+", text)


def answer_for(body: dict[str, Any]) -> str:
    """The answer text: after ECHO: in the last user message, the request itself, or a canned answer."""
    if body.get("model") == "echo-request":
        return json.dumps(body, sort_keys=True, ensure_ascii=False)
    prompt = last_user_text(body)
    if ECHO in prompt:
        return prompt.split(ECHO, 1)[1]
    return ANSWERS[zlib.crc32(prompt.encode("utf-8")) % len(ANSWERS)]


def last_user_text(body: dict[str, Any]) -> str:
    for message in reversed(body.get("messages") or []):
        if isinstance(message, dict) and message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):
                return "".join(p.get("text", "") for p in content if isinstance(p, dict))
            return str(content or "")
    return ""


def diffusion_drafts(answer: str, rng: random.Random, block: int = BLOCK, steps: int = STEPS) -> list[str]:
    """Whole drafts: each block starts as noise and settles over `steps` frames, the draft growing a block at a time."""
    drafts: list[str] = []
    for start in range(0, len(answer), block):
        settled, piece = answer[:start], answer[start:start + block]
        order = [i for i, c in enumerate(piece) if not c.isspace()]
        rng.shuffle(order)
        for step in range(steps):
            clean = set(order[: len(order) * step // steps])
            chars = [c if c.isspace() or i in clean else _noise(rng, c) for i, c in enumerate(piece)]
            drafts.append(settled + "".join(chars))
    drafts.append(answer)
    return drafts


def _noise(rng: random.Random, true_char: str) -> str:
    while True:
        c = rng.choice(NOISE)
        if c != true_char:
            return c


def content_events(body: dict[str, Any], answer: str) -> list[dict[str, Any]]:
    """The content chunks of a stream (before finish and usage), in wire shape."""
    model = str(body.get("model", ""))
    rng = random.Random(zlib.crc32(f"{model}\0{answer}".encode("utf-8")))
    if model == "mixed":
        words = pieces(answer)
        head = "".join(words[: len(words) // 2])
        drafts = diffusion_drafts(head, rng)
        return ([_chunk(model, {"content": d}, meta={"diffusion_content": True, "diffusion_progress": 0})
                 for d in drafts]
                + [_chunk(model, {"content": p}) for p in words[len(words) // 2:]])
    if body.get("diffusing") is True:
        drafts = diffusion_drafts(answer, rng)
        return [_chunk(model, {"content": d},
                       meta={"diffusion_content": True, "diffusion_progress": int(i == len(drafts) - 1)})
                for i, d in enumerate(drafts)]
    if model.startswith("mercury"):
        parts = [answer[i:i + MERCURY_BLOCK] for i in range(0, len(answer), MERCURY_BLOCK)]
    else:
        parts = pieces(answer)
    return [_chunk(model, {"content": p}) for p in parts]


def _chunk(model: str, delta: dict[str, Any], finish: str | None = None,
           meta: dict[str, Any] | None = None) -> dict[str, Any]:
    chunk: dict[str, Any] = {"id": "chatcmpl-wire", "object": "chat.completion.chunk", "created": 1700000000,
                             "model": model, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    if meta is not None:
        chunk["diffusion_meta"] = meta
    return chunk


def usage_for(body: dict[str, Any], answer: str) -> dict[str, int]:
    prompt_tokens = len(pieces(last_user_text(body))) + 4
    completion = len(pieces(answer))
    return {"prompt_tokens": prompt_tokens, "reasoning_tokens": 0, "completion_tokens": completion,
            "total_tokens": prompt_tokens + completion, "cached_input_tokens": 0}


def error_body(code: str, message: str) -> dict[str, Any]:
    """The OpenAI error envelope."""
    status, kind, err_code = _ERRORS[code]
    return {"error": {"message": message, "type": kind, "param": None, "code": err_code}}


def sse(obj: Any) -> bytes:
    return b"data: " + (obj if isinstance(obj, bytes) else json.dumps(obj).encode("utf-8")) + b"\n\n"


class WireServer(ThreadingHTTPServer):
    """The HTTP server plus its settings, its request log and a way to wake stalled handlers on shutdown."""

    daemon_threads = True
    block_on_close = False

    def __init__(self, port: int = 0, key: str = DEFAULT_KEY, fps: float = DEFAULT_FPS) -> None:
        super().__init__(("127.0.0.1", port), Handler)
        self.key = key
        self.fps = fps
        self.log: list[dict[str, Any]] = []
        self.stopping = threading.Event()
        self._wake_r, self._wake_w = os.pipe()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Quiet about clients that hang up (timeouts, cuts); anything else is a bug in this server and is printed."""
        import sys

        if not isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            super().handle_error(request, client_address)

    def pace(self) -> None:
        """Waits one frame interval (none when fps is 0); returns at once when the server stops."""
        if self.fps > 0:
            self.stopping.wait(1.0 / self.fps)

    def stop(self) -> None:
        self.stopping.set()
        os.write(self._wake_w, b"x")
        self.shutdown()
        self.server_close()
        os.close(self._wake_r)
        os.close(self._wake_w)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: WireServer

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the request log is kept in memory (GET /v1/_requests), never with headers."""

    def do_GET(self) -> None:
        if self.path.rstrip("/") == "/v1/_requests":
            return self._json(200, self.server.log)
        if not self._authorized():
            return
        if self.path.rstrip("/") == "/v1/models":
            return self._json(200, {"object": "list", "data": [
                {"id": m, "object": "model", "created": 1700000000, "owned_by": "inception"} for m in MODELS]})
        self._json(404, error_body("404", f"No route GET {self.path}."))

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw or b"{}")
            if not isinstance(body, dict):
                raise ValueError
        except ValueError:
            return self._json(400, {"error": {"message": "Request body is not a JSON object.",
                                              "type": "invalid_request_error", "param": None, "code": None}})
        self.server.log.append({"path": self.path, "body": body,
                                "auth": self.headers.get("Authorization") == f"Bearer {self.server.key}"})
        if self.path.rstrip("/") != "/v1/chat/completions":
            return self._json(404, error_body("404", f"No route POST {self.path}."))
        if not self._authorized():
            return
        model = str(body.get("model", ""))
        if model in SCRIPTS:
            return self._script(SCRIPTS[model])
        behaviour, n = parse_model(model)
        if behaviour.startswith("fail"):
            code = str(n)
            message = _MESSAGES.get(code, f"The model `{model}` does not exist.")
            if code == "401":
                message = f"Incorrect API key provided: {self._sent_key()}."
            headers = {"Retry-After": _RETRY_AFTER[code]} if behaviour == "fail-retry" and code in _RETRY_AFTER else {}
            return self._json(n, error_body(code, message), headers)
        if behaviour == "stall-headers":
            return self._stall()
        answer = answer_for(body)
        if behaviour == "echo-key":
            answer = f"The key you sent me is {self._sent_key()} and now it is in my answer."
        max_tokens = body.get("max_tokens")
        finish = "stop"
        if isinstance(max_tokens, int) and len(pieces(answer)) > max_tokens:
            answer, finish = "".join(pieces(answer)[:max_tokens]), "length"
        if not body.get("stream"):
            return self._json(200, {"id": "chatcmpl-wire", "object": "chat.completion", "created": 1700000000,
                                    "model": model,
                                    "choices": [{"index": 0, "message": {"role": "assistant", "content": answer},
                                                 "finish_reason": finish}],
                                    "usage": usage_for(body, answer)})
        self._stream(body, answer, finish, behaviour, n)

    def _authorized(self) -> bool:
        if self.headers.get("Authorization") == f"Bearer {self.server.key}":
            return True
        self._json(401, error_body("401", f"Incorrect API key provided: {self._sent_key()}."))
        return False

    def _sent_key(self) -> str:
        return (self.headers.get("Authorization") or "").removeprefix("Bearer ")

    def _json(self, status: int, obj: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(obj).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _stream(self, body: dict[str, Any], answer: str, finish: str, behaviour: str, n: int) -> None:
        close_delimited = behaviour == "eof"
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        if close_delimited:
            self.send_header("Connection", "close")
            self.close_connection = True
        else:
            self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.flush()
        write = self._write_raw if close_delimited else self._write_chunk
        events = [sse(e) for e in content_events(body, answer)]
        if behaviour in ("cut", "eof", "malformed", "badshape", "error", "stall", "keepalive"):
            events = events[:n]
        else:
            events.append(sse(_chunk(str(body.get("model", "")), {}, finish=finish)))
            if (body.get("stream_options") or {}).get("include_usage"):
                usage: dict[str, Any] = usage_for(body, answer)
                if behaviour == "echo-key":
                    usage["details"] = {self._sent_key(): 1}
                events.append(sse({"id": "chatcmpl-wire", "object": "chat.completion.chunk", "created": 1700000000,
                                   "model": body.get("model"), "choices": [], "usage": usage}))
            events.append(sse(b"[DONE]"))
        burst = n if behaviour == "burst" else 1
        try:
            for i in range(0, len(events), burst):
                if i:
                    self.server.pace()
                write(b"".join(events[i:i + burst]))
            self._fault(behaviour, write)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _fault(self, behaviour: str, write: Any) -> None:
        """What happens after the first N content chunks of a faulty stream."""
        if behaviour == "cut":
            self.close_connection = True  # the chunked body never gets its terminating chunk
        elif behaviour == "eof":
            self.close_connection = True
        elif behaviour == "malformed":
            write(b'data: {"id":"chatcmpl-wire","choices":[{"index":0,"delta":{"content":"oops\n\n')
            self.close_connection = True
        elif behaviour == "badshape":
            write(sse({"id": "chatcmpl-wire", "object": "chat.completion.chunk", "choices": "not a list"}))
            self.close_connection = True
        elif behaviour == "error":
            write(sse({"error": {"message": f"Upstream failure while serving key {self._sent_key()}.",
                                 "type": "server_error", "param": None, "code": "upstream_error"}}))
            write(sse(b"[DONE]"))
            self._write_chunk(b"")
        elif behaviour == "stall":
            self._stall()
        elif behaviour == "keepalive":
            self._keep_alive(write)
        else:
            self._write_chunk(b"")

    def _script(self, scripted: Script) -> None:
        """Sends a registered response: its status and headers, then each piece as one chunk."""
        self.send_response(scripted.status)
        headers = {"Content-Type": "text/event-stream", **scripted.headers}
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            for piece in scripted.pieces:
                if isinstance(piece, threading.Event):
                    while not piece.wait(0.2) and not self.server.stopping.is_set():
                        pass  # held until the test sets the event (or the server stops)
                elif piece:
                    self._write_chunk(piece)
            if scripted.complete:
                self._write_chunk(b"")
            else:
                self.close_connection = True
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _write_chunk(self, data: bytes) -> None:
        """One HTTP chunk in one socket write (an empty one ends the body)."""
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def _write_raw(self, data: bytes) -> None:
        self.wfile.write(data)
        self.wfile.flush()

    def _keep_alive(self, write: Any) -> None:
        """Sends an SSE comment every half second until the client hangs up or the server stops."""
        self.close_connection = True
        with contextlib.suppress(OSError, ValueError):
            while not select.select([self.connection, self.server._wake_r], [], [], 0.5)[0]:
                write(b": keep-alive\n\n")

    def _stall(self) -> None:
        """Sends nothing until the client hangs up or the server stops (no timer: select on both)."""
        self.close_connection = True
        with contextlib.suppress(OSError, ValueError):
            select.select([self.connection, self.server._wake_r], [], [])


@contextlib.contextmanager
def serve(fps: float = DEFAULT_FPS, key: str = DEFAULT_KEY, port: int = 0) -> Iterator[str]:
    """Runs a WireServer on 127.0.0.1 in a thread; yields its base URL (…/v1) and stops it on exit."""
    server = WireServer(port=port, key=key, fps=fps)
    thread = threading.Thread(target=server.serve_forever, name="wire-server", daemon=True)
    thread.start()
    try:
        yield server.base_url
    finally:
        server.stop()
        thread.join()


def collect(source: Any, prompt: str = "hello", cancel: threading.Event | None = None) -> tuple[list, Exception | None]:
    """Every frame a source yields against this server, and the UserError that ended it (or None)."""
    from app.errors import UserError  # here, so the server also runs as a plain script

    frames = []
    try:
        for frame in source.stream(prompt, cancel or threading.Event()):
            frames.append(frame)
    except UserError as err:
        return frames, err
    return frames, None


def requests_seen(base_url: str) -> list[dict[str, Any]]:
    """The request bodies the server at `base_url` has received (GET /v1/_requests; headers are never logged)."""
    import urllib.request

    with urllib.request.urlopen(base_url.rstrip("/") + "/_requests", timeout=10) as response:
        return json.loads(response.read())


def main() -> None:
    parser = argparse.ArgumentParser(description="Serve Inception's chat wire format on 127.0.0.1, faults included.")
    parser.add_argument("--port", type=int, default=8011)
    parser.add_argument("--fps", type=float, default=DEFAULT_FPS,
                        help="socket writes per second (0: as fast as possible)")
    parser.add_argument("--key", default=DEFAULT_KEY, help="the Bearer key clients must send")
    args = parser.parse_args()
    server = WireServer(port=args.port, key=args.key, fps=args.fps)
    print(f"Serving on {server.base_url}; clients send the --key value as their API key. Faults by model name:")
    for name, what in FAULTS.items():
        print(f"  {name:18} {what}")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()


if __name__ == "__main__":
    main()
