"""Any OpenAI-compatible chat endpoint as a source (`openai:MODEL`).

The official `openai` SDK sends the request (and reports HTTP errors, timeouts and dropped connections), but
Converge's own parser reads the stream (`sse_data`, `parse_chunk`): the SDK's stream reader fails on SSE events
that carry no data and on bytes that are not UTF-8, which real servers send. `stream_chat` is shared with the
Mercury source: each parsed chunk becomes one Frame, its text replaced when the chunk says
`diffusion_meta.diffusion_content` and appended otherwise.
"""

from __future__ import annotations

import email.utils
import functools
import importlib
import json
import math
import os
import socket
import threading
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Iterator
from urllib.parse import urlsplit, urlunsplit

from app.engine.options import coerce, option
from app.errors import UserError, counted
from app.sources.base import SourceBase, SourceKind, register
from app.trace.frames import Clock, Frame, clean_text, clean_usage
from app.trace.scrub import scrub_text

DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_TIMEOUT = 60.0
DEFAULT_MAX_TOKENS = 1024
MOST_TOKENS = 131_072  # max_tokens at most: 128k, the longest answer today's chat models write
MAX_RETRIES = 0
ENTERED_KEY = "the API key you entered"


@functools.cache
def _tls_context() -> Any:
    """The TLS context (the CA store the SDK's httpx loads, with its own defaults) every SDK client shares."""
    import httpx2

    return httpx2.create_ssl_context()


def sdk_client(api_key: str, base_url: str, timeout: float, max_retries: int) -> Any:
    """The `openai` SDK's client for one request, on an HTTP client whose TLS context is made once per process
    (`_tls_context`): httpx made one per client, about 20 ms of CPU each time a race started or a model list was
    read."""
    import openai

    return openai.OpenAI(api_key=api_key, base_url=base_url, timeout=timeout, max_retries=max_retries,
                         http_client=openai.DefaultHttpxClient(verify=_tls_context()))


class _Malformed(Exception):
    """A chunk that parsed as JSON but not as a chat completion chunk."""


def check_base_url(url: str) -> str:
    """The base URL without a trailing slash; raises UserError unless it is an http(s) URL with a host."""
    url = (url or "").strip().rstrip("/")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 (raises ValueError for a port that is not a number)
        valid = parts.scheme in ("http", "https") and bool(parts.hostname) and url.isprintable() and " " not in url
    except ValueError:
        valid = False
    if not valid:
        raise UserError(f"The base URL {clean_text(public_url(url))[:200]!r} is not valid: give one like "
                        "https://api.example.com/v1.")
    return url


def check_key(key: str, key_hint: str) -> str:
    """The key without surrounding whitespace; raises UserError (never quoting it) when an HTTP header cannot
    carry it."""
    key = key.strip()
    if not key.isascii() or not key.isprintable() or any(c.isspace() for c in key):
        raise UserError(f"The API key has a space, a line break or a character that is not plain ASCII, which an "
                        f"HTTP header cannot carry: check {key_hint}.")
    return key


