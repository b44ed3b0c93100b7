"""Issue 16's attacks on a page served to a class, replayed through Gradio's queue API (the way an attacker calls a
handler, by fn_index, whatever the page shows) and in a real Chromium: remote code through a Hugging Face folder,
the host's key sent to a listener the visitor chose, `replay:` of paths outside the library, one visitor reaching
another's recordings, and a key echoed into the answer. Each attack is also run where it must succeed (a local
page, or the refusal switched off), so a test that stopped attacking would fail."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import urllib.request
import uuid
from pathlib import Path
from typing import Any, Iterator

import pytest

from app.errors import UserError
from app.serving.policy import CAPABILITIES, LOCAL, Policy, from_launch, is_loopback
from app.sources.base import make_source
from app.trace.frames import Frame
from app.trace.reading import read_recording
from app.trace.scrub import REDACTED, scrub_frame, scrub_text
from app.trace.store import EXAMPLES_DIR, user_dir
from app.ui import scratch
from app.ui.guard import NOT_A_CHOICE
from app.ui.layout import build
from app.ui.library_ui import delete_entry, download_entry, load_entry, rename_entry
from app.ui.packed import PACKS
from app.ui.visitor import Visitor, check_side, visitor_source
from tests import sentinels
from tests.pages import browser_tab, pick_source, serve_page, watch_errors
from tests.reliability import tally
from tests.served import call as queue_call
from tests.wire_server import DEFAULT_KEY, script, serve, sse

EXAMPLE = "example/01-confidence-blocks.jsonl"
OWNER_A, OWNER_B = "visitor-a-" + "a" * 22, "visitor-b-" + "b" * 22


def served(**options: Any) -> Policy:
    """The policy of `python -m app --host 0.0.0.0` with these options (the environment's CONVERGE_* ignored)."""
    return from_launch("0.0.0.0", False, env={}, **options)


@contextlib.contextmanager
def page(policy: Policy) -> Iterator[tuple[Any, str]]:
    """The whole app under `policy`, served on loopback; yields (demo, url)."""
    demo = build(policy)
    with serve_page(demo) as url:
        yield demo, url


# --- Gradio's queue API, spoken by hand as an attacker would ------------------------------------------------------

def fn_index(demo: Any, *, elem_id: str | None = None, event: str | None = None, api_name: str | None = None) -> int:
    """The fn_index of the handler an event triggers (by the component's elem_id), or of the one with `api_name`."""
    for i, fn in demo.fns.items():
        if api_name is not None and fn.api_name == api_name:
            return i
        for block_id, name in fn.targets:
            block = demo.blocks.get(block_id) if block_id is not None else None
            if elem_id is not None and block is not None and block.elem_id == elem_id and name == event and fn.fn:
                return i
    raise LookupError(elem_id or api_name)


def inputs(demo: Any, index: int, owner: str | None = None, **by_elem_id: Any) -> list[Any]:
    """The data list for a handler: each input's default value, the owner id for the browser's owner state, and the
    values given by elem_id (dashes written as underscores)."""
    given = {k.replace("_", "-"): v for k, v in by_elem_id.items()}
    data = []
    named = set()
    for component in demo.fns[index].inputs:
        name = type(component).__name__
        key = (component.elem_id or "").replace("_", "-")
        named.add(key)
        if name == "BrowserState":
            data.append(owner)
        elif name == "State":
            data.append(None)  # the server keeps a session's state; what a caller sends is ignored
        elif key in given:
            data.append(given[key])
        elif component._id in PACKS:  # widgets sent as one box (app/ui/packed.py): their values, as the page packs
            widgets = PACKS[component._id].widgets
            named |= {k.replace("_", "-") for k in widgets}
            data.append(json.dumps({k: given.get(k.replace("_", "-"), w.value) for k, w in widgets.items()}))
        else:
            data.append(getattr(component, "value", None))
    unused = set(given) - named
    assert not unused, f"no such input: {unused}"
    return data


def settings_id(side: str, prefix: str, name: str) -> str:
    """The keyword `inputs` takes for one setting's widget."""
    return f"{side}-{prefix}-{name}".replace("-", "_")


def load_index(demo: Any) -> int:
    return next(i for i, fn in demo.fns.items() if any(name == "load" for _, name in fn.targets))


def session(demo: Any, url: str, owner: str | None) -> str:
    """A new queue session; with an owner id, opened the way a browser opens the page (sending the id it stored)."""
    hash_ = uuid.uuid4().hex
    if owner is not None:
        done = call(url, load_index(demo), inputs(demo, load_index(demo), owner), hash_)
        assert done["success"], done
    return hash_


def call(url: str, index: int, data: list[Any], session: str | None = None) -> dict[str, Any]:
    """Joins the queue for one handler, reads its event stream to the end; returns the process_completed message."""
    return queue_call(url, index, data, session, timeout=300)[0]


def race(demo: Any, url: str, owner: str | None = None, prompt: str = "Hello there", **by_elem_id: Any) -> bool:
    """Runs /race through the queue API to its end; whether Gradio ran it (it refuses a value that is not one of a
    picker's choices). The outcome is read from the recording it saved."""
    index = fn_index(demo, api_name="race")
    done = call(url, index, inputs(demo, index, owner, prompt=prompt, **by_elem_id), session(demo, url, owner))
    return bool(done["success"])


def outputs(demo: Any, url: str, elem_id: str, event: str, owner: str | None = None, **by_elem_id: Any) -> Any:
    """A handler's outputs through the queue API, or Gradio's error when it refused the call."""
    index = fn_index(demo, elem_id=elem_id, event=event)
    done = call(url, index, inputs(demo, index, owner, **by_elem_id), session(demo, url, owner))
    return done["output"]["data"] if done["success"] else done["output"]


def only_run(folder: Path) -> Any:
    runs = sorted(folder.rglob("*.jsonl"))
    assert len(runs) == 1, runs
    return read_recording(runs[0])


def side_message(rec: Any, side: str) -> str:
    return str(rec.ends.get(side, {}).get("message") or "")


# --- trust levels ---------------------------------------------------------------------------------------------------

def test_the_trust_level_follows_how_the_page_is_launched() -> None:
    assert not from_launch("127.0.0.1", env={}).served and not from_launch("localhost", env={}).served
    assert not from_launch("::1", env={}).served and is_loopback("127.0.0.2")
    assert from_launch("0.0.0.0", env={}).reason == "--host 0.0.0.0"
    assert from_launch("127.0.0.1", share=True, env={}).reason == "--share"
    assert from_launch("127.0.0.1", env={"SPACE_ID": "someone/converge"}).reason == "running on a Hugging Face Space"
    policy = served(allow=["upload"], hf_models=["tiny/model"], base_urls=["http://10.0.0.5:8000/v1/"])
    assert policy.off() == [c for c in CAPABILITIES if c != "upload"] and policy.on() == ["upload"]
    assert policy.base_url_allowed("http://10.0.0.5:8000/v1") and not policy.base_url_allowed("http://10.0.0.5:8001/v1")
    env = from_launch("0.0.0.0", env={"CONVERGE_ALLOW": "env-keys, upload", "CONVERGE_HF_MODELS": "a/b,c/d"})
    assert env.on() == ["env-keys", "upload"] and env.hf_models == ("a/b", "c/d")
    with pytest.raises(ValueError, match="Unknown capability 'everything'"):
        from_launch("0.0.0.0", allow=["everything"], env={})


def test_a_served_launch_says_what_is_off_and_what_the_host_turned_on(monkeypatch: pytest.MonkeyPatch,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """Gradio's own launch is replaced, so no server is bound to a public address by the test."""
    import gradio as gr

    from app.__main__ import main

    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(gr.Blocks, "launch", lambda self, **kw: calls.append(kw))
    for name in ("SPACE_ID", "CONVERGE_ALLOW", "CONVERGE_HF_MODELS", "CONVERGE_BASE_URLS"):
        monkeypatch.delenv(name, raising=False)
    main([])
    assert "Served page" not in capsys.readouterr().err
    main(["--host", "0.0.0.0", "--allow", "upload"])
    said = capsys.readouterr().err
    assert "Served page (--host 0.0.0.0)" in said and "off: remote-code" in said and "on (--allow upload)" in said
    assert [c["server_name"] for c in calls] == ["127.0.0.1", "0.0.0.0"]
    with pytest.raises(SystemExit):
        main(["--host", "0.0.0.0", "--allow", "everything"])


def elem_ids(demo: Any) -> set[str]:
    return {b.elem_id for b in demo.blocks.values() if b.elem_id}


def test_a_served_page_hides_what_is_off_and_says_so() -> None:
    local, strict = build(LOCAL), build(served())
    assert {"left-hf-ar-trust_remote_code", "left-openai-base_url"} <= elem_ids(local)
    assert not {"left-hf-ar-trust_remote_code", "left-openai-base_url"} & elem_ids(strict)
    assert "trust-note" in elem_ids(strict) and "trust-note" not in elem_ids(local)
    note = next(b for b in build(served(allow=["remote-code"], hf_models=["tiny"])).blocks.values()
                if b.elem_id == "trust-note")
    assert "served to others" in note.value
    assert "turned back on: running a model's own code on this server" in note.value
    assert not any(c in note.value for c in CAPABILITIES if "-" in c)  # in words, not the host's ids
    upload = next(b for b in strict.blocks.values() if b.elem_id == "load-file")
    assert upload.visible is False
    picker = next(b for b in strict.blocks.values() if b.elem_id == "left-source")
    assert not any(value.startswith("hf-") for _, value in picker.choices)


# --- remote code --------------------------------------------------------------------------------------------------

def hostile_model(folder: Path, ran: Path) -> Path:
    """A model folder like the issue's uploads: a config.json whose auto_map points at a .py that, once imported,
    writes `ran` (the sentinel that it ran)."""
    folder.mkdir(parents=True)
    (folder / "evil.py").write_text(
        "from pathlib import Path\nfrom transformers import PretrainedConfig\n"
        f"Path({str(ran)!r}).write_text('ran')\n\n"
        "class EvilConfig(PretrainedConfig):\n    model_type = 'evil'\n")
    (folder / "config.json").write_text(json.dumps({"model_type": "evil", "auto_map": {
        "AutoConfig": "evil.EvilConfig", "AutoModelForCausalLM": "evil.EvilConfig"}}))
    return folder


@pytest.mark.parametrize("policy, runs", [(served(), False), (served(hf_models=["HOSTILE"]), False),
                                          (served(allow=["hf-models"]), False), (LOCAL, True)],
                         ids=["served", "served-host-named-the-folder", "served-any-model", "local-control"])
def test_a_visitor_cannot_make_the_server_run_an_uploaded_models_code(policy: Policy, runs: bool, tmp_path: Path,
                                                                       recordings: Path) -> None:
    pytest.importorskip("transformers", reason="transformers is not installed")
    ran = tmp_path / "ran.txt"
    folder = hostile_model(tmp_path / f"upload-{uuid.uuid4().hex[:8]}", ran)
    if policy.hf_models:
        policy = served(hf_models=[str(folder)])
    with page(policy) as (demo, url):
        trust = {settings_id("left", "hf-ar", "trust_remote_code"): True} if policy.can("remote-code") else {}
        ran_race = race(demo, url, left_source="hf-ar", left_arg=str(folder), right_source="replay",
                        right_arg=f"{EXAMPLE}#right", **trust)
    tally("security_attacks")
    tally("security_breaches", int(ran.exists() and not runs))
    assert ran.exists() == runs
    if policy.offers("hf-ar"):
        rec = only_run(recordings)
        assert rec.ends["right"]["status"] == "done"  # the other side kept running
        assert runs or (rec.ends["left"]["status"] == "error" and side_message(rec, "left"))
    else:
        assert not ran_race and not list(recordings.rglob("*.jsonl"))  # not offered: Gradio refuses the value


def test_trust_remote_code_is_refused_for_visitors_unless_the_host_allows_it() -> None:
    for policy in (served(allow=["hf-models"]), served(hf_models=["some/model"])):
        with pytest.raises(UserError, match="trust_remote_code"):
            check_side(policy, "hf-ar:some/model", {"trust_remote_code": "True"})
    check_side(served(allow=["hf-models", "remote-code"]), "hf-ar:some/model", {"trust_remote_code": True})
    with pytest.raises(UserError, match="only the Hugging Face models its host named: some/model"):
        check_side(served(hf_models=["some/model"]), "hf-diffusion:other/model", {})


# --- the host's key and the host's network -------------------------------------------------------------------------

class Listener:
    """A TCP listener on loopback that keeps every byte it is sent and answers nothing."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.received = bytearray()
        self.connections = 0
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1"
        threading.Thread(target=self._serve, daemon=True, name="listener").start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            with conn:
                conn.settimeout(2)
                with contextlib.suppress(OSError):
                    while chunk := conn.recv(65536):
                        self.received += chunk
                        if b"\r\n\r\n" in self.received:
                            break

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def listener() -> Iterator[Listener]:
    ear = Listener()
    yield ear
    ear.close()


@pytest.mark.parametrize("level, refusal", [("local", "Enter an API key for that base URL"),
                                            ("served", "not one this server allows"),
                                            ("served-url-allowed", "Enter an API key for that base URL")])
def test_the_hosts_key_never_reaches_a_base_url_the_visitor_typed(level: str, refusal: str, listener: Listener,
                                                                   recordings: Path) -> None:
    """The environment holds the sentinel OPENAI_API_KEY; the visitor types the listener's URL and no key."""
    policy = {"local": LOCAL, "served": served(allow=["env-keys"], base_urls=["https://api.example.com/v1"]),
              "served-url-allowed": served(allow=["env-keys"], base_urls=[listener.url])}[level]
    with page(policy) as (demo, url):
        race(demo, url, left_source="openai", left_arg="gpt-test", right_source="replay", right_arg=EXAMPLE,
             **{settings_id("left", "openai", "base_url"): listener.url})
    tally("security_attacks")
    rec = only_run(recordings)
    leaked = sentinels.found_in(bytes(listener.received))
    tally("security_breaches", len(leaked))
    assert leaked == [] and listener.connections == 0
    assert refusal in side_message(rec, "left") and rec.ends["right"]["status"] == "done"


def test_the_ssrf_control_the_listener_hears_a_key_the_visitor_typed(listener: Listener, recordings: Path) -> None:
    """The same request with the visitor's own key does reach the listener, so the test above watches the right port."""
    with page(served(base_urls=[listener.url])) as (demo, url):
        race(demo, url, left_source="openai", left_arg="gpt-test", left_key=sentinels.TYPED, right_source="replay",
             right_arg=EXAMPLE, **{settings_id("left", "openai", "base_url"): listener.url})
    assert listener.connections >= 1 and sentinels.found_in(bytes(listener.received)) == [sentinels.TYPED]
    listener.received.clear()  # the visitor's own key reached the visitor's own listener: nothing to keep


def test_a_base_url_the_host_did_not_list_is_refused_before_any_connection(listener: Listener) -> None:
    policy = served(base_urls=["https://api.example.com/v1"])
    with pytest.raises(UserError, match="not one this server allows"):
        visitor_source(Visitor(policy))("openai:gpt-test", base_url=listener.url, api_key=sentinels.TYPED)
    tally("security_attacks")
    assert listener.connections == 0


def test_a_served_page_tells_probes_of_the_network_apart_by_nothing(wire_server: str, tmp_path: Path) -> None:
    """Closed port, missing model, rejected key: the visitor gets one sentence shape, no status and no error body."""
    with serve(fps=0) as gone:
        pass  # started and stopped: nothing listens on its port any more
    policy = served(base_urls=[gone, wire_server])
    make = visitor_source(Visitor(policy))
    said = {}
    for name, base, model, key in (("closed", gone, "gpt-test", DEFAULT_KEY),
                                   ("404", wire_server, "fail-404", DEFAULT_KEY),
                                   ("401", wire_server, "gpt-test", sentinels.TYPED),
                                   ("body", wire_server, "error-after-0", DEFAULT_KEY)):
        source = make(f"openai:{model}", base_url=base, api_key=key)
        with pytest.raises(UserError) as err:
            list(source.stream("hello", threading.Event()))
        said[name] = str(err.value).replace(base.split("//")[1].split("/")[0], "HOST")
    tally("security_attacks", len(said))
    assert len(set(said.values())) == 1, said
    assert "404" not in said["404"] and "Upstream" not in said["body"] and "connect" not in said["closed"]


def test_a_served_page_does_not_lend_the_hosts_keys_unless_allowed() -> None:
    with pytest.raises(UserError, match="Enter your own API key"):
        check_side(served(), "mercury", {})
    check_side(served(), "mercury", {"api_key": sentinels.TYPED})
    check_side(served(allow=["env-keys"]), "mercury", {})
    check_side(LOCAL, "mercury", {})


# --- replay: and paths -------------------------------------------------------------------------------------------

def outside_recording(tmp_path: Path) -> Path:
    """A valid recording outside the library (as another visitor's upload in Gradio's cache would be)."""
    path = tmp_path / "elsewhere" / "private.jsonl"
    path.parent.mkdir()
    rec = read_recording(EXAMPLES_DIR / EXAMPLE.partition("/")[2])
    from app.trace.frames import RecordingWriter

    writer = RecordingWriter(path, {**rec.header, "prompt": "another visitor's private prompt"})
    for frame in rec.frames["left"]:
        writer.frame("left", frame)
    writer.close()
    return path


@pytest.mark.parametrize("policy", [LOCAL, served()], ids=["local", "served"])
def test_replay_from_the_page_takes_library_names_and_tells_nothing_about_other_files(policy: Policy, tmp_path: Path,
                                                                                      recordings: Path) -> None:
    private = outside_recording(tmp_path)
    attempts = [str(private), str(tmp_path / "elsewhere" / "missing.jsonl"), "/etc/passwd",
                f"user/../../{private.parent.name}/{private.name}", "../elsewhere/private.jsonl",
                "example/../../x.jsonl"]
    with page(policy) as (demo, url):
        said = []
        for attempt in attempts:
            race(demo, url, left_source="replay", left_arg=attempt, right_source="replay", right_arg=EXAMPLE)
            runs = sorted(recordings.rglob("*.jsonl"), key=lambda p: p.stat().st_mtime_ns)
            rec = read_recording(runs[-1])
            said.append(side_message(rec, "left"))
            assert rec.frames["left"] == [] and rec.ends["right"]["status"] == "done"
            assert b"private prompt" not in runs[-1].read_bytes()
            tally("security_attacks")
        table = json.dumps(opened(demo, url, OWNER_A)[2])
    assert said[0] == said[1] == said[2], said  # an existing file, a missing one and a system file: the same words
    assert all(s for s in said)
    assert "private prompt" not in table and str(recordings) not in table and "/recordings/" not in table


def test_replay_from_the_page_plays_a_library_name(recordings: Path) -> None:
    with page(served()) as (demo, url):
        race(demo, url, owner=OWNER_A, left_source="replay", left_arg=EXAMPLE, right_source="replay",
             right_arg=f"{EXAMPLE}#right", **{settings_id("left", "replay", "speed"): 4,
                                              settings_id("right", "replay", "speed"): 4})
    rec = only_run(recordings)
    assert rec.ends["left"]["status"] == "done" and len(rec.frames["left"]) > 10
    assert rec.header["sources"]["left"]["name"] == f"replay:{EXAMPLE}"  # the name, never a server path


def test_the_command_line_still_replays_a_file_path(tmp_path: Path) -> None:
    private = outside_recording(tmp_path)
    assert make_source(f"replay:{private}").recording.header["prompt"] == "another visitor's private prompt"
    with pytest.raises(UserError, match="not a file path"):
        make_source(f"replay:{private}", paths=False)


# --- owners ---------------------------------------------------------------------------------------------------------

def opened(demo: Any, url: str, owner: str | None) -> list[Any]:
    """What the page-load handler gives a browser that stored `owner`: the ids (stored, session), the library table,
    the picker, ..."""
    done = call(url, load_index(demo), inputs(demo, load_index(demo), owner))
    assert done["success"], done
    return done["output"]["data"]


def library_ids(demo: Any, url: str, owner: str | None) -> list[str]:
    """The recording ids `owner` is offered (the picker's choices when the page opens)."""
    return [value for _, value in opened(demo, url, owner)[3]["choices"]]


def test_a_visitor_cannot_see_load_rename_delete_or_download_anothers_recordings(recordings: Path) -> None:
    with page(served()) as (demo, url):
        race(demo, url, owner=OWNER_A, prompt="A's private question", left_source="replay", left_arg=EXAMPLE,
             right_source="replay", right_arg=f"{EXAMPLE}#right")
        mine = [i for i in library_ids(demo, url, OWNER_A) if i.startswith("user/")]
        assert len(mine) == 1 and EXAMPLE in library_ids(demo, url, OWNER_A)
        theirs = mine[0]
        assert theirs not in library_ids(demo, url, OWNER_B) and EXAMPLE in library_ids(demo, url, OWNER_B)
        assert not [i for i in library_ids(demo, url, None) if i.startswith("user/")]  # an API caller without an id
        attempts = {
            "load": outputs(demo, url, "library-load", "click", owner=OWNER_B, library_pick=theirs),
            "download": outputs(demo, url, "library-download", "click", owner=OWNER_B, library_pick=theirs),
            "rename": outputs(demo, url, "library-rename", "click", owner=OWNER_B, library_pick=theirs,
                              library_name="stolen"),
            "delete": outputs(demo, url, "library-delete", "click", owner=OWNER_B, library_pick=theirs),
        }
        tally("security_attacks", len(attempts))
        for what, out in attempts.items():  # Gradio refuses an id that is not one of B's choices
            text = json.dumps(out)
            assert NOT_A_CHOICE in text and "private question" not in text, (what, text[:300])
        b = Visitor(served(), OWNER_B)  # and so do the handlers themselves, were the picker not checked
        said = [load_entry(b, theirs)[-1], download_entry(b, theirs)[-1], rename_entry(b, theirs, "stolen", None)[-1],
                delete_entry(b, theirs)[-1]]
        tally("security_attacks", len(said))
        assert all(m.startswith("There is no recording called") for m in said), said
        assert theirs in library_ids(demo, url, OWNER_A)  # still there, under its own name
        race(demo, url, owner=OWNER_B, left_source="replay", left_arg=theirs, right_source="replay", right_arg=EXAMPLE)
        replayed = only_run(user_dir(OWNER_B))  # B's replay: of A's name looks in B's own library
        tally("security_attacks")
        assert replayed.frames["left"] == [] and "There is no recording called" in side_message(replayed, "left")
        loaded = outputs(demo, url, "library-load", "click", owner=OWNER_A, library_pick=theirs)
        assert loaded[-1].startswith("Loaded")  # the owner still can, through the same API
    files = list(user_dir(OWNER_A).glob("*.jsonl"))
    assert len(files) == 1 and not list(recordings.glob("*.jsonl"))  # kept in A's own folder, not the shared one


@pytest.mark.browser
def test_two_browsers_each_see_only_their_own_runs(browser: Any, recordings: Path) -> None:
    root = "#player .cv-player"
    with page(served()) as (_, url), browser_tab(browser, url) as a, browser_tab(browser, url) as b:
        for tab in (a, b):
            tab.wait_for_selector(f"{root}[data-status='done']")  # the first example loaded: the owner id is set
        a.click("#left-source input")
        a.click("#left-source [role=option][aria-label^='replay ']")
        a.locator("#left-arg input, #left-arg textarea").fill(EXAMPLE)
        a.click("#right-source input")
        a.click("#right-source [role=option][aria-label^='replay ']")
        a.locator("#right-arg input, #right-arg textarea").fill(f"{EXAMPLE}#right")
        a.locator("#prompt textarea").fill("Only A may read this prompt")
        a.click("#run")
        a.wait_for_function("(document.querySelector('#library-table')?.textContent || '').includes('Only A may read')")
        again, errors = {}, []
        for name, tab in (("a", a), ("b", b)):  # a new tab in each browser: the same stored owner id, a new session
            again[name] = tab.context.new_page()
            errors.append(watch_errors(again[name]))
            again[name].goto(url)
            again[name].wait_for_selector(f"{root}[data-status='done']")
        a, b = again["a"], again["b"]
        a.wait_for_function("(document.querySelector('#library-table')?.textContent || '').includes('Only A may read')")
        assert "Only A may read" not in b.text_content("#library-table")
        assert "01-confidence-blocks" in b.text_content("#library-table")
        assert errors == [[], []]
    tally("security_attacks")


def test_a_shared_library_is_the_hosts_choice(recordings: Path) -> None:
    with page(served(allow=["shared-library"])) as (demo, url):
        race(demo, url, owner=OWNER_A, left_source="replay", left_arg=EXAMPLE, right_source="replay",
             right_arg=f"{EXAMPLE}#right")
        assert [i for i in library_ids(demo, url, OWNER_B) if i.startswith("user/")]
    assert only_run(recordings) is not None and len(list(recordings.glob("*.jsonl"))) == 1


def test_uploads_are_refused_through_the_api_when_off(tmp_path: Path) -> None:
    """Gradio's upload route refuses the file (app/ui/door.py), and the upload handler refuses one it is handed."""
    import urllib.error

    from app.ui.library_ui import upload_entry

    src = EXAMPLES_DIR / EXAMPLE.partition("/")[2]
    with page(served()) as (demo, url):
        with pytest.raises(urllib.error.HTTPError) as refused:
            _upload(url, src)
    assert refused.value.code == 403
    said = upload_entry(Visitor(served(), OWNER_A), str(src))
    tally("security_attacks", 2)
    assert "Uploading recordings is off" in said[-2]


def _upload(url: str, path: Path) -> str:
    boundary = uuid.uuid4().hex
    body = ((f"--{boundary}\r\nContent-Disposition: form-data; name=\"files\"; filename=\"{path.name}\"\r\n"
             "Content-Type: application/octet-stream\r\n\r\n").encode() + path.read_bytes()
            + f"\r\n--{boundary}--\r\n".encode())
    request = urllib.request.Request(url + "gradio_api/upload", data=body,
                                     headers={"Content-Type": f"multipart/form-data; boundary={boundary}"})
    with urllib.request.urlopen(request, timeout=30) as r:
        return r.read().decode()


def test_scratch_copies_are_removed_when_old_many_or_big(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import os
    import time

    monkeypatch.setattr(scratch, "root", lambda: tmp_path / "scratch")  # none of other tests' copies in the count
    monkeypatch.setattr(scratch, "MAX_FOLDERS", 3)
    made = []
    for i in range(5):
        folder = scratch.new_dir("dl")
        (folder / "x.jsonl").write_bytes(b"x" * 10)
        old = time.time() - 120 * (5 - i)
        os.utime(folder, (old, old))
        made.append(folder)
    scratch.prune()
    assert [f.exists() for f in made] == [False, False, True, True, True]
    monkeypatch.setattr(scratch, "MAX_BYTES", 15)
    scratch.prune()
    assert [f.exists() for f in made] == [False, False, False, False, True]
    scratch.prune(now=time.time() + scratch.MAX_AGE + 1)
    assert not any(f.exists() for f in made)


# --- keys in what the model says ------------------------------------------------------------------------------------

def test_the_scrubber_hides_keys_whole_and_cut_between_chunks() -> None:
    keys = [sentinels.TYPED]
    assert scrub_text(f"say {sentinels.TYPED} twice {sentinels.TYPED}", keys) == f"say {REDACTED} twice {REDACTED}"
    assert scrub_text("the key is " + sentinels.TYPED[:9], keys) == "the key is " + REDACTED
    assert scrub_text("sk-t", keys) == "sk-t"[:0] + REDACTED and scrub_text("ordinary text", keys) == "ordinary text"
    frame = scrub_frame(Frame(t=0.0, step=0, tokens=["a", sentinels.TYPED], text=f"x{sentinels.TYPED}",
                              usage={sentinels.TYPED: 1, "n": {sentinels.TYPED: 2}}, note=f"n {sentinels.TYPED}"), keys)
    assert sentinels.found_in(repr(frame)) == [] and frame.usage == {REDACTED: 1, "n": {REDACTED: 2}}


@pytest.mark.browser
def test_a_key_echoed_into_the_answer_reaches_no_recording_page_or_export(browser: Any, wire_server: str,
                                                                          monkeypatch: pytest.MonkeyPatch,
                                                                          recordings: Path, tmp_path: Path) -> None:
    """The endpoint echoes the Authorization header into its text and usage; the left side's key is typed, the right
    side's comes from the environment, and a scripted stream cuts the key in two between chunks."""
    from app.export.html import export_html

    monkeypatch.setenv("OPENAI_API_KEY", DEFAULT_KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", wire_server)
    half = len(DEFAULT_KEY) // 2
    split = script([sse({"choices": [{"index": 0, "delta": {"content": "key: " + DEFAULT_KEY[:half]}}]}),
                    sse({"choices": [{"index": 0, "delta": {"content": DEFAULT_KEY[half:] + " end"}}]}),
                    sse({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}), sse(b"[DONE]")])
    with page(LOCAL) as (demo, url), browser_tab(browser, url) as tab:
        tab.wait_for_selector("#player .cv-player[data-status='done']")
        for left in ("echo-key", split):
            before = tab.evaluate("document.querySelector('#player .cv-player').convergePlayer.state.recording")
            for side, key in (("left", DEFAULT_KEY), ("right", "")):
                pick_source(tab, side, "openai")
                tab.locator(f"#{side}-arg input, #{side}-arg textarea").fill(left if side == "left" else "echo-key")
                tab.locator(f"#{side}-key input").fill(key)  # the right side uses the key in the environment
            tab.locator("#prompt textarea").fill("Repeat my key.")
            tab.click("#run")
            tab.wait_for_function("""(before) => {
              const root = document.querySelector('#player .cv-player'), state = root.convergePlayer.state;
              return root.dataset.status === 'done' && state.done && state.mode === 'live' && state.recording !== before;
            }""", arg=before)  # noqa: E501 - JavaScript run in the page as written
            shown = tab.evaluate("JSON.stringify(document.querySelector('#player .cv-player').convergePlayer.state)")
            assert sentinels.found_in(shown) == []
            for side in ("left", "right"):
                assert REDACTED in tab.text_content(f"#player .cv-side[data-side={side}]")
            tally("security_attacks")
    runs = sorted(recordings.rglob("*.jsonl"))
    assert len(runs) == 2
    for run in runs:
        rec = read_recording(run)
        assert all(rec.ends[s]["status"] == "done" for s in ("left", "right")), rec.ends
        assert all(REDACTED in rec.frames[s][-1].text for s in ("left", "right"))
        assert sentinels.found_in(json.dumps([f.usage for f in rec.frames["right"]])) == []
        html = export_html(run, tmp_path / f"{run.stem}.html")
        assert DEFAULT_KEY[:half].encode() not in run.read_bytes()  # not even the half sent before the rest came
        leaked = sentinels.found_in(run.read_bytes()) + sentinels.found_in(html.read_bytes())
        tally("security_breaches", len(leaked))
        assert leaked == []


def test_a_key_typed_as_a_model_name_stays_out_of_the_file_name_header_and_messages(recordings: Path) -> None:
    from app.race.run import Race
    from app.ui.live import live_updates

    race = Race(f"say {sentinels.TYPED}", f"openai:{sentinels.TYPED}", f"replay:{EXAMPLE}",
                secrets={"left": {"api_key": sentinels.TYPED}}, folder=recordings)
    final = list(live_updates(race, interval=0.02))[-1]
    tally("security_attacks")
    assert sentinels.found_in(race.path.name) == [] and sentinels.found_in(race.path.read_bytes()) == []
    assert sentinels.found_in(json.dumps(final)) == [] and final["sides"]["right"]["status"] == "done"


def test_the_model_list_handler_lends_no_host_key_and_asks_no_url_the_host_did_not_list(
        api_env: str, wire_server: str) -> None:
    with page(served(base_urls=[wire_server])) as (demo, url):
        index = fn_index(demo, elem_id="left-key", event="submit")

        def note(**given: Any) -> str:
            done = call(url, index, inputs(demo, index, **given))
            assert done["success"], done
            return done["output"]["data"][0]["info"]

        assert note(left_source="mercury").startswith("No API key to list models with (enter your own API key)")
        assert "not one this server allows" in note(left_source="openai", left_key=sentinels.TYPED,
                                                    **{settings_id("left", "openai", "base_url"): "http://10.9.8.7/v1"})
        assert note(left_source="openai", **{settings_id("left", "openai", "base_url"): wire_server}).startswith(
            "Enter an API key to list the models at that base URL")
        assert note(left_source="openai", left_key=DEFAULT_KEY,
                    **{settings_id("left", "openai", "base_url"): wire_server}).startswith("3 models listed")
        tally("security_attacks", 3)
