"""A diffusion LM served behind an OpenAI-compatible API, as SGLang serves LLaDA2.x, races as openai:MODEL with a
base URL: the real openai SDK against a loopback server that streams one chunk per settled block (tests/
sglang_server.py), and the view draws each chunk as a block of new tokens, never as a redrawn draft."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Iterator

import pytest

from app.analysis.changes import CHANGED, NEW, REMASKED, SideAnalyzer, text_tokens
from app.sources.base import make_source
from tests.sglang_server import BLOCK, MODEL, SGLangServer, answer, serve

PROMPT = "Once upon a time"


@pytest.fixture(scope="module")
def sglang() -> Iterator[SGLangServer]:
    with serve() as server:
        yield server


def _source(server: SGLangServer, **settings: object):
    return make_source(f"openai:{MODEL}", base_url=server.base_url, api_key="EMPTY", temperature=0.0,
                       max_tokens=40, **settings)


def test_each_settled_block_arrives_as_one_appended_frame(sglang: SGLangServer) -> None:
    want = answer(PROMPT, 40, 0.0)
    assert len(want.blocks) >= 3 and want.finish in ("stop", "length")
    frames = list(_source(sglang).stream(PROMPT, threading.Event()))
    body = sglang.requests[-1]
    assert body["model"] == MODEL and body["stream"] is True and body["max_tokens"] == 40
    assert body["stream_options"] == {"include_usage": True}
    texts = [f.text for f in frames[:-1]]
    assert texts == ["".join(want.blocks[:i + 1]) for i in range(len(want.blocks))]  # one frame per block
    assert frames[-1].final and frames[-1].text == "".join(want.blocks)
    assert frames[-1].usage["completion_tokens"] == len(want.ids) <= 40
    chunks = sglang.sent[-1]
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant" and chunks[-1]["choices"] == []
    assert chunks[-2]["choices"][0]["finish_reason"] == want.finish


def test_the_view_draws_block_chunks_as_new_tokens_not_as_a_redrawn_draft(sglang: SGLangServer) -> None:
    frames = list(_source(sglang).stream(PROMPT, threading.Event()))
    view = SideAnalyzer()
    rows = [view.add(f) for f in frames]
    before: list[str] = []
    for _frame, row in zip(frames, rows):
        assert not ({CHANGED, REMASKED} & set(row["ch"]))  # nothing already shown is ever redrawn or remasked
        new = [tok for tok, code in zip(row["tok"], row["ch"]) if code == NEW]
        assert row["tok"][:len(before)] == before and "".join(new) == "".join(row["tok"][len(before):])
        assert row["m"] is None and row["conf"] is None  # a text source: no masks or confidences invented
        before = row["tok"]
    assert rows[-1]["tok"] == text_tokens(frames[-1].text)
    assert sum(1 for row in rows if NEW in row["ch"]) == len(frames) - 1  # blocks, not token-by-token typing
    assert all(len([c for c in row["ch"] if c == NEW]) > 1 for row in rows[:-1])  # each block adds several tokens


def test_a_served_diffusion_model_races_the_built_in_ar_twin_and_is_recorded(sglang: SGLangServer,
                                                                            tmp_path: Path) -> None:
    from app.cli.record import record
    from app.trace.reading import read_recording

    out = tmp_path / "sglang.jsonl"
    final = record(PROMPT, f"openai:{MODEL}", "local-ar", out, settings={
        "left": {"base_url": sglang.base_url, "api_key": "EMPTY", "temperature": 0.0, "max_tokens": 40},
        "right": {"gen_length": 24, "stop_at_eos": False}})
    assert {entry["status"] for entry in final["sides"].values()} == {"done"}
    rec = read_recording(out)
    left = rec.header["sources"]["left"]
    assert left["name"] == f"openai:{MODEL}" and left["settings"]["base_url"] == sglang.base_url
    assert "EMPTY" not in out.read_text()  # the key never reaches the recording
    assert rec.frames["left"][-1].text == "".join(answer(PROMPT, 40, 0.0).blocks)


def test_the_model_picker_lists_what_the_server_serves(sglang: SGLangServer) -> None:
    from app.sources.listing import list_models

    assert list_models(sglang.base_url, "EMPTY", "the API key you entered") == [MODEL]


def test_blocks_are_the_models_own_answer_cut_every_block_tokens() -> None:
    from app.sources.local import twin

    _, tok = twin("diffusion")
    got = answer(PROMPT, 40, 0.0)
    assert "".join(got.blocks) == tok.decode(got.ids)
    assert len(got.blocks) == -(-len(got.ids) // BLOCK)
    for k in range(1, len(got.blocks) + 1):
        assert "".join(got.blocks[:k]) == tok.decode(got.ids[:k * BLOCK])