def public_url(url: str) -> str:
    """The URL with any user:password@ part and query string dropped, safe to record and show."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        if parts.port:
            host = f"{host}:{parts.port}"
    except ValueError:  # not a URL at all (a bad port, a broken IPv6 address): show only its scheme
        return url.partition("://")[0][:20] + "://"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def host_of(url: str) -> str:
    parts = urlsplit(url)
    return (parts.hostname or url) + (f":{parts.port}" if parts.port else "")


def stream_chat(*, base_url: str, api_key: str, key_hint: str, model: str, prompt: str, params: dict[str, Any],
                extra_body: dict[str, Any] | None, cancel: threading.Event, timeout: float,
                max_retries: int = MAX_RETRIES) -> Iterator[Frame]:
    """Streams one chat completion as Frames: one per content chunk, then a final one carrying the usage.

    Raises UserError (one sentence, never the key) for any failure, after the frames received
    before it have been yielded. Returns quietly, without a final frame, when `cancel` is set.
    """
    import openai

    host = host_of(base_url)
    api_key = check_key(api_key, key_hint)
    prompt, model = clean_text(prompt), clean_text(model)
    client = sdk_client(api_key, base_url, timeout, max_retries)
    text, frames, finish, usage = "", 0, None, None
    done = threading.Event()
    context: dict[str, Any] = {"host": host, "key": api_key, "key_hint": key_hint, "model": model, "timeout": timeout}
    try:
        clock = Clock()
        stream = _request(client, model, prompt, params, extra_body, context)
        threading.Thread(target=_watch_cancel, args=(cancel, done, stream.response), daemon=True,
                         name="chat-cancel-watch").start()
        try:
            for data in sse_data(stream.response):
                t = clock()
                if cancel.is_set():
                    return
                content, replace, chunk_finish, chunk_usage = parse_chunk(data, stream.response.request)
                finish = chunk_finish or finish
                usage = clean_usage(chunk_usage) or usage
                if content is None or (content == "" and not replace):
                    continue
                content = clean_text(content)
                text = content if replace else text + content
                yield Frame(t=t, step=frames, text=text)
                frames += 1
        except openai.APIError as err:
            if cancel.is_set():
                return
            if finish is None or not isinstance(err, openai.APIConnectionError):
                raise UserError(describe(err, frames=frames, **context)) from err
            # the answer had finished; only the closing usage chunk or [DONE] was lost: the answer stands
        except _Malformed as err:
            raise UserError(f"{host} sent a malformed chunk after {_n_frames(frames)}, "
                            "so the stream was stopped there.") from err
        finally:
            stream.close()
        if cancel.is_set():
            return
        if finish is None:
            raise UserError(f"The stream from {host} ended after {_n_frames(frames)} without finishing the answer: "
                            "try again.")
        yield Frame(t=clock(), step=frames, text=text, final=True, usage=usage)
    finally:
        done.set()
        client.close()


def _request(client: Any, model: str, prompt: str, params: dict[str, Any], extra_body: dict[str, Any] | None,
             context: dict[str, Any]) -> Any:
    """The streaming request through the SDK; an API error before any chunk becomes one sentence (never the key)."""
    import openai

    try:
        return client.chat.completions.create(
            model=model, messages=[{"role": "user", "content": prompt}], stream=True,
            stream_options={"include_usage": True}, extra_body=extra_body or None, **params)
    except openai.APIError as err:
        raise UserError(describe(err, frames=0, **context)) from err


def sse_data(response: Any) -> Iterator[str]:
    """The data of each server-sent event in a streamed response, up to `[DONE]`, read as the SSE spec says.

    Comments, `event:`, `id:` and `retry:` lines and events without data are skipped (the SDK's own reader
    turns an event without data into a JSON error); a line break of any kind ends a line, and bytes that are
    not UTF-8 become U+FFFD. Network failures raise the SDK's APITimeoutError or APIConnectionError.
    """
    import openai

    timeouts, network = _network_errors(response)
    data: list[str] = []
    try:
        for line in response.iter_lines():
            if line:
                name, _, value = line.partition(":")
                if name == "data":
                    data.append(value[1:] if value.startswith(" ") else value)
                continue
            if not data:
                continue
            event, data = "\n".join(data), []
            if event.startswith("[DONE]"):
                return
            yield event
        if data and not data[0].startswith("[DONE]"):
            yield "\n".join(data)  # the body ended without the blank line that closes its last event
    except timeouts as err:
        raise openai.APITimeoutError(request=response.request) from err
    except network as err:
        raise openai.APIConnectionError(request=response.request) from err


def _network_errors(response: Any) -> tuple[tuple[type[BaseException], ...], tuple[type[BaseException], ...]]:
    """(timeout errors, other network errors) of the HTTP library behind `response` (the SDK's, whichever it is)."""
    lib = importlib.import_module(type(response).__module__.split(".")[0])
    timeouts = tuple(c for c in (getattr(lib, "TimeoutException", None),) if c)
    network = tuple(c for c in (getattr(lib, "RequestError", None), getattr(lib, "StreamError", None)) if c)
    return timeouts or (TimeoutError,), (*network, OSError)


def parse_chunk(data: str, request: Any = None) -> tuple[str | None, bool, str | None, dict[str, Any] | None]:
    """(content, replace?, finish_reason, usage) of one event's data; raises _Malformed for a chunk of the wrong
    shape and openai.APIError for an error event (`{"error": {...}}`), as the SDK does.

    Tolerant where nothing is lost: a chunk without choices (a keep-alive `{}`) carries nothing, and usage, a
    finish reason or a delta of the wrong type is ignored. Data that is not a JSON object, choices that are not
    a list or content that is not a string stop the stream.
    """
    import openai

    try:
        chunk = json.loads(data)
    except (ValueError, RecursionError) as err:
        raise _Malformed("not JSON") from err
    if not isinstance(chunk, dict):
        raise _Malformed("the chunk is not an object")
    error = chunk.get("error")
    if error:
        message = error.get("message") if isinstance(error, dict) else None
        raise openai.APIError(message if isinstance(message, str) and message else "An error occurred during streaming",
                              request=request, body=error)
    choices = chunk.get("choices")
    if choices is None:
        choices = []
    if not isinstance(choices, list):
        raise _Malformed("choices is not a list")
    usage = chunk.get("usage")
    usage = usage if isinstance(usage, dict) else None
    meta = chunk.get("diffusion_meta")
    replace = isinstance(meta, dict) and meta.get("diffusion_content") is True
    choice = next((c for c in choices if isinstance(c, dict) and c.get("index", 0) == 0), None)
    if choice is None:
        return None, replace, None, usage
    delta = choice.get("delta")
    content = delta.get("content") if isinstance(delta, dict) else None
    if content is not None and not isinstance(content, str):
        raise _Malformed("content is not a string")
    finish = choice.get("finish_reason")
    return content, replace, finish if isinstance(finish, str) else None, usage


def _watch_cancel(cancel: threading.Event, done: threading.Event, response: Any) -> None:
    """Shuts the stream's socket when `cancel` is set, so Stop ends even a stalled read at once."""
    while not done.is_set():
        if cancel.wait(0.2):
            if not done.is_set():
                _shutdown(response)
            return


def _shutdown(response: Any) -> None:
    try:
        sock = response.extensions["network_stream"].get_extra_info("socket")
        sock.shutdown(socket.SHUT_RDWR)
    except Exception:  # no socket to reach (other transport): closing the response is the fallback
        response.close()


def _n_frames(n: int) -> str:
    return counted(n, "frame")


def redact(message: Any, key: str, limit: int = 200) -> str:
    """A server's message made safe to show: the key removed, whitespace collapsed, length capped, no final period."""
    text = scrub_text(" ".join(str(message or "").split()), [key] if key else [])
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return text.rstrip(". ")


def _server_message(err: Any) -> str:
    body = getattr(err, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])
        if isinstance(body.get("message"), str):
            return body["message"]
    return ""


