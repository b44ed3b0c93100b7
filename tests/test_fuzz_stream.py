"""Property tests of the stream ingest: hypothesis builds chat streams (random text, hostile text included), then
splits,
bursts, duplicates, reorders, truncates and spoils them; the real openai SDK sends the request, the loopback server
answers with those bytes, and Converge's own stream parser (app.sources.openai_chat.sse_data) reads them. Whatever
arrives, the source raises nothing but UserError and yields every well-formed frame before the first fatal chunk,
in order, with the right text (replaced or appended per chunk)."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.analysis.changes import SideAnalyzer
from app.errors import UserError
from app.sources.base import make_source
from app.view.payload import wire_rows
from tests.hostile import HOSTILE, as_stored
from tests.reliability import tally
from tests.wire_server import DEFAULT_KEY, SCRIPTS, script

FUZZ = settings(max_examples=150, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                       HealthCheck.data_too_large])

texts = st.one_of(
    st.text(max_size=40),
    st.sampled_from(list(HOSTILE.values())),
    st.text(st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF), min_size=1, max_size=3),
)

# chunks that carry nothing or carry a field of the wrong type that the client ignores: the stream goes on
BENIGN = [
    b": keep-alive comment\n\n",
    b"event: ping\ndata: {}\n\n",
    b'data: {"choices": null}\n\n',
    b'data: {"id": "x", "object": "chat.completion.chunk", "choices": []}\n\n',
    b'data: {"choices": [{"index": 0, "delta": {}}]}\n\n',
    b'data: {"choices": [{"index": 0, "delta": {"content": null}}]}\n\n',
    b'data: {"choices": [{"index": 0, "delta": "not an object"}]}\n\n',
    b'data: {"choices": [{"index": 1, "delta": {"content": "another choice"}}]}\n\n',
    b'data: {"choices": [], "usage": "not an object"}\n\n',
    b'data: {"choices": [], "usage": {"completion_tokens": 1e999}}\n\n',
    b"id: 7\nretry: 10\n\n",
]

# chunks after which the client stops with a clear message
FATAL = [
    b"data: {not json\n\n",
    b"data: 5\n\n",
    b"data: null\n\n",
    b'data: ["a", "list"]\n\n',
    b'data: {"choices": "not a list"}\n\n',
    b'data: {"choices": {"index": 0}}\n\n',
    b'data: {"choices": [{"index": 0, "delta": {"content": 42}}]}\n\n',
    b'data: {"choices": [{"index": 0, "delta": {"content": ["a"]}}]}\n\n',
    b'data: {"error": {"message": "upstream failed", "type": "server_error"}}\n\n',
    b"data: " + b"[" * 50_000 + b"]" * 50_000 + b"\n\n",
]


@dataclass
class Stream:
    """What the server will send, and what the client must make of it."""

    pieces: list[bytes]
    complete: bool
    expected: list[str]  # the text of each frame the client must yield, in order
    finished: bool  # the stream ends cleanly with a finish reason: a final frame and no error
    fatal: bool  # a fatal chunk or a cut ends the stream early: a UserError
    events: list[bytes] = field(default_factory=list)


def content_chunk(content: Any, replace: bool, extra_choice: bool, crlf: bool) -> bytes:
    choice = {"index": 0, "delta": {"content": content}, "finish_reason": None}
    chunk: dict[str, Any] = {"id": "chatcmpl-fuzz", "object": "chat.completion.chunk",
                             "choices": [{"index": 1, "delta": {"content": "ignored"}}, choice] if extra_choice
                             else [choice]}
    if replace:
        chunk["diffusion_meta"] = {"diffusion_content": True, "diffusion_progress": 0}
    data = b"data: " + json.dumps(chunk).encode("utf-8")
    return data + (b"\r\n\r\n" if crlf else b"\n\n")


@st.composite
def streams(draw: st.DrawFn) -> Stream:
    """A chat stream: content chunks (replace or append), duplicated and reordered, with benign and fatal chunks mixed
    in, a finish chunk, usage and [DONE] unless it is cut short, split into socket writes at random bytes."""
    mode = draw(st.sampled_from(["replace", "append", "mixed"]))
    contents = draw(st.lists(texts, min_size=1, max_size=8))
    flags = [mode == "replace" or (mode == "mixed" and draw(st.booleans())) for _ in contents]
    pairs = list(zip(contents, flags))
    pairs += [pairs[i] for i in draw(st.lists(st.integers(0, len(pairs) - 1), max_size=3))]  # duplicated chunks
    pairs = draw(st.permutations(pairs))  # reordered chunks
    events: list[tuple[str, bytes, Any]] = [
        ("content", content_chunk(c, r, draw(st.booleans()), draw(st.booleans())), (c, r)) for c, r in pairs]
    for _ in range(draw(st.integers(0, 3))):
        events.insert(draw(st.integers(0, len(events))), ("benign", draw(st.sampled_from(BENIGN)), None))
    if draw(st.integers(0, 3)) == 0:
        events.insert(draw(st.integers(0, len(events))), ("fatal", draw(st.sampled_from(FATAL)), None))
    ending = draw(st.sampled_from(["done", "done", "no-done", "no-finish", "cut"]))
    if ending in ("done", "no-done", "cut"):
        events.append(("finish", b'data: {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}\n\n', None))
        events.append(("usage", b'data: {"choices": [], "usage": {"completion_tokens": 3, "total_tokens": 9}}\n\n',
                       None))
    if ending in ("done", "cut"):
        events.append(("done", b"data: [DONE]\n\n", None))
    body = b"".join(e[1] for e in events)
    cut = draw(st.integers(0, len(body) - 1)) if ending == "cut" else len(body)
    splits = sorted(set(draw(st.lists(st.integers(1, max(1, cut - 1)), max_size=6)))) if cut > 1 else []
    pieces = [body[a:b] for a, b in zip([0, *splits], [*splits, cut])]

    expected: list[str] = []
    text, offset, fatal, finish, done = "", 0, False, False, False
    for kind, data, payload in events:
        offset += len(data)
        if offset > cut:  # this event never arrived whole
            fatal = fatal or not done
            break
        if kind == "fatal":
            fatal = True
            break
        if kind == "content":
            content, replace = payload
            content = as_stored(json.loads(json.dumps(content)))  # JSON joins a surrogate pair into one character
            if content or replace:
                text = content if replace else text + content
                expected.append(text)
        finish = finish or kind == "finish"
        done = done or kind == "done"
        if done:
            break
    finished = not fatal and finish
    if finished:
        expected.append(text)
    return Stream(pieces=pieces, complete=ending != "cut", expected=expected, finished=finished,
                  fatal=fatal or not finish, events=[e[1] for e in events])


def read_stream(base_url: str, stream: Stream) -> tuple[list[Any], Exception | None]:
    """Serves the stream once and reads it with the openai source; any exception but UserError propagates."""
    model = script(stream.pieces, complete=stream.complete)
    source = make_source(f"openai:{model}", base_url=base_url, api_key=DEFAULT_KEY, timeout=30)
    frames: list[Any] = []
    try:
        for frame in source.stream("fuzz", threading.Event()):
            frames.append(frame)
    except UserError as err:
        return frames, err
    finally:
        SCRIPTS.pop(model, None)
    return frames, None


@FUZZ
@given(stream=streams())
def test_a_fuzzed_stream_never_raises_and_never_loses_a_well_formed_frame(wire_server: str, stream: Stream) -> None:
    frames, err = read_stream(wire_server, stream)
    tally("fuzz_stream_cases")
    got = [f.text for f in frames]
    lost = max(0, len(stream.expected) - len(got))
    tally("lost_frames", lost)
    assert got == stream.expected, (got, stream.expected)
    assert [f.step for f in frames] == list(range(len(frames)))
    assert [f.t for f in frames] == sorted(f.t for f in frames)
    assert (err is None) == stream.finished, err
    if stream.finished:
        assert frames[-1].final and not any(f.final for f in frames[:-1])
    else:
        assert str(err) and DEFAULT_KEY not in str(err)
    analyzer = SideAnalyzer()
    json.dumps(wire_rows([analyzer.add(f) for f in frames]), allow_nan=False)  # what the page would be sent


@pytest.mark.parametrize("name", ["benign", "fatal"])
def test_every_catalogued_spoilt_chunk_is_handled(wire_server: str, name: str) -> None:
    """Each benign chunk is skipped and the answer finishes; each fatal one stops the stream with a message,
    the frame before it kept."""
    good = content_chunk("Hello", False, False, False)
    for spoilt in BENIGN if name == "benign" else FATAL:
        tail = [content_chunk(" world", False, False, False),
                b'data: {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}\n\n', b"data: [DONE]\n\n"]
        frames, err = read_stream(wire_server, Stream([good, spoilt, *tail], True, [], False, False))
        tally("fuzz_stream_cases")
        if name == "benign":
            assert err is None and [f.text for f in frames] == ["Hello", "Hello world", "Hello world"], spoilt[:60]
        else:
            assert isinstance(err, UserError) and [f.text for f in frames] == ["Hello"], spoilt[:60]


def test_bytes_that_are_not_utf8_show_as_replacement_characters_and_the_stream_goes_on(wire_server: str) -> None:
    chunks = [content_chunk("Hello", False, False, False),
              b'data: {"choices": [{"index": 0, "delta": {"content": " \xff\xfe!"}}]}\n\n',
              b'data: {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}\n\n', b"data: [DONE]\n\n"]
    frames, err = read_stream(wire_server, Stream(chunks, True, [], False, False))
    tally("fuzz_stream_cases")
    assert err is None and [f.text for f in frames] == ["Hello", "Hello \ufffd\ufffd!", "Hello \ufffd\ufffd!"]
