"""A loopback OpenAI-compatible server that serves a diffusion LM as SGLang serves one (`--dllm-algorithm`).

SGLang decodes a dLLM (LLaDA2.x) block by block and streams each block's text once the block is settled, in its
OpenAI-compatible chat chunks: a first chunk with the assistant role and empty content, one content chunk per
block, a last chunk with finish_reason ("stop" with matched_stop = the end-of-text id, or "length"), then, with
stream_options.include_usage, a chunk with no choices and the usage, then `data: [DONE]`. GET /v1/models lists the
served model with owned_by "sglang". Here the model is Converge's built-in diffusion twin, run by the project's
sampler, so what arrives can be checked against the model's own answer (`answer`). Chunks sent are kept in
`server.sent` for the tests.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Iterator

BLOCK = 8  # tokens per block, as SGLang's dLLM block size (32 for LLaDA2.x; small here to see several chunks)
MODEL = "inclusionAI/LLaDA2.1-mini"


@dataclass
class Answer:
    """What the served model answered: its token ids up to end-of-text, the text of each block, how it ended."""

    ids: list[int]
    blocks: list[str] = field(default_factory=list)
    finish: str = "length"
    eos_id: int | None = None


def answer(prompt: str, max_tokens: int, temperature: float, block: int = BLOCK) -> Answer:
    """Runs the built-in diffusion twin semi-autoregressively in blocks of `block` tokens and returns, per block, the
    text it adds (as SGLang's detokenizer sends a finished block: the new text since the last), up to end-of-text."""
    from app.engine import diffusion
    from app.sources.local import twin

    model, tok = twin("diffusion")
    prompt_ids = tok.encode(prompt.rstrip())
    room = (model.max_len - len(prompt_ids)) // block * block  # as a server caps max_tokens to the context left
    max_tokens = min(max_tokens, room)
    length = max(block, -(-max_tokens // block) * block)
    s = diffusion.DiffusionSettings(gen_length=length, steps=length, block_length=block, temperature=temperature,
                                    threshold=None, filter=None, stop_at_eos=True, seed=0)
    final = list(diffusion.generate(model, prompt_ids, s))[-1]
    n = diffusion.answer_length(final.ids, final.masked, model.eos_id)
    out = Answer(ids=[int(i) for i in final.ids[:min(n, max_tokens)]], eos_id=int(model.eos_id),
                 finish="stop" if n < min(len(final.ids), max_tokens) else "length")
    sent = ""
    for end in range(block, len(out.ids) + block, block):
        text = tok.decode(out.ids[:end])
        if text != sent:
            out.blocks.append(text[len(sent):])
            sent = text
    return out


class SGLangServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.sent: list[list[dict[str, Any]]] = []  # per request, the JSON chunks in order
        self.requests: list[dict[str, Any]] = []

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


class _Handler(BaseHTTPRequestHandler):
    server: SGLangServer
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        if self.path.rstrip("/") != "/v1/models":
            return self._json(404, {"object": "error", "message": "Not Found", "type": "NotFoundError", "code": 404})
        self._json(200, {"object": "list", "data": [{"id": MODEL, "object": "model", "created": int(time.time()),
                                                     "owned_by": "sglang", "root": MODEL, "max_model_len": 32768}]})

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        self.server.requests.append(body)
        if self.path.rstrip("/") != "/v1/chat/completions" or not body.get("stream"):
            return self._json(400, {"object": "error", "message": "this test server only streams chat completions",
                                    "type": "BadRequestError", "code": 400})
        prompt = next((m["content"] for m in reversed(body.get("messages", [])) if m.get("role") == "user"), "")
        got = answer(prompt, int(body.get("max_tokens") or 128), float(body.get("temperature", 1.0)))
        rid, created = uuid.uuid4().hex, int(time.time())

        def chunk(delta: dict[str, Any], finish: str | None = None, matched: int | None = None) -> dict[str, Any]:
            return {"id": rid, "object": "chat.completion.chunk", "created": created, "model": body.get("model"),
                    "choices": [{"index": 0, "delta": {"role": None, "content": None, "reasoning_content": None,
                                                       "tool_calls": None, **delta},
                                 "logprobs": None, "finish_reason": finish, "matched_stop": matched}],
                    "usage": None}

        chunks = [chunk({"role": "assistant", "content": ""})]
        chunks += [chunk({"content": text}) for text in got.blocks]
        chunks.append(chunk({}, got.finish, got.eos_id if got.finish == "stop" else None))
        if (body.get("stream_options") or {}).get("include_usage"):
            prompt_tokens = len(prompt.split())
            chunks.append({"id": rid, "object": "chat.completion.chunk", "created": created, "model": body.get("model"),
                           "choices": [], "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": len(got.ids),
                                                    "total_tokens": prompt_tokens + len(got.ids),
                                                    "prompt_tokens_details": None}})
        self.server.sent.append(chunks)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        for c in chunks:
            self.wfile.write(f"data: {json.dumps(c)}\n\n".encode())
            self.wfile.flush()
            time.sleep(0.01)
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()
        self.close_connection = True

    def _json(self, status: int, obj: Any) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@contextlib.contextmanager
def serve() -> Iterator[SGLangServer]:
    """An SGLang-style server on a free loopback port, for the length of the block."""
    server = SGLangServer()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