def _retry_after(err: Any) -> str:
    """'try again in N s' from Retry-After(-ms) (seconds or an HTTP date) when the server sent a sane one, else a plain
    'try again shortly'."""
    headers = getattr(getattr(err, "response", None), "headers", None) or {}
    for name, divisor in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        seconds = _seconds(value, dates=name == "retry-after") if isinstance(value, str) else None
        if seconds is None:
            continue
        seconds /= divisor
        if seconds > 3600:
            return "try again in over an hour"
        return f"try again in {max(1, math.ceil(seconds))} s"
    return "try again shortly"


def _seconds(value: str, dates: bool) -> float | None:
    """A Retry-After value as seconds from now (a number, or with `dates` an HTTP date); None when it is neither."""
    try:
        seconds = float(value)
    except ValueError:
        if not dates:
            return None
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError, OverflowError):
            return None
        if when.tzinfo is None:
            return None
        seconds = max(0.0, (when - datetime.now(timezone.utc)).total_seconds())
    return seconds if math.isfinite(seconds) and seconds >= 0 else None


def describe(err: Any, *, host: str, key: str, key_hint: str, model: str, frames: int, timeout: float) -> str:
    """One sentence for the user about an SDK error; never contains the key."""
    import openai

    after = f" after {_n_frames(frames)}" if frames else ""
    if isinstance(err, openai.APITimeoutError):
        return (f"{host} sent nothing for {timeout:g} s{after}, so the request timed out: "
                "try again or raise the timeout.")
    if isinstance(err, openai.APIConnectionError):
        if frames:
            return f"The connection to {host} dropped{after}: try again."
        return f"Could not connect to {host}: check the base URL and your network."
    if isinstance(err, openai.APIStatusError):
        status = err.status_code
        msg = redact(_server_message(err), key)
        if status == 401:
            return f"{host} rejected the API key (401 Unauthorized): check {key_hint}."
        if status == 404:
            return f"{host} has no model {model!r} (404): check the model name."
        if status == 429:
            return f"{host} is rate limiting requests (429): {_retry_after(err)}."
        if status == 503:
            return f"{host} is overloaded (503{': ' + msg if msg else ''}): {_retry_after(err)}."
        if status >= 500:
            return f"{host} had a server error ({status}): {_retry_after(err)}."
        return f"{host} refused the request ({status}{': ' + msg if msg else ''})."
    msg = redact(getattr(err, "message", "") or _server_message(err), key)
    return f"{host} reported an error{after}: {msg or 'no details given'}."


