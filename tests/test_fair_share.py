"""Issue 21's attacks on what visitors share (items 2, 5, 6), replayed on a served page on loopback through real HTTP
and Gradio's queue API, from two client addresses (127.0.0.1 the attacker, 127.0.0.2 the victim):

- fresh sessions from one client writing run after run must not erase another visitor's recordings or the examples;
- Gradio's upload route must refuse uploads while `upload` is off, and take only one .jsonl within a budget when on;
- one client flooding the queue must leave another visitor's page loads and race working.

Each test counts its attacks in the reliability table; each failed on the code before this change (see
docs/figures.md)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

from app.race import limits
from app.trace import store
from app.trace.frames import SIDES
from app.trace.store import examples_dir, user_dir
from app.ui import door
from app.ui.layout import build
from tests.loopback_client import Visitor
from tests.reliability import tally
from tests.test_security_access import OWNER_B, fn_index, inputs, load_index, page, served
from tests.wire_server import serve

ATTACKER, VICTIM = "127.0.0.1", "127.0.0.2"
RACE_FLOOD, PAGE_LOADS = 72, 29  # the probe's counts: 72 race requests, then 29 page loads and one race
DISK_RACES = 40  # the probe's disk attack: 40 races, each under a fresh session


TYPED_KEY = "visitor-typed-key-fair-share"  # the key a visitor types (not one of the suite's sentinels)


@pytest.fixture(scope="module")
def wire() -> Iterator[str]:
    """A wire server on loopback that answers as fast as it can, to the key a visitor types."""
    with serve(fps=0, key=TYPED_KEY) as base_url:
        yield base_url


def wire_race(demo: Any, wire: str, prompt: str, model: str = "gpt-test", owner: str | None = None) -> list[Any]:
    """The race handler's inputs for two openai: sides on the loopback wire server, with a typed key and its URL."""
    index = fn_index(demo, api_name="race")
    sides: dict[str, Any] = {}
    for side in SIDES:
        sides.update({f"{side}_source": "openai", f"{side}_arg": model, f"{side}_key": TYPED_KEY,
                      f"{side}_openai_base_url": wire})
    return inputs(demo, index, owner, prompt=prompt, **sides)


def open_page(visitor: Visitor, demo: Any, owner: str | None = None) -> tuple[bool, str]:
    """Opens the page as a browser does (GET /, GET /config, then the page-load handler, queued or not as the config
    says); (whether every step answered, the session hash)."""
    status, _ = visitor.get("/")
    if status != 200:
        return False, ""
    status, raw = visitor.get("/config")
    if status != 200:
        return False, ""
    index = load_index(demo)
    dep = next(d for d in json.loads(raw)["dependencies"] if d["id"] == index)
    data = inputs(demo, index, owner)
    session = f"page-{time.monotonic_ns()}"
    if dep.get("queue") is False:
        status, answer = visitor.post("/gradio_api/run/predict", {"data": data, "fn_index": index,
                                                                  "session_hash": session, "event_data": None,
                                                                  "trigger_id": None})
        return status == 200 and "error" not in answer, session
    status, done = visitor.call(index, data, session)
    return status == 200 and done.get("success", False), session


def players(done: dict[str, Any]) -> dict[str, Any]:
    """The player payload of a finished race (its first output)."""
    return json.loads(done["output"]["data"][0]["props"]["payload"])


# --- item 2: nothing of one visitor is lost to another ---------------------------------------------------------------

