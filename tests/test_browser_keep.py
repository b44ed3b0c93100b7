"""A race run in the visitor's browser is saved in their own library (app/ui/browser_race.py `keep`): the frames the
browser sends, packed as browser_race.js packs them, become a recording that says where it ran, each side's settings
validated by its own source; what is not such a race, or is larger than the server keeps, is refused with a sentence
and nothing is saved. The frames here are the Python twins' own, as the browser's equal them (tests/test_site.py)."""

from __future__ import annotations

import base64
import gzip
import json
import threading
from pathlib import Path
from typing import Any

import gradio as gr
import pytest

from app.errors import UserError
from app.race.run import Race
from app.serving.input_limits import refusal
from app.serving.policy import LOCAL, from_launch
from app.sources.local import make_local_ar, make_local_diffusion
from app.trace.reading import read_recording
from app.trace.store import user_dir
from app.ui.browser_race import NOT_SAVED, RAN_IN, TOO_LONG, began, keep
from app.ui.live import live_updates
from app.ui.sessions import remember
from app.ui.visitor import Visitor
from tests.fixtures import needs_twins
from tests.test_race import make_recording

pytestmark = needs_twins
OWNER = "visitor-k-" + "k" * 22
PROMPT = "Mia found a small blue stone by the river. She"


def side(make: Any, stop_after: int | None = None) -> dict[str, Any]:
    """One side as browser_race.js sends it: the settings it ran with, its frames (JSON), how it ended."""
    source = make(gen_length=32)
    frames = [f.ready().to_json() for f in source.stream(PROMPT, threading.Event())]
    if stop_after is not None:
        frames = frames[:stop_after]
    return {"settings": source.settings(), "frames": frames, "status": "done" if stop_after is None else "stopped"}


def packed(race: dict[str, Any] | bytes) -> str:
    """base64 of the gzip-compressed JSON, as browser_race.js `hand` packs it."""
    raw = race if isinstance(race, bytes) else json.dumps(race).encode()
    return base64.b64encode(gzip.compress(raw)).decode()


@pytest.fixture(scope="module")
def race() -> dict[str, Any]:
    return {"prompt": PROMPT, "sides": {"left": side(make_local_diffusion), "right": side(make_local_ar, 5)}}


def test_a_race_run_in_the_browser_is_saved_in_the_visitors_library(race: dict[str, Any]) -> None:
    visitor = Visitor(from_launch("0.0.0.0", False, env={}), OWNER, "10.0.0.1")
    *_, current, said = keep(visitor, packed(race))
    assert said.startswith("Saved the race run in your browser as ")
    rec = read_recording(current)
    assert rec.header["ran_in"] == RAN_IN and rec.header["prompt"] == PROMPT
    assert rec.header["sources"]["left"]["name"] == "local-diffusion"
    assert rec.header["sources"]["left"]["settings"]["gen_length"] == 32
    for key in ("left", "right"):
        assert [f.to_json() for f in rec.frames[key]] == race["sides"][key]["frames"]
    assert rec.ends["left"]["status"] == "done" and rec.ends["right"]["status"] == "stopped"
    assert current.startswith(str(user_dir(OWNER)))  # the visitor's own library


def test_what_is_not_a_browser_race_is_refused_and_nothing_saved(race: dict[str, Any]) -> None:
    visitor = Visitor(LOCAL, OWNER)
    left, right = race["sides"]["left"], race["sides"]["right"]
    pinned = {**left, "settings": {**left["settings"], "pins": ["3:the end"]}}
    bad_frame = {**left, "frames": left["frames"] + [{"t": -1, "step": 0}]}
    unknown = {**left, "settings": {**left["settings"], "bogus": 1}}
    endless = {**left, "frames": left["frames"][:1] * 321}  # more passes than the twins' 320-token context allows
    cases = [("not base64 at all!", "could not be read"),
             (packed(b"[1, 2]"), "is not a race"),
             (packed(b"\0" * (30 * 2**20)), "larger than the server keeps"),  # a gzip bomb, cut off at the bound
             (packed({"prompt": PROMPT, "sides": {"left": left}}), "its right side is missing"),
             (packed({"prompt": PROMPT, "sides": {"left": pinned, "right": right}}), "pinned text runs on the server"),
             (packed({"prompt": PROMPT, "sides": {"left": bad_frame, "right": right}}), "a left frame is not one"),
             (packed({"prompt": PROMPT, "sides": {"left": unknown, "right": right}}), "has no setting 'bogus'"),
             (packed({"prompt": PROMPT, "sides": {"left": endless, "right": right}}), "more than a race of the twins")]
    for value, words in cases:
        said = keep(visitor, value)[-1]
        assert words in said, said
    assert not list(user_dir(OWNER).glob("*.jsonl"))


def test_a_browser_races_settings_meet_a_server_races_bounds(race: dict[str, Any]) -> None:
    """The twins' answer length is bounded by their context when a race runs (the sampler's check), so a browser race
    claiming 10^9 tokens is refused with the sentence a server race gets, and nothing is saved."""
    visitor = Visitor(LOCAL, OWNER)
    left, right = race["sides"]["left"], race["sides"]["right"]
    longest = {**right, "settings": {**right["settings"], "gen_length": 10**9}}
    said = keep(visitor, packed({"prompt": PROMPT, "sides": {"left": left, "right": longest}}))[-1]
    assert said.startswith("Prompt (") and "answer length (1000000000) exceeds the model's context of 320" in said
    with pytest.raises(UserError) as server:
        list(make_local_ar(gen_length=10**9).stream(PROMPT, threading.Event()))
    assert said == str(server.value)  # the server race's own sentence
    assert not list(user_dir(OWNER).glob("*.jsonl"))