@dataclass
class ChatSettings:
    """An OpenAI-compatible chat request's settings, each declared once (app/engine/options.py); a number out of
    range is moved into it."""

    temperature: float = option(1.0, "Temperature", min=0.0, max=2.0, step=0.05, clamp=True)
    max_tokens: int = option(DEFAULT_MAX_TOKENS, "Max tokens", min=1, max=MOST_TOKENS, step=1, clamp=True)
    base_url: str = option("", "Base URL",
                           help=f"Any OpenAI-compatible endpoint; empty uses OPENAI_BASE_URL or {DEFAULT_BASE_URL}.")
    timeout: float = option(DEFAULT_TIMEOUT, "Timeout (seconds without a byte)", min=1.0, max=600.0, step=1.0,
                            clamp=True, shown=False)


class OpenAIChatSource(SourceBase):
    """An OpenAI-compatible chat model typing its answer: streamed deltas appended."""

    cannot_why = "a chat API takes a prompt, not a draft to revise"  # in app/sources/revise.py `cannot`

    def __init__(self, model: str, *, api_key: str | None = None, **settings: Any) -> None:
        model = (model or "").strip()
        if not model:
            raise UserError("The openai source needs a model: use openai:MODEL, for example openai:gpt-4o-mini.")
        self.name = f"openai:{model}"
        self.model = model
        self._api_key = api_key or None
        s = coerce(ChatSettings, settings, "openai")
        self.base_url = check_base_url(s.base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL)
        self.temperature, self.max_tokens, self.timeout = s.temperature, s.max_tokens, s.timeout

    def __repr__(self) -> str:
        return f"OpenAIChatSource({self.settings()!r})"

    def settings(self) -> dict[str, Any]:
        return {"model": self.model, "base_url": public_url(self.base_url), "temperature": self.temperature,
                "max_tokens": self.max_tokens, "timeout": self.timeout}

    def stream(self, prompt: str, cancel: threading.Event, defer: bool = False) -> Iterator[Frame]:
        """The chat model's answer as it streams, a frame per chunk (stream_chat).
        `defer` is never given (`defers` is False)."""
        key = self._api_key or os.environ.get("OPENAI_API_KEY")
        if not key:
            raise UserError("Set OPENAI_API_KEY (any value for a local server that needs none) "
                            f"or enter a key to use {self.name}.")
        yield from stream_chat(base_url=self.base_url, api_key=key,
                               key_hint=ENTERED_KEY if self._api_key else "OPENAI_API_KEY",
                               model=self.model, prompt=prompt,
                               params={"temperature": self.temperature, "max_tokens": self.max_tokens},
                               extra_body=None, cancel=cancel, timeout=self.timeout)


register(SourceKind(prefix="openai", make=OpenAIChatSource,
                    label="OpenAI-compatible chat model (OPENAI_API_KEY, OPENAI_BASE_URL)", takes_arg=True,
                    takes_key=True, options=(ChatSettings(),)))