def test_fresh_sessions_from_one_client_never_erase_another_visitors_runs(wire: str, recordings: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """The issue's disk attack, to scale: 40 races, each under a fresh session (a fresh owner) from one address, each
    recording about 9 KB, against bounds of 16 KB a run, 96 KB an address and 160 KB in all. Before this change the
    bound on all visitors deleted the oldest runs of everyone, the victim's first."""
    monkeypatch.setattr(store, "RUN_MAX_BYTES", 16_000, raising=False)
    monkeypatch.setattr(store, "ADDRESS_MAX_BYTES", 96_000, raising=False)
    monkeypatch.setattr(store, "VISITORS_MAX_BYTES", 160_000)
    examples = {p.name: p.stat().st_size for p in examples_dir().glob("*.jsonl")}
    with page(served(base_urls=[wire])) as (demo, url):
        victim, attacker = Visitor(url, VICTIM), Visitor(url, ATTACKER)
        index = fn_index(demo, api_name="race")
        for n in range(2):
            ok, session = open_page(victim, demo, OWNER_B)
            assert ok
            status, done = victim.call(index, wire_race(demo, wire, f"ECHO: my own run {n}"), session)
            assert status == 200 and done["success"], done
        theirs = {p.name: p.stat().st_size for p in user_dir(OWNER_B).glob("*.jsonl")}
        assert len(theirs) == 2
        refused = []
        for n in range(DISK_RACES):
            status, done = attacker.call(index, wire_race(demo, wire, "x" * 8_000 + f" ECHO: run {n}"))
            assert status == 200 and done["success"], done
            shown = players(done)
            if shown.get("warnings"):  # a refused write: one sentence, and the race's frames are still shown
                refused.append(shown["warnings"])
                assert all(shown["sides"][s]["rows"] or shown["sides"][s].get("start") for s in SIDES)
        tally("shared_attacks", DISK_RACES)
        left = {p.name: p.stat().st_size for p in user_dir(OWNER_B).glob("*.jsonl")}
        tally("shared_breaches", len(theirs) - len(set(theirs) & set(left)))
        assert left == theirs, "another visitor's runs were deleted"
        assert {p.name: p.stat().st_size for p in examples_dir().glob("*.jsonl")} == examples
        attackers = [p for p in (recordings / store.OWNERS).glob("*/*.jsonl") if p.parent != user_dir(OWNER_B)]
        assert sum(p.stat().st_size for p in attackers) <= 96_000 and refused
        assert refused[0] == [refused[0][0]] and refused[0][0].startswith("Not saved:") and "address" in refused[0][0]
        ok, session = open_page(victim, demo, OWNER_B)  # the victim, from their own address, still saves new runs
        status, done = victim.call(index, wire_race(demo, wire, "ECHO: still mine"), session)
        assert status == 200 and not players(done).get("warnings") and len(list(user_dir(OWNER_B).glob("*.jsonl"))) == 3
    tally("disk_attack_refused", len(refused))


def test_a_disk_bound_evicts_only_the_writers_own_runs_then_refuses(recordings: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """make_room on real files: the writer's own oldest go first; when only others' runs could make room it refuses.
    A run written behind the store's back is counted once `written` (or the sweeper) looks at its folder."""
    import os

    monkeypatch.setattr(store, "RUN_MAX_BYTES", 1_000, raising=False)
    monkeypatch.setattr(store, "ADDRESS_MAX_BYTES", 10**9, raising=False)
    monkeypatch.setattr(store, "OWNER_MAX_FILES", 3)
    monkeypatch.setattr(store, "VISITORS_MAX_BYTES", 6_000)
    mine, theirs = store.user_dir("me"), store.user_dir("them")
    for folder, n in ((mine, 4), (theirs, 3)):
        folder.mkdir(parents=True)
        for i in range(n):
            (folder / f"run{i}.jsonl").write_bytes(b"x" * 1000)
            os.utime(folder / f"run{i}.jsonl", (time.time() - 100 + i,) * 2)  # recent: no run has expired
    store.make_room(None)  # the shared library of a local page is the host's: never pruned
    store.make_room("me", "10.0.0.1")  # 3 files max: room for one more leaves my newest 2
    assert sorted(f.name for f in mine.glob("*.jsonl")) == ["run2.jsonl", "run3.jsonl"]
    monkeypatch.setattr(store, "OWNER_MAX_FILES", 100)
    monkeypatch.setattr(store, "VISITORS_MAX_BYTES", 5_000)  # 5,000 in all: 3,000 theirs + mine + 1,000 to come
    store.make_room("me", "10.0.0.1")
    assert sorted(f.name for f in mine.glob("*.jsonl")) == ["run3.jsonl"]
    (theirs / "run3.jsonl").write_bytes(b"x" * 1000)  # 5,000 in all now
    store.written("them")
    with pytest.raises(store.DiskFull, match="never deletes another visitor's runs"):
        store.make_room("newcomer", "10.0.0.2")  # only others' runs could make room: refused
    assert len(list(theirs.glob("*.jsonl"))) == 4 and len(list(mine.glob("*.jsonl"))) == 1
    monkeypatch.setattr(store, "VISITORS_MAX_BYTES", 10**9)
    store.make_room("them", "10.0.0.1")  # their folder now counts against 10.0.0.1 as well
    monkeypatch.setattr(store, "ADDRESS_MAX_BYTES", 5_500)  # mine (1,000) + theirs (4,000) + 1,000 to come is over
    with pytest.raises(store.DiskFull, match="your network address"):
        store.make_room("third", "10.0.0.1")
    store.make_room("third", "10.0.0.3")  # another address has its own share
    assert (mine / store.FROM).read_text().split() == [store.address_tag("10.0.0.1")]
    assert "10.0.0.1" not in (mine / store.FROM).read_text()  # a digest, never the address
    tally("shared_attacks", 2)


def test_a_visitors_recording_stops_at_its_cap_and_a_refused_one_writes_nothing(tmp_path: Path) -> None:
    """The writer of a visitor's race: frames past the cap are not written (the ends still are, so the file reads back
    as a finished run), and a run that may not be saved leaves no file at all."""
    from app.trace.frames import Frame, RecordingWriter, make_header
    from app.trace.reading import read_recording

    header = make_header("capped", {s: {"name": "local-ar", "settings": {}} for s in SIDES})
    capped = RecordingWriter(tmp_path / "capped.jsonl", header, max_bytes=2_000)
    for k in range(50):
        capped.frame("left", Frame(t=k / 10, step=k, tokens=["word"] * 10))
    for side in SIDES:
        capped.end(side, "done")
    capped.close()
    rec = read_recording(capped.path)
    assert capped.full and 0 < len(rec.frames["left"]) < 50 and capped.path.stat().st_size <= 2_000 + 200
    assert [rec.ends[s]["status"] for s in SIDES] == ["done", "done"]
    refused = RecordingWriter(tmp_path / "refused.jsonl", header, max_bytes=0)
    refused.frame("left", Frame(t=0, step=0, tokens=["a"]))
    refused.end("left", "done")
    refused.close()
    assert not refused.path.exists()


# --- item 5: uploads follow the policy -------------------------------------------------------------------------------

UPLOADS = 20  # the probe's count


def test_gradios_upload_route_refuses_visitors_while_upload_is_off() -> None:
    body = (examples_dir() / "01-confidence-blocks.jsonl").read_bytes()
    with page(served()) as (_, url):
        visitor = Visitor(url, ATTACKER)
        said = [visitor.upload([(f"big{n}.jsonl", body)]) for n in range(UPLOADS)]
    tally("shared_attacks", UPLOADS)
    tally("shared_breaches", sum(status == 200 for status, _ in said))
    assert all(status == 403 and door.UPLOAD_OFF in text for status, text in said), said[:2]


def test_uploads_when_on_take_one_recording_within_a_budget_per_address(monkeypatch: pytest.MonkeyPatch) -> None:
    """The issue's 60 MB files: two fit the 128 MB budget of an address; the third, a second file in one request and
    a file that is not a recording are refused (those two are deleted from Gradio's folder), another address still
    uploads, and the page's own upload handler takes what got through."""
    big = b"x" * (60 * 2**20)
    example = (examples_dir() / "01-confidence-blocks.jsonl").read_bytes()
    with page(served(allow=["upload"])) as (demo, url):
        attacker, other = Visitor(url, ATTACKER), Visitor(url, VICTIM)
        before = set(demo.upload_file_set)
        said = [attacker.upload([(f"big{n}.jsonl", big)]) for n in range(3)]
        tally("shared_breaches", int(said[2][0] == 200))
        assert [s for s, _ in said] == [200, 200, 429] and door.UPLOAD_SPENT in said[2][1]
        two = other.upload([("a.jsonl", example), ("b.jsonl", example)])
        wrong = other.upload([("run.py", b"print('hi')")])
        assert two[0] == 400 and wrong[0] == 400 and door.UPLOAD_ONE in two[1]
        stored = [json.loads(text)[0] for status, text in said if status == 200]
        assert all(Path(p).is_file() for p in stored)
        # refused: gone
        assert sorted(p for p in set(demo.upload_file_set) - before if Path(p).exists()) == sorted(stored)
        status, text = other.upload([("mine.jsonl", example)])
        assert status == 200
        index = fn_index(demo, elem_id="load-file", event="upload")
        data = inputs(demo, index, OWNER_B)
        data[1] = {"path": json.loads(text)[0], "meta": {"_type": "gradio.FileData"}, "orig_name": "mine.jsonl"}
        ok, session = open_page(other, demo, OWNER_B)
        status, done = other.call(index, data, session)
        assert status == 200 and "Added mine.jsonl" in json.dumps(done["output"]["data"])
        for path in stored:
            Path(path).unlink(missing_ok=True)
    tally("shared_attacks", 5)


# --- item 6: fair queueing -------------------------------------------------------------------------------------------

def test_one_clients_flood_leaves_another_visitors_page_loads_and_race_working(
        wire: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """The probe: 72 race requests that would hold their slot until the limit, from one client under fresh sessions,
    then 29 page loads and a race from another visitor. Before this change the flood filled the 8 race slots and the
    64 queue places, and the other visitor's page loads and race were told the queue was full."""
    monkeypatch.setenv(limits.ENV, "20")  # the flood's races end by themselves
    with page(served(base_urls=[wire])) as (demo, url):
        attacker, victim = Visitor(url, ATTACKER), Visitor(url, VICTIM)
        index = fn_index(demo, api_name="race")
        hold = wire_race(demo, wire, "ECHO: hold the slot", model="keepalive-after-1")
        flood = [attacker.join(index, hold) for _ in range(RACE_FLOOD)]
        joined = [(session, answer["event_id"]) for status, answer, session in flood if status == 200]
        refused = [answer for status, answer, _ in flood if status != 200]
        loads = [open_page(victim, demo, OWNER_B) for _ in range(PAGE_LOADS)]
        load_refused = sum(not ok for ok, _ in loads)
        status, done = victim.call(index, wire_race(demo, wire, "ECHO: my turn"), loads[-1][1])
        race_ok = status == 200 and done.get("success") and [players(done)["sides"][s]["status"] for s in SIDES] == \
            ["done", "done"]
        again = attacker.join(index, hold, joined[0][0] if joined else None)  # the same session asks again
        for session, event_id in joined:  # stop what got in, so nothing outlives the test
            attacker.post("/gradio_api/cancel", {"session_hash": session, "fn_index": index, "event_id": event_id})
    with capsys.disabled():
        print(f"\nflood: {len(refused)} of {RACE_FLOOD} race requests refused; other visitor: {load_refused} of "
              f"{PAGE_LOADS} page loads refused, race {'completed' if race_ok else 'refused or failed'}")
    tally("shared_attacks", RACE_FLOOD + PAGE_LOADS + 1)
    tally("flood_refused", len(refused))
    tally("victim_refused", load_refused + (not race_ok))
    tally("shared_breaches", load_refused + (not race_ok))
    assert load_refused == 0 and race_ok, (load_refused, done)
    assert len(joined) == 1 and all(door.HELD in json.dumps(r) for r in refused)
    assert again[0] == 429 and door.HELD in json.dumps(again[1])


def test_the_address_is_the_peer_and_on_a_space_the_last_public_forwarded_one() -> None:
    """A visitor cannot pick their address with X-Forwarded-For, except where a proxy they cannot bypass sets it."""
    from app.ui.address import client_address

    spoofed = "1.2.3.4, 93.184.216.34, 10.0.0.7"  # what the visitor wrote, the address the Space's proxy saw, a hop
    assert client_address("10.1.1.1", spoofed, on_space=False) == "10.1.1.1"
    assert client_address("10.1.1.1", spoofed, on_space=True) == "93.184.216.34"
    assert client_address("10.1.1.1", "10.0.0.7, garbage", on_space=True) == "10.1.1.1"
    assert client_address("2001:db8:1:2:aaaa::1") == client_address("2001:db8:1:2:bbbb::9") == "2001:db8:1:2::/64"
    assert client_address("::ffff:127.0.0.2") == "127.0.0.2" and client_address(None) == "unknown"


@pytest.mark.browser
def test_a_second_race_from_the_same_visitor_gets_one_sentence_in_the_browser(browser: Any, wire: str,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """While this address holds a race, the page's Run is refused at the door and the page shows why, in one sentence;
    the only console error is the browser's note of the refused request."""
    from tests.pages import watch_errors

    monkeypatch.setenv(limits.ENV, "20")
    with page(served(base_urls=[wire])) as (demo, url):
        index = fn_index(demo, api_name="race")
        held = Visitor(url, ATTACKER)
        status, answer, session = held.join(index, wire_race(demo, wire, "ECHO: hold", model="keepalive-after-1"))
        assert status == 200
        ctx = browser.new_context(viewport={"width": 1280, "height": 1100})
        try:
            tab = ctx.new_page()
            tab.set_default_timeout(60_000)
            errors = watch_errors(tab)
            tab.goto(url)
            tab.wait_for_selector("#player .cv-player[data-status='done']")  # the page opened beside the held race
            tab.click("#run")
            tab.wait_for_function("(words) => document.body.innerText.includes(words)", arg=door.HELD)
        finally:
            ctx.close()
            held.post("/gradio_api/cancel",
                      {"session_hash": session, "fn_index": index, "event_id": answer["event_id"]})
    assert all("429" in e for e in errors), errors
    tally("shared_attacks")


def test_gradios_copies_of_uploads_are_deleted_on_a_schedule(monkeypatch: pytest.MonkeyPatch) -> None:
    """An upload lands in the set Gradio's scheduled cleaner empties (CACHE_LIFETIME, an hour on the page; a second
    here), and is gone once that age has passed."""
    from app.ui import layout

    monkeypatch.setattr(layout, "CACHE_LIFETIME", (1, 1))
    example = (examples_dir() / "01-confidence-blocks.jsonl").read_bytes()
    with page(served(allow=["upload"])) as (demo, url):
        status, text = Visitor(url, VICTIM).upload([("kept-a-second.jsonl", example)])
        assert status == 200
        stored = Path(json.loads(text)[0])
        assert str(stored) in demo.upload_file_set
        deadline = time.monotonic() + 30
        while stored.exists():  # the cleaner runs every second and deletes copies over a second old
            assert time.monotonic() < deadline, "the upload was never cleaned"
            time.sleep(0.1)  # polling for the condition above


def test_the_door_names_the_concurrency_groups_the_page_runs_races_and_sweeps_in() -> None:
    """HEAVY must name real groups: every race and sweep handler of the page is in one, and each group exists."""
    demo = build(served())
    groups = {fn.concurrency_id for fn in demo.fns.values()}
    assert set(door.HEAVY) <= groups
    race = fn_index(demo, api_name="race")
    assert demo.fns[race].concurrency_id in door.HEAVY
    buttons = {demo.blocks[b].elem_id: fn for fn in demo.fns.values() for b, _ in fn.targets
               if b is not None and b in demo.blocks}
    sweeps = [fn for elem_id, fn in buttons.items() if (elem_id or "").startswith("sweep-")]
    assert len(sweeps) == 4 and all(fn.concurrency_id in door.HEAVY for fn in sweeps)


@pytest.mark.browser
def test_a_refused_write_still_plays_the_race_with_one_sentence_in_the_browser(browser: Any,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """With the visitors' disk full, Run still races a replay of the example on the page; the player says, in one
    sentence, that it is not saved, and no file is written."""
    from tests.pages import browser_tab

    monkeypatch.setattr(store, "VISITORS_MAX_BYTES", 0)
    example = "example/01-confidence-blocks.jsonl"
    with page(served()) as (_, url), browser_tab(browser, url) as tab:
        tab.wait_for_selector("#player .cv-player[data-status='done']")
        for side, arg in (("left", example), ("right", f"{example}#right")):
            tab.click(f"#{side}-source input")
            tab.click(f"#{side}-source [role=option][aria-label^='replay ']")
            tab.locator(f"#{side}-arg input, #{side}-arg textarea").fill(arg)
        tab.click("#run")
        tab.wait_for_function("""() => {
          const state = document.querySelector('#player .cv-player').convergePlayer.state;
          return state.mode === 'live' && state.done && state.warnings.length === 1
            && state.warnings[0].startsWith('Not saved:') && ['left', 'right'].every(s => state.sides[s].rows.length);
        }""")
        assert "Not saved:" in tab.text_content("#player")
    assert not list((store.recordings_dir() / store.OWNERS).glob("*/*.jsonl"))
    tally("shared_attacks")
