"""Property tests of the recording reader: hypothesis writes a real recording (hostile text included), then truncates,
corrupts, splits, merges, drops, duplicates and reorders its lines and slips in garbage. Reading it back never raises
anything but RecordingError (and that only when the header is gone), never loses a line that is still intact, and what
it loads always becomes a player payload and an HTML export."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.export.html import render
from app.trace import library
from app.trace.frames import SIDES, Frame, RecordingWriter, make_header
from app.trace.reading import RecordingError, read_recording
from app.view.payload import recording_payload
from tests.hostile import HOSTILE
from tests.reliability import tally

FUZZ = settings(max_examples=500, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                       HealthCheck.data_too_large])

words = st.one_of(st.text(max_size=12), st.sampled_from(list(HOSTILE.values())),
                  st.text(st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF), min_size=1, max_size=2))
times = st.one_of(st.floats(0, 30, allow_nan=False), st.floats(0, 1e300, allow_nan=False),
                  st.sampled_from([0.0, 5e-324, 2.2e-309, 1e-300, 1.7e308]))
GARBAGE = [
    b"", b"not json", b"[1, 2]", b"null", b'"a string"', b"{}", b"\xff\xfe\x00\x01",
    b'{"type": "frame", "side": "left", "t": NaN, "step": 1}',
    b'{"type": "frame", "side": "left", "t": 1e999, "step": 1}',
    b'{"type": "frame", "side": "left", "t": -1, "step": 1}',
    b'{"type": "frame", "side": "left", "t": 1, "step": 1' + b"0" * 5000 + b"}",
    b'{"type": "frame", "side": "left", "t": 1, "step": 1, "tokens": "abc"}',
    b'{"type": "frame", "side": "left", "t": 1, "step": 1, "tokens": ["a"], "masked": [true, false]}',
    b'{"type": "frame", "side": "left", "t": 1, "step": 1, "usage": {"completion_tokens": NaN}}',
    b'{"type": "frame", "side": "left", "t": 1, "step": 1, "confidence": [], "nfe": true}',
    b'{"type": "frame", "side": "middle", "t": 1, "step": 1}',
    b'{"type": "end", "side": "left", "status": {"x": 1}, "message": null}',
    b'{"type": "header", "schema": 1}',
    b'{"type": "frame", "side": "left", "t": 1, "step": 1, "text": "\\ud800 half \\udfff"}',
    b"[" * 100_000 + b"]" * 100_000,
    b'{"type": "frame", "side": "left", "t": 1, "step": 1, "tokens": ["' + b"A" * 100_000 + b'"]}',
]


@st.composite
def frames(draw: st.DrawFn, n: int) -> list[Frame]:
    """n frames of one side: masked tokens (a diffusion model) or text (a chat model), times in any order."""
    if draw(st.booleans()):
        out = []
        for i in range(n):
            toks = draw(st.lists(words, max_size=6))
            out.append(Frame(t=draw(times), step=i, tokens=toks, masked=draw(st.lists(st.booleans(), min_size=len(toks),
                                                                                            max_size=len(toks))),
                             confidence=[0.5] * len(toks) if draw(st.booleans()) else None, nfe=i, final=i == n - 1))
        return out
    return [Frame(t=draw(times), step=i, text=draw(words), final=i == n - 1,
                  usage={"completion_tokens": i} if i == n - 1 else None) for i in range(n)]


@st.composite
def files(draw: st.DrawFn, tmp: Path) -> tuple[Path, list[bytes], list[bool], bytes]:
    """A recording written by the app, then spoilt line by line; returns the file, its lines, which are intact, and
    the header line as written."""
    path = tmp / f"fuzz-{draw(st.integers(0, 10**9))}.jsonl"
    prompt = draw(st.one_of(words, st.just("\n".join(HOSTILE.values()))))
    sources = {"left": {"name": draw(words), "settings": {}},
               "right": {"name": "openai:" + draw(words), "settings": {}}}
    writer = RecordingWriter(path, make_header(prompt, sources))
    for side in SIDES:
        for frame in draw(frames(draw(st.integers(0, 5)))):
            writer.frame(side, frame)
        if draw(st.booleans()):
            writer.end(side, draw(st.sampled_from(["done", "stopped", "error"])), draw(words))
    writer.close()
    lines = path.read_bytes().split(b"\n")[:-1]
    header = lines[0]
    intact = [True] * len(lines)
    for _ in range(draw(st.integers(0, 4))):
        if not lines:
            break
        i = draw(st.integers(0, len(lines) - 1))
        action = draw(st.sampled_from(["corrupt", "split", "merge", "drop", "duplicate", "swap", "garbage"]))
        if action == "corrupt" and lines[i]:
            j = draw(st.integers(0, len(lines[i]) - 1))
            spoilt = lines[i][:j] + bytes([draw(st.integers(0, 255))]) + lines[i][j + 1:]
            intact[i] = intact[i] and spoilt == lines[i]
            lines[i] = spoilt
        elif action == "split" and len(lines[i]) > 1:
            j = draw(st.integers(1, len(lines[i]) - 1))
            lines[i:i + 1] = [lines[i][:j], lines[i][j:]]
            intact[i:i + 1] = [False, False]
        elif action == "merge" and i + 1 < len(lines):
            lines[i:i + 2] = [lines[i] + lines[i + 1]]
            intact[i:i + 2] = [False]
        elif action == "drop":
            del lines[i], intact[i]
        elif action == "duplicate":
            lines.insert(i, lines[i])
            intact.insert(i, intact[i])
        elif action == "swap":
            j = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
            intact[i], intact[j] = intact[j], intact[i]
        elif action == "garbage":
            lines.insert(i, draw(st.sampled_from(GARBAGE)))
            intact.insert(i, False)
    data = b"".join(line + b"\n" for line in lines)
    if data and draw(st.booleans()):  # truncated: a crash in the middle of a write
        cut = draw(st.integers(0, len(data)))
        data = data[:cut]
        kept = data.split(b"\n")
        whole = len(kept) - 1
        tail_ok = bool(kept[-1]) and whole < len(lines) and kept[-1] == lines[whole]
        lines, intact = (lines[:whole] + ([kept[-1]] if kept[-1] else []),
                         intact[:whole] + ([tail_ok and intact[whole]] if kept[-1] else []))
    path.write_bytes(data)
    return path, lines, intact, header


def intact_frames(lines: list[bytes], intact: list[bool]) -> dict[str, list[Frame]]:
    """The frames on lines that are still exactly as the app wrote them, in file order."""
    out: dict[str, list[Frame]] = {s: [] for s in SIDES}
    for line, ok in zip(lines[1:], intact[1:]):
        entry = json.loads(line) if ok else None
        if entry and entry.get("type") == "frame":
            out[entry["side"]].append(Frame.from_json(entry))
    return out


def is_subsequence(small: list[Frame], big: list[Frame]) -> bool:
    it = iter(big)
    return all(any(x == y for y in it) for x in small)


@FUZZ
@given(data=st.data())
def test_a_damaged_recording_never_raises_and_loses_no_intact_frame(tmp_path: Path, data: st.DataObject) -> None:
    path, lines, intact, header = data.draw(files(tmp_path))
    tally("fuzz_recording_cases")
    header_ok = bool(lines) and intact[0] and lines[0] == header
    try:
        rec = read_recording(path)
    except RecordingError as e:
        assert not header_ok, e
        assert str(e) and len(str(e)) < 400
        return
    finally:
        library.describe(path)  # the library lists every file, readable or not
    want = intact_frames(lines, intact) if header_ok else {s: [] for s in SIDES}
    lost = sum(max(0, len(want[s]) - len(rec.frames[s])) for s in SIDES)
    tally("lost_frames", lost)
    for side in SIDES:
        assert is_subsequence(want[side], rec.frames[side]), side
    assert all(len(w) < 2000 for w in rec.warnings)
    payload = recording_payload(rec, path.name)
    json.dumps(payload, allow_nan=False)  # what the page is sent
    render(payload)  # what an HTML export holds
    path.unlink()