def test_any_number_a_browser_race_sends_gets_one_sentence(race: dict[str, Any]) -> None:
    """A number of 5,000 digits (past what Python reads) and numbers too large for their setting are each refused
    with one short sentence, never the server's generic failure, and nothing is saved."""
    visitor = Visitor(LOCAL, OWNER)
    left, right = race["sides"]["left"], race["sides"]["right"]
    digits = json.dumps({"prompt": PROMPT, "sides": {"left": left, "right": right}}).replace(
        '"seed": 0', '"seed": ' + "9" * 5000, 1)
    assert keep(visitor, packed(digits.encode()))[-1] == NOT_SAVED + TOO_LONG
    for seed in (10**4000, 1e308):
        wide = {**right, "settings": {**right["settings"], "seed": seed}}
        said = keep(visitor, packed({"prompt": PROMPT, "sides": {"left": left, "right": wide}}))[-1]
        assert "a number of over 20 digits" in said and said.count(".") == 1 and len(said) < 200, said
    assert not list(user_dir(OWNER).glob("*.jsonl"))


def test_a_page_sharing_one_library_saves_no_browser_race_unless_it_takes_uploads(race: dict[str, Any]) -> None:
    shared = from_launch("0.0.0.0", False, env={}, allow=("shared-library",))
    said = keep(Visitor(shared, None), packed(race))[-1]
    assert said.startswith(NOT_SAVED) and "one library for every visitor" in said
    taking = from_launch("0.0.0.0", False, env={}, allow=("shared-library", "upload"))
    assert keep(Visitor(taking, None), packed(race))[-1].startswith("Saved the race run in your browser")


def test_a_browser_race_over_its_size_limit_is_refused_before_any_work() -> None:
    assert "The race run in your browser is over 1,500,000 characters" in refusal("browser-race", "A" * 1_500_001)
    assert refusal("browser-race", "A" * 1_500_000) is None


def test_a_browser_race_that_begins_stops_the_sessions_race_on_the_server(tmp_path: Path) -> None:
    """The session's race on the server (here one whose next frame is an hour away) stops when the browser says its
    race began, keeping the frames so far."""
    slow = make_recording(tmp_path / "slow.jsonl", [0.0, 3600.0])
    race = Race("p", f"replay:{slow}", f"replay:{slow}", out=tmp_path / "o.jsonl").start()
    remember("began-session", {"race": race, "path": race.path, "run": "user/o.jsonl"})
    updates = live_updates(race, interval=0.01)
    for update in updates:  # until the frame at 0 s has arrived (the next is an hour away)
        assert not update["done"]
        if any(e["rows"] for e in update["sides"].values()):
            break
    began(gr.Request(session_hash="began-session"))
    assert race.cancel.is_set()  # stopped now, not at the race's time limit
    final = [u for u in updates][-1]
    assert {e["status"] for e in final["sides"].values()} == {"stopped"}
    assert len(read_recording(race.path).frames["left"]) == 1  # the frame at 0 s (the recording has one side)


DRAFT = {"text": " Mia found a red stone and took it home.", "share": 0.3, "where": "random", "seed": 0}


def drafted_side(make: Any) -> dict[str, Any]:
    """One side of a race from DRAFT as browser_race.js sends it: `side`'s fields and the side's plan (`draft`)."""
    from app.engine.draft import Revision

    source = make(gen_length=32)
    source.revise(Revision(**DRAFT), PROMPT)
    frames = [f.ready().to_json() for f in source.stream(PROMPT, threading.Event())]
    return {"settings": source.settings(), "frames": frames, "status": "done", "draft": source.draft_json()}


def test_a_browser_race_from_a_draft_is_saved_with_the_draft_and_each_sides_plan() -> None:
    """Issue 53 item 5: a race the browser ran from a draft keeps what a server race from it keeps: the header's
    draft, each side's plan (the AR twin's note naming the prefix it kept), the frames' revision letters; and still
    says it ran in the visitor's browser."""
    visitor = Visitor(LOCAL, OWNER)
    sides = {"left": drafted_side(make_local_diffusion), "right": drafted_side(make_local_ar)}
    *_, current, said = keep(visitor, packed({"prompt": PROMPT, "draft": DRAFT, "sides": sides}))
    assert said.startswith("Saved the race run in your browser as "), said
    rec = read_recording(current)
    assert rec.header["ran_in"] == RAN_IN and rec.header["draft"] == DRAFT
    for key in ("left", "right"):
        assert rec.header["sources"][key]["draft"] == sides[key]["draft"]
        assert [f.revision for f in rec.frames[key]] == [f.get("revision") for f in sides[key]["frames"]]
    assert rec.header["sources"]["right"]["draft"]["mode"] == "prefix"
    assert rec.frames["left"][0].revision and "k" in rec.frames["left"][0].revision


def test_a_browser_races_draft_is_checked_as_one_typed_here() -> None:
    """A draft the page sends that is not one (not an object, out of range, empty, a backwards span, a field more) is
    refused in the sentence a draft typed on the server gets, and nothing is saved."""
    visitor = Visitor(LOCAL, OWNER)
    sides = {"left": drafted_side(make_local_diffusion), "right": drafted_side(make_local_ar)}
    for draft, words in ((["not", "a", "draft"], "is not one"), ({**DRAFT, "share": 2}, "is not between 0 and 1"),
                         ({**DRAFT, "text": " "}, "The draft is empty"), ({**DRAFT, "where": "9:3"}, "START:END"),
                         ({**DRAFT, "key": "sk-x"}, "is not one")):
        said = keep(visitor, packed({"prompt": PROMPT, "draft": draft, "sides": sides}))[-1]
        assert said.startswith(NOT_SAVED) and words in said, said
    assert not list(user_dir(OWNER).glob("*.jsonl"))
