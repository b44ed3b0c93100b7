"""A race that starts from a draft (issue 53): the header keeps the draft and each side's plan, a diffusion side's
first frame shows the draft with its re-noised positions as masks or noise, an AR side keeps a prefix and says so,
and a source that cannot start from a draft writes from nothing and says so, naming itself."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from app.engine.draft import Revision
from app.race.run import Race
from app.trace.reading import read_recording
from app.ui.live import live_updates

PROMPT = "Once upon a time, there was a little girl named Lily."
DRAFT = " She liked to play in the park with her red ball. One day, she saw a big dog near the old tree."
SMALL = {"gen_length": 32, "steps": 32, "block_length": 16}


def raced(tmp_path: Path, left: str, right: str, revision: Revision,
          settings: dict[str, dict[str, Any]] | None = None, prompt: str = PROMPT
          ) -> tuple[dict[str, Any], dict[str, list[dict[str, Any]]], dict[str, dict[str, Any]]]:
    """Runs a race from `revision` to its end; the header, each side's frames and each side's end as recorded."""
    out = tmp_path / "race.jsonl"
    for _ in live_updates(Race(prompt, left, right, settings=settings, out=out, draft=revision), interval=0.1):
        pass
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    frames: dict[str, list[dict[str, Any]]] = {"left": [], "right": []}
    ends = {}
    for line in lines[1:]:
        if line["type"] == "frame":
            frames[line["side"]].append(line)
        elif line["type"] == "end":
            ends[line["side"]] = line
    return lines[0], frames, ends


def test_the_header_keeps_the_draft_and_each_sides_plan(tmp_path: Path) -> None:
    revision = Revision(DRAFT, share=0.3, seed=3)
    header, frames, ends = raced(tmp_path, "local-diffusion", "local-ar", revision,
                                 {"left": SMALL, "right": {"gen_length": 32}})
    assert header["draft"] == revision.to_json()
    left, right = header["sources"]["left"]["draft"], header["sources"]["right"]["draft"]
    assert left["mode"] == "revise" and "".join(left["tokens"]) == DRAFT and left["length"] == len(left["tokens"])
    assert len(left["renoised"]) == round(0.3 * left["length"])
    assert right["mode"] == "prefix" and right["kept_prefix"] == min(right["renoised"])
    assert read_recording(tmp_path / "race.jsonl").header["draft"] == revision.to_json()


def test_the_masked_twins_first_frame_shows_the_draft_with_its_re_noised_positions_masked(tmp_path: Path) -> None:
    header, frames, _ = raced(tmp_path, "local-diffusion", "local-ar", Revision(DRAFT, share=0.4, seed=1),
                              {"left": SMALL, "right": {"gen_length": 32}})
    plan = header["sources"]["left"]["draft"]
    first = frames["left"][0]
    for i, token in enumerate(plan["tokens"]):
        if i in plan["renoised"]:
            assert first["masked"][i] and first["revision"][i] == "r"
        else:
            assert not first["masked"][i] and first["tokens"][i] == token and first["revision"][i] == "k"
    assert set(first["revision"][plan["length"]:]) == {"."}
    last = frames["left"][-1]
    assert last["final"] and "r" not in last["revision"] and len(last["revision"]) == len(last["tokens"])
    kept = [i for i in range(plan["length"]) if i not in plan["renoised"]]
    assert all(last["revision"][i] == "k" for i in kept if i < len(last["tokens"]))  # no remask: the draft stands


def test_the_uniform_twins_first_frame_shows_the_re_noised_positions_as_noise(tmp_path: Path) -> None:
    header, frames, _ = raced(tmp_path, "local-uniform", "local-ar", Revision(DRAFT, share=0.3, where="4:14"),
                              {"left": SMALL, "right": {"gen_length": 32}})
    plan = header["sources"]["left"]["draft"]
    assert all(4 <= p < 14 for p in plan["renoised"]) and len(plan["renoised"]) == 3
    first = frames["left"][0]
    for i in range(plan["length"]):
        assert first["states"][i] == ("n" if i in plan["renoised"] else "a")
        assert first["revision"][i] == ("r" if i in plan["renoised"] else "k")
    assert frames["left"][-1]["final"]


def test_the_ar_side_keeps_the_draft_up_to_the_first_re_noised_position_and_says_so(tmp_path: Path) -> None:
    header, frames, ends = raced(tmp_path, "local-diffusion", "local-ar", Revision(DRAFT, share=1.0, where="6:9"),
                                 {"left": SMALL, "right": {"gen_length": 32}})
    plan = header["sources"]["right"]["draft"]
    assert plan["renoised"] == [6, 7, 8] and plan["kept_prefix"] == 6
    first, last = frames["right"][0], frames["right"][-1]
    assert first["tokens"] == plan["tokens"][:6] and first["revision"] == "kkkkkk"
    assert last["tokens"][:6] == plan["tokens"][:6] and last["text"].startswith("".join(plan["tokens"][:6]))
    assert "local-ar cannot revise in place: it keeps the draft's first 6 tokens" in ends["right"]["message"]


def test_unsure_counts_its_forward_pass_in_the_sides_passes(tmp_path: Path) -> None:
    header, frames, _ = raced(tmp_path, "local-diffusion", "local-uniform", Revision(DRAFT, share=0.3, where="unsure"),
                              {"left": SMALL, "right": SMALL})
    for side in ("left", "right"):
        assert header["sources"][side]["draft"]["nfe"] == 1
        assert frames[side][0]["nfe"] == 1 and frames[side][-1]["nfe"] == frames[side][-1]["step"] + (
            1 if side == "left" else 0)


def test_a_source_that_cannot_start_from_a_draft_writes_from_nothing_and_says_so(api_env: str,
                                                                                  tmp_path: Path) -> None:
    header, frames, ends = raced(tmp_path, "local-diffusion", "openai:test-model", Revision(DRAFT, share=0.3),
                                 {"left": SMALL})
    assert header["sources"]["right"]["draft"]["mode"] == "cannot"
    assert ends["right"]["message"] == ("openai:test-model cannot start from a draft (a chat API takes a prompt, not "
                                        "a draft to revise), so it writes from nothing.")
    assert ends["right"]["status"] == "done" and frames["right"] and "revision" not in frames["right"][-1]


def test_a_draft_longer_than_a_sides_answer_ends_that_side_with_the_fix(tmp_path: Path) -> None:
    _, frames, ends = raced(tmp_path, "local-diffusion", "local-ar", Revision(DRAFT * 3, share=0.3),
                            {"left": SMALL, "right": {"gen_length": 32}})
    assert ends["left"]["status"] == "error" and "raise the answer length to" in ends["left"]["message"]
    assert not frames["left"]


@pytest.mark.parametrize("share", [0.0])
def test_nothing_re_noised_keeps_the_whole_draft(tmp_path: Path, share: float) -> None:
    header, frames, _ = raced(tmp_path, "local-diffusion", "local-ar", Revision(DRAFT, share=share),
                              {"left": SMALL, "right": {"gen_length": 32}})
    left = frames["left"]
    n = header["sources"]["left"]["draft"]["length"]
    assert left[-1]["final"] and left[-1]["revision"][:n] == "k" * n
    assert header["sources"]["right"]["draft"]["kept_prefix"] == n


def test_a_masked_hugging_face_model_revises_through_the_same_sampler(tmp_path: Path) -> None:
    """hf-diffusion's masked backend (a tiny random BERT built here) starts from the draft as the masked twin does,
    and hf-ar (a tiny GPT-2) keeps the prefix: both through `SamplerSource.revise`, with their own tokenizers."""
    pytest.importorskip("torch", reason="torch is not installed")
    pytest.importorskip("transformers", reason="transformers is not installed")
    from tests.test_hf import build_tiny_models

    tiny = build_tiny_models(tmp_path / "hf")
    draft = "she had a red ball and a big dog friend"
    settings = {"left": {"gen_length": 16, "steps": 8, "block_length": 8, "stop_at_eos": False, "device": "cpu"},
                "right": {"gen_length": 16, "stop_at_eos": False, "device": "cpu"}}
    header, frames, ends = raced(tmp_path, f"hf-diffusion:{tiny['bert']}", f"hf-ar:{tiny['gpt2']}",
                                 Revision(draft, share=0.5, where="2:8", seed=1), settings)
    left, right = header["sources"]["left"]["draft"], header["sources"]["right"]["draft"]
    assert left["mode"] == "revise" and left["length"] == 10 and len(left["renoised"]) == 3
    first = frames["left"][0]
    assert [i for i, m in enumerate(first["masked"][:10]) if m] == left["renoised"]
    assert first["revision"][:10] == "".join("r" if i in left["renoised"] else "k" for i in range(10))
    assert frames["left"][-1]["final"] and "r" not in frames["left"][-1]["revision"]
    assert right["mode"] == "prefix" and frames["right"][0]["revision"] == "k" * right["kept_prefix"]
    assert {e["status"] for e in ends.values()} == {"done"}


@pytest.mark.parametrize("revision", ["kx", "k", 7])
def test_a_frames_revision_must_be_one_letter_of_kerdot_a_token(revision: object) -> None:
    from app.trace.frames import Frame

    assert Frame.from_json({"t": 0, "step": 0, "tokens": ["a", "b"], "revision": "k."}).revision == "k."
    with pytest.raises(ValueError, match="revision"):
        Frame.from_json({"t": 0, "step": 0, "tokens": ["a", "b"], "revision": revision})


def test_a_header_draft_that_is_no_object_with_text_is_dropped_and_the_recording_still_plays(tmp_path: Path) -> None:
    from app.trace.frames import make_header

    path = tmp_path / "odd.jsonl"
    header = make_header("p", {"left": {"name": "local-ar", "settings": {}, "draft": "no object"}})
    header["draft"] = {"share": 0.3}
    frame = {"type": "frame", "side": "left", "t": 0.1, "step": 1, "tokens": ["a"], "final": True, "text": "a"}
    path.write_text(json.dumps(header) + "\n" + json.dumps(frame) + "\n")
    rec = read_recording(path)
    assert "draft" not in rec.header and "draft" not in rec.header["sources"]["left"]
    assert rec.frames["left"][-1].text == "a"


def test_the_metrics_count_what_each_side_kept_from_the_draft_and_edited(tmp_path: Path) -> None:
    from app.analysis.changes import metrics

    _, frames, _ = raced(tmp_path, "local-diffusion", "local-ar", Revision(DRAFT, share=0.5, where="0:12", seed=2),
                         {"left": SMALL, "right": {"gen_length": 32}})
    rec = read_recording(tmp_path / "race.jsonl")
    for side in ("left", "right"):
        letters = frames[side][-1]["revision"]
        m = metrics(rec.frames[side])
        assert (m["draft_kept"], m["draft_edited"]) == (letters.count("k"), letters.count("e"))
    left = metrics(rec.frames["left"])
    assert left["draft_kept"] >= 12  # the draft's tokens past the span stand (no remask)
    plain = tmp_path / "plain.jsonl"
    for _ in live_updates(Race(PROMPT, "local-ar", "local-ar", settings={"left": {"gen_length": 8},
                                                                       "right": {"gen_length": 8}}, out=plain)):
        pass
    assert "draft_kept" not in metrics(read_recording(plain).frames["left"])


@pytest.mark.parametrize("spec", ["local-ar", "local-diffusion"])
def test_the_passes_that_choose_unsure_positions_count_on_the_sides_own_clock(spec: str) -> None:
    import threading

    from app.sources.base import make_source

    source = make_source(spec, **SMALL) if spec == "local-diffusion" else make_source(spec, gen_length=32)
    plan = source.revise(Revision(DRAFT, share=0.3, where="unsure"), PROMPT)
    assert plan.nfe >= 1 and plan.seconds > 0
    first = next(iter(source.stream(PROMPT, threading.Event())))
    assert first.t >= plan.seconds  # the side's clock started when its choosing passes did
