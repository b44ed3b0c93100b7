"""The page in a real Chromium: races against the loopback wire server, Stop, errors, hostile text, the recording
library (load, rename, delete, upload, download), the bundled example on open, presenter mode and exports.

One in-process Gradio server serves the whole module; each test opens a fresh page and fails on any
console error. Progress is read from the player's data-* attributes, never from sleeps.
"""

from __future__ import annotations

import contextlib
import json
import threading
from pathlib import Path
from typing import Any, Iterator

import pytest

from app.analysis.changes import SideAnalyzer
from app.race.run import Race
from app.trace import library
from app.trace.frames import SIDES, Frame, RecordingWriter, make_header
from app.trace.reading import read_recording
from app.ui.live import live_updates
from app.ui.page_assets import CONFIRM_DELETE_JS
from app.view.payload import live_payload, load_payload, percent, recording_payload, wire_rows
from tests.fixtures import drain, needs_twins
from tests.pages import browser_tab, pick_source, watch_errors
from tests.wire import expand_rows

HOSTILE = ('<img src=x onerror="window.__pwned=1">', "<script>window.__pwned=1</script>",
           "${window.__pwned=1}", "{{constructor.constructor('window.__pwned=1')()}}")
ROOT = "#player .cv-player"
SHOTS = Path("/tmp")


@pytest.fixture(autouse=True)
def examples(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Bundled examples come from a folder of the test's own (empty unless a test writes one), read at page load."""
    folder = tmp_path / "examples"
    folder.mkdir()
    monkeypatch.setenv("CONVERGE_EXAMPLES", str(folder))
    return folder


@pytest.fixture
def page(browser: Any, server_url: str) -> Iterator[Any]:
    """A fresh tab on the page; the test fails if the page logs a console error or throws."""
    with browser_tab(browser, server_url) as tab:
        # empty, or the first example loaded
        tab.wait_for_selector(f"{ROOT}[data-status='idle'], {ROOT}[data-mode='replay']")
        yield tab


def choose(page: Any, side: str, prefix: str, arg: str = "", key: str | None = None) -> None:
    """Picks a source kind in one side's picker and fills its argument and key."""
    pick_source(page, side, prefix)
    if arg:
        page.locator(f"#{side}-arg input, #{side}-arg textarea").fill(arg)
    if key is not None:
        page.locator(f"#{side}-key input").fill(key)


def start(page: Any, prompt: str) -> None:
    page.locator("#prompt textarea").fill(prompt)
    page.click("#run")


def watch_frames(page: Any) -> None:
    """Records every value each side's data-frames takes, so a test can see the panels advance."""
    page.evaluate("""() => {
      window.__seen = {left: [], right: []};
      for (const s of ['left', 'right']) {
        const el = document.querySelector(`#player .cv-side[data-side=${s}]`);
        new MutationObserver(() => {
          const a = window.__seen[s], v = +el.dataset.frames;
          if (a[a.length - 1] !== v) a.push(v);
        }).observe(el, {attributes: true, attributeFilter: ['data-frames']});
      }
    }""")


def wait_status(page: Any, status: str) -> None:
    page.wait_for_function(f"document.querySelector('{ROOT}').dataset.status === '{status}'")


def side_attr(page: Any, side: str, name: str) -> str:
    return page.get_attribute(f"#player .cv-side[data-side={side}]", name)


def side_text(page: Any, side: str, part: str) -> str:
    return page.text_content(f"#player .cv-side[data-side={side}] .{part}") or ""


def assert_player_holds(page: Any, rec: Any) -> None:
    """Every frame the player holds equals the recording's frame as the analyzer sees it (tokens, masks, changes)."""
    for side in SIDES:
        held = page.evaluate(f"document.querySelector('{ROOT}').convergePlayer.state.sides.{side}.rows"
                             ".map(r => [r.tok, r.m, Array.from(r.ch)])")
        analyzer = SideAnalyzer()
        expected = [[r["tok"], r["m"], r["ch"]] for r in map(analyzer.add, rec.frames[side])]
        assert held == expected, side


def only_recording(folder: Path) -> Path:
    files = sorted(folder.glob("*.jsonl"))
    assert len(files) == 1, files
    return files[0]


@pytest.mark.browser
def test_page_title_legend_and_pickers(page: Any) -> None:
    assert page.title() == "Converge"
    assert page.is_visible("#player .cv-legend")
    assert "masked" in page.text_content("#player .cv-legend")
    assert page.input_value("#left-source input").startswith("local-diffusion")
    assert page.input_value("#right-source input").startswith("local-ar")
    about = page.text_content("#twins-about")
    assert "Built-in twins" in about and "parameters each" in about
    page.click("#twins-about button")
    page.wait_for_selector("#twins-about >> text=minutes of training", state="visible")
    assert not page.is_visible("#left-key")
    choose(page, "left", "mercury")
    page.wait_for_selector("#left-key input", state="visible")
    assert page.get_attribute("#left-key input", "type") == "password"
    page.focus("#run")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.id || document.activeElement.closest('[id]').id") == "stop"


@pytest.mark.browser
def test_a_race_advances_both_panels_frame_by_frame(page: Any, api_env: str, recordings: Path) -> None:
    choose(page, "left", "mercury")
    choose(page, "right", "openai", "gpt-test")
    watch_frames(page)
    start(page, "Explain diffusion models in one sentence.")
    page.wait_for_function(f"+document.querySelector('{ROOT}').dataset.frames >= 6 "
                           f"&& document.querySelector('{ROOT}').dataset.status === 'running'")
    page.screenshot(path=str(SHOTS / "converge-mid-race.png"), full_page=True)
    wait_status(page, "done")
    page.screenshot(path=str(SHOTS / "converge-after-race.png"), full_page=True)
    rec = read_recording(only_recording(recordings))
    seen = page.evaluate("window.__seen")
    for side in SIDES:
        n = len(rec.frames[side])
        assert n > 3 and rec.ends[side]["status"] == "done"
        assert len(seen[side]) > 2, seen  # the panel advanced more than once while it ran
        assert seen[side] == sorted(seen[side]) and seen[side][-1] == n
        assert side_attr(page, side, "data-frames") == str(n)
        assert side_attr(page, side, "data-status") == "done"
        assert page.get_attribute(f"#player .cv-side[data-side={side}] .cv-heatmap", "data-rows") == str(n)
        assert page.text_content(f"#player tr[data-metric=frames] td[data-side={side}]") == str(n)
        assert page.get_attribute("#player .cv-chart", f"data-kind-{side}") == "settled"
    assert_player_holds(page, rec)
    assert side_text(page, "left", "cv-text") == rec.frames["left"][-1].text
    # after the run the shared timeline scrubs both sides back to their first frames
    page.wait_for_selector("#player .cv-scrub[data-enabled=true]")
    page.focus("#player .cv-range")
    page.keyboard.press("Home")
    page.wait_for_function(f"document.querySelector('{ROOT}').dataset.step === '0'")
    assert int(side_attr(page, "left", "data-step")) <= 0 and int(side_attr(page, "right", "data-step")) <= 0
    page.click("#player .cv-scrub button[aria-label='Next frame']")
    page.wait_for_function(f"document.querySelector('{ROOT}').dataset.step === '1'")


@pytest.mark.browser
def test_stop_ends_both_sides_and_keeps_the_frames(page: Any, api_env: str, recordings: Path) -> None:
    long_answer = " ".join(f"word{i}" for i in range(600))
    choose(page, "left", "mercury")
    choose(page, "right", "openai", "gpt-test")
    start(page, "ECHO:" + long_answer)
    for side in SIDES:
        page.wait_for_function(f"+document.querySelector('#player .cv-side[data-side={side}]').dataset.frames >= 3")
    page.click("#stop")
    wait_status(page, "stopped")
    for thread in [t for t in threading.enumerate() if t.name in ("race-left", "race-right")]:
        thread.join(timeout=10)
        assert not thread.is_alive(), "a race thread kept running after Stop"
    rec = read_recording(only_recording(recordings))
    for side in SIDES:
        n = len(rec.frames[side])
        assert n >= 3 and not rec.frames[side][-1].final
        assert rec.ends[side]["status"] == "stopped"
        assert side_attr(page, side, "data-status") == "stopped"
        assert side_attr(page, side, "data-frames") == str(n)
    assert "Stopped" in page.text_content("#player .cv-status")
    assert_player_holds(page, rec)


@pytest.mark.browser
def test_a_missing_key_names_the_variable_while_the_other_side_finishes(
        page: Any, api_env: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("INCEPTION_API_KEY")
    choose(page, "left", "mercury")
    choose(page, "right", "openai", "gpt-test")
    start(page, "What is the capital of France?")
    wait_status(page, "done")
    assert side_attr(page, "left", "data-status") == "error"
    assert "INCEPTION_API_KEY" in side_text(page, "left", "cv-message")
    assert page.is_visible("#player .cv-side[data-side=left] .cv-message")
    assert side_attr(page, "right", "data-status") == "done"
    assert int(side_attr(page, "right", "data-frames")) > 3


@pytest.mark.browser
def test_a_key_typed_into_the_page_is_used_and_never_saved(
        page: Any, api_env: str, recordings: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.wire_server import DEFAULT_KEY as TEST_KEY

    monkeypatch.delenv("INCEPTION_API_KEY")
    choose(page, "left", "mercury", key=TEST_KEY)
    choose(page, "right", "openai", "gpt-test")
    start(page, "What is the capital of France?")
    wait_status(page, "done")
    assert [side_attr(page, s, "data-status") for s in SIDES] == ["done", "done"]
    saved = only_recording(recordings).read_text()
    assert TEST_KEY not in saved and TEST_KEY not in page.text_content("#player")


@pytest.mark.browser
def test_api_errors_show_a_clear_message_in_that_sides_panel(page: Any, api_env: str, recordings: Path) -> None:
    from tests.wire_server import DEFAULT_KEY as TEST_KEY

    choose(page, "left", "mercury", "fail-401")
    choose(page, "right", "openai", "cut-after-4")
    start(page, "Tell me about Paris.")
    wait_status(page, "error")  # both sides failed
    left, right = side_text(page, "left", "cv-message"), side_text(page, "right", "cv-message")
    assert side_attr(page, "left", "data-status") == "error" and ("401" in left or "key" in left.lower())
    assert side_attr(page, "right", "data-status") == "error" and right
    rec = read_recording(only_recording(recordings))
    assert len(rec.frames["right"]) >= 1
    assert side_attr(page, "right", "data-frames") == str(len(rec.frames["right"]))
    assert TEST_KEY not in page.content()


@pytest.mark.browser
@needs_twins
def test_the_default_pair_races_with_settings_from_the_page(page: Any, recordings: Path) -> None:
    for side, prefix in (("left", "local-diffusion"), ("right", "local-ar")):
        page.click(f"#{side}-settings button.label-wrap")
        page.click(f"#{side}-{prefix}-gen_length input")
        page.click(f"#{side}-{prefix}-gen_length [role=option][aria-label='32']")
    start(page, "Once upon a time, there was a little")
    wait_status(page, "done")
    rec = read_recording(only_recording(recordings))
    assert [rec.header["sources"][s]["settings"]["gen_length"] for s in SIDES] == [32, 32]
    assert any(rec.frames["left"][0].masked or [])
    for side in SIDES:
        n = len(rec.frames[side])
        assert side_attr(page, side, "data-status") == "done" and side_attr(page, side, "data-frames") == str(n)
        assert page.get_attribute(f"#player .cv-side[data-side={side}] .cv-heatmap", "data-rows") == str(n)


def write_recording(path: Path) -> Path:
    """A small two-sided recording: a masked-diffusion left side with a remask, a typing right side, hostile text."""
    words = [h + " " for h in HOSTILE] + ["plain ", "end"]
    w = RecordingWriter(path, make_header(HOSTILE[1], {"left": {"name": "local-diffusion", "settings": {}},
                                                       "right": {"name": "openai:" + HOSTILE[3], "settings": {}}}))
    masks = [[True] * 6, [False, True, True, False, True, True], [False, False, True, False, True, False],
             [False, True, True, False, False, False], [False] * 6]
    for i, m in enumerate(masks):
        w.frame("left", Frame(t=0.1 * i, step=i, tokens=words, masked=m, nfe=i + 1, final=i == len(masks) - 1))
    for i in range(1, 7):
        w.frame("right", Frame(t=0.07 * i, step=i, text="".join(words[:i]), final=i == 6))
    w.end("left", "done")
    w.end("right", "done")
    w.close()
    return path


@pytest.mark.browser
def test_a_loaded_recording_plays_in_the_same_player(page: Any, tmp_path: Path, recordings: Path) -> None:
    path = write_recording(tmp_path / "sample.jsonl")
    page.set_input_files("#load-file input[type=file]", str(path))
    page.wait_for_function(f"document.querySelector('{ROOT}').dataset.mode === 'replay' "
                           f"&& document.querySelector('{ROOT}').dataset.status === 'done'")
    rec = read_recording(path)
    for side in SIDES:
        n = len(rec.frames[side])
        assert side_attr(page, side, "data-frames") == str(n)
        assert page.get_attribute(f"#player .cv-side[data-side={side}] .cv-heatmap", "data-rows") == str(n)
    assert_player_holds(page, rec)
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert HOSTILE[3] in side_text(page, "right", "cv-spec")
    assert page.get_attribute(ROOT, "data-step") == "0"  # a loaded recording opens at its start
    page.focus("#player .cv-range")
    page.keyboard.press("Home")
    page.wait_for_function(f"document.querySelector('{ROOT}').dataset.step === '0'")
    assert side_text(page, "left", "cv-text") == "\u2591" * 6  # the first frame: every position masked
    page.keyboard.press("ArrowRight")
    page.wait_for_function(f"document.querySelector('{ROOT}').dataset.step === '1'")
    last = len({f.t for s in SIDES for f in rec.frames[s]}) - 1
    page.click("#player .cv-scrub button[aria-label='Play']")  # plays on to the end at the recorded pace
    page.wait_for_function(f"document.querySelector('{ROOT}').dataset.step === '{last}'")
    assert side_text(page, "left", "cv-text") == "".join(rec.frames["left"][-1].tokens)
    assert all(h in side_text(page, "left", "cv-text") for h in HOSTILE)
    assert (recordings / "sample.jsonl").read_bytes() == path.read_bytes()  # the upload joined the library
    assert page.evaluate("document.querySelectorAll('#player img, #player script').length") == 0


@pytest.mark.browser
def test_the_player_runs_standalone_without_gradio(browser: Any, tmp_path: Path) -> None:
    from app.view.payload import asset

    payload = load_payload(write_recording(tmp_path / "r.jsonl"))
    tab = browser.new_page()
    errors = watch_errors(tab)
    tab.set_content("<!doctype html><title>export</title><div id=root></div>")
    tab.add_style_tag(content=asset("player.css"))
    tab.add_script_tag(content=asset("player.js"))
    tab.evaluate("data => { window.p = ConvergePlayer.mount(document.getElementById('root'), data); }", payload)
    tab.wait_for_function("document.getElementById('root').dataset.status === 'done'")
    assert tab.get_attribute("#root .cv-side[data-side=left]", "data-frames") == "5"
    assert tab.get_attribute("#root .cv-side[data-side=right] .cv-heatmap", "data-rows") == "6"
    assert tab.evaluate("typeof window.__pwned") == "undefined" and errors == []
    tab.close()


def expanded(row: dict[str, Any]) -> dict[str, Any]:
    """An analyzer row as the browser gets it back: confidences and candidates in whole percents."""
    out = {k: v for k, v in row.items() if k not in ("conf", "cand")}
    out["cf"] = [percent(c) for c in row["conf"]] if row.get("conf") is not None else None
    out["cd"] = [[pos, [[n, percent(p)] for n, p in c]] for pos, c in row["cand"]] if row.get("cand") else None
    return out


def test_a_recording_loads_as_the_rows_the_live_race_sent(tmp_path: Path) -> None:
    source = write_recording(tmp_path / "source.jsonl")
    race = Race("p", f"replay:{source}", f"replay:{source}#right",
                settings={"left": {"speed": 4}, "right": {"speed": 4}}, out=tmp_path / "out.jsonl")
    live: dict[str, list[dict[str, Any]]] = {s: [] for s in SIDES}
    final: dict[str, Any] = {}
    for seq, update in enumerate(live_updates(race, interval=0.01)):
        payload = live_payload(update, "r", seq)
        assert payload["run"] == "r" and payload["seq"] == seq
        for side, entry in payload["sides"].items():
            live[side][entry["start"]:] = expand_rows(entry["rows"])  # each payload stands alone
        final = payload
    loaded = load_payload(race.path)
    assert loaded["mode"] == "replay" and loaded["done"]
    rec = read_recording(race.path)
    for side in SIDES:
        analyzer = SideAnalyzer()
        full = [expanded(analyzer.add(f)) for f in rec.frames[side]]
        assert live[side] == full and expand_rows(loaded["sides"][side]["rows"]) == full
        assert loaded["sides"][side]["metrics"] == final["sides"][side]["metrics"]
        assert [list(p) for p in loaded["sides"][side]["settled"]] == [list(p) for p in final["sides"][side]["settled"]]
    json.dumps(loaded, allow_nan=False)  # the payload travels as JSON


def test_wire_rows_send_only_what_changed_and_expand_back() -> None:
    analyzer = SideAnalyzer()
    words = [f"w{i} " for i in range(300)]
    rows = [analyzer.add(Frame(t=0.01 * k, step=k, tokens=words[:k + 1])) for k in range(300)]
    wire = wire_rows(rows)
    assert expand_rows(wire) == [expanded(r) for r in rows]
    assert all(len(w["tok"]) == 1 and w["cs"] == [w["n"] - 1, 1] for w in wire[1:])  # typing: one new token each
    assert len(json.dumps(wire)) * 10 < len(json.dumps(rows))


def test_a_recording_without_end_entries_shows_as_stopped(tmp_path: Path) -> None:
    path = tmp_path / "cut.jsonl"
    w = RecordingWriter(path, make_header("p", {"left": {"name": "local-ar", "settings": {}}}))
    w.frame("left", Frame(t=0.0, step=0, tokens=["a"]))
    w.close()
    payload = recording_payload(read_recording(path), "cut.jsonl")
    assert payload["sides"]["left"]["status"] == "stopped" and "frames saved" in payload["sides"]["left"]["message"]
    assert "right" not in payload["sides"]
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n")
    assert "not a Converge recording" in load_payload(bad)["message"]


def test_settings_render_from_the_registry_and_keys_stay_out_of_settings() -> None:
    import gradio as gr

    from app.sources.base import REGISTRY, load_plugins
    from app.ui.sources_ui import SideControls, setting_component

    load_plugins()
    assert REGISTRY["mercury"].takes_key and REGISTRY["openai"].takes_key and not REGISTRY["replay"].takes_key
    kinds = {"own": gr.Number, "choices": gr.Dropdown, "min": gr.Slider}  # own: left empty, the model's own value
    for kind in REGISTRY.values():
        for name, spec in kind.settings.items():
            widget = setting_component(spec, name)
            expected = gr.Checkbox if isinstance(spec["default"], bool) else next(
                (v for k, v in kinds.items() if k in spec), gr.Textbox)
            assert isinstance(widget, expected), (kind.prefix, name)
    with gr.Blocks():
        from app.ui.sources_ui import side_controls

        c: SideControls = side_controls("left", "mercury")
    defaults = [s["default"] for _, _, s, _ in c.settings]
    spec, settings, secrets = c.read(["openai", " gpt-x ", "sk-typed"] + defaults)
    openai = REGISTRY["openai"].settings
    assert spec == "openai:gpt-x" and secrets == {"api_key": "sk-typed"}
    assert settings == {name: entry["default"] for name, entry in openai.items()}  # raw values, the chosen kind's only
    changed = [0.5 if (p, n) == ("openai", "temperature") else v for (p, n, _, _), v in zip(c.settings, defaults)]
    spec, settings, secrets = c.read(["openai", "gpt-x", ""] + changed)
    assert settings["temperature"] == 0.5 and secrets == {}
    spec, settings, secrets = c.read(["local-ar", "ignored", "sk-typed"] + changed)
    assert spec == "local-ar" and secrets == {} and set(settings) == set(REGISTRY["local-ar"].settings)


def captioned(path: Path, caption: str, prompt: str = "Once upon a time") -> Path:
    """A small recording with a caption in its header, as the bundled examples have."""
    header = make_header(prompt, {"left": {"name": "local-diffusion", "settings": {}},
                                  "right": {"name": "local-ar", "settings": {}}})
    header["caption"] = caption
    w = RecordingWriter(path, header)
    for i in range(4):
        w.frame("left", Frame(t=0.1 * (i + 1), step=i, tokens=["a ", "b ", "c ", "d"], masked=[j > i for j in range(4)],
                              final=i == 3))
        w.frame("right", Frame(t=0.15 * (i + 1), step=i, tokens=["a ", "b ", "c ", "d"][: i + 1], final=i == 3))
    w.end("left", "done")
    w.end("right", "done")
    w.close()
    return path


LIB_ROWS = "#library-table [role=row].virtual-row"


def library_names(page: Any) -> list[str]:
    """The Name column of the library table, top to bottom."""
    return page.eval_on_selector_all(f"{LIB_ROWS} [role=gridcell][data-col='0']",
                                     "cells => cells.map(c => c.innerText.trim())")


def wait_rows(page: Any, n: int) -> None:
    page.wait_for_function(f"document.querySelectorAll('{LIB_ROWS}').length === {n}")


def wait_message(page: Any, words: str) -> str:
    page.wait_for_function("w => (document.querySelector('#library-status textarea').value || '').includes(w)",
                           arg=words)
    return page.input_value("#library-status textarea")


def choose_recording(page: Any, name: str) -> None:
    """Clicks the library row of a recording; the picker follows."""
    page.locator(f"{LIB_ROWS} [role=gridcell][data-col='0']", has_text=name).click()
    page.wait_for_function("n => document.querySelector('#library-pick input').value.startsWith(n)", arg=name)


@pytest.mark.browser
def test_the_page_opens_with_the_first_example_ready_to_play(open_tab: Any, examples: Path, recordings: Path) -> None:
    captioned(examples / "b-second.jsonl", "Second example")
    captioned(examples / "a-first.jsonl", "Confidence order against the AR twin: " + HOSTILE[0], prompt=HOSTILE[1])
    captioned(recordings / "mine.jsonl", "Mine")
    page = open_tab()
    page.wait_for_selector(f"{ROOT}[data-mode=replay][data-status=done]")
    assert page.get_attribute(ROOT, "data-step") == "0" and page.get_attribute(ROOT, "data-playing") == "false"
    assert page.text_content("#player .cv-caption-line") == "Confidence order against the AR twin: " + HOSTILE[0]
    assert "Press Play" in page.text_content("#player .cv-status")
    wait_rows(page, 3)
    assert library_names(page) == ["mine.jsonl", "a-first.jsonl", "b-second.jsonl"]
    row = page.locator(LIB_ROWS, has_text="a-first.jsonl").inner_text()
    assert "example" in row and "local-diffusion vs local-ar" in row and "0.6 s" in row and HOSTILE[0] in row
    assert page.input_value("#library-pick input").startswith("a-first.jsonl")
    page.keyboard.press("Space")  # the shortcut plays it straight away
    page.wait_for_selector(f"{ROOT}[data-playing=true]")
    page.wait_for_selector(f"{ROOT}[data-playing=false][data-step='6']")
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert page.evaluate("document.querySelectorAll('#player img, #library-table img').length") == 0


@pytest.fixture
def open_tab(browser: Any, server_url: str) -> Iterator[Any]:
    """Opens the page (after a test has put recordings in place: the library is read when the page opens);
    every tab it opened must end without console errors."""
    with contextlib.ExitStack() as tabs:
        yield lambda query="", scheme="light": tabs.enter_context(
            browser_tab(browser, server_url + query, color_scheme=scheme))


@pytest.mark.browser
def test_the_library_loads_renames_deletes_uploads_and_downloads(open_tab: Any, recordings: Path, examples: Path,
                                                                 tmp_path: Path) -> None:
    captioned(recordings / "mine.jsonl", "Mine")
    captioned(examples / "ex.jsonl", "An example")
    page = open_tab()
    page.wait_for_selector(f"{ROOT}[data-mode=replay]")  # the example opened
    wait_rows(page, 2)
    choose_recording(page, "mine.jsonl")
    assert page.input_value("#library-name input") == "mine.jsonl"
    page.click("#library-load")
    page.wait_for_function(f"document.querySelector('{ROOT} .cv-caption-line').textContent === 'Mine'")
    assert "Loaded mine.jsonl" in wait_message(page, "Loaded")

    page.locator("#library-name input").fill("../escaped")
    page.click("#library-rename")
    assert "cannot contain a path" in wait_message(page, "path")
    page.locator("#library-name input").fill("talk")
    page.click("#library-rename")
    wait_message(page, "Renamed")
    assert sorted(p.name for p in recordings.iterdir()) == ["talk.jsonl"]
    page.wait_for_function("document.querySelector('#library-pick input').value.startsWith('talk.jsonl')")

    choose_recording(page, "ex.jsonl")  # an example: Rename and Delete are disabled, and the note says why
    page.wait_for_selector("#library-delete:disabled")
    assert page.is_disabled("#library-rename") and page.is_visible("#library-read-only")
    assert page.text_content("#library-read-only").strip() == library.READ_ONLY
    asked = page.evaluate("() => { const ask = window.confirm; window.confirm = () => { throw new Error('asked'); };"
                          f" try {{ return ({CONFIRM_DELETE_JS})('owner', 'example/ex.jsonl'); }}"
                          " finally { window.confirm = ask; } }")
    assert asked == ["owner", "example/ex.jsonl"]  # never "cannot be undone" for what cannot be done
    assert (examples / "ex.jsonl").is_file()

    choose_recording(page, "talk.jsonl")
    page.wait_for_selector("#library-delete:enabled")
    assert page.is_enabled("#library-rename") and not page.is_visible("#library-read-only")
    with page.expect_download() as download:
        page.click("#library-download")
        page.wait_for_selector("#download-file a[download]")
        page.click("#download-file a[download]")
    assert Path(download.value.path()).read_bytes() == (recordings / "talk.jsonl").read_bytes()

    page.once("dialog", lambda d: d.dismiss())
    page.click("#library-delete")
    wait_message(page, "Nothing deleted")
    assert (recordings / "talk.jsonl").is_file()
    page.once("dialog", lambda d: d.accept())
    page.click("#library-delete")
    wait_message(page, "Deleted talk.jsonl")
    assert list(recordings.iterdir()) == []
    wait_rows(page, 1)

    junk = tmp_path / "junk.jsonl"
    junk.write_text('{"type": "header", "schema": 99, "prompt": "", "sources": {}}\n')
    page.set_input_files("#load-file input[type=file]", str(junk))
    assert "schema 99" in wait_message(page, "schema 99")
    assert list(recordings.iterdir()) == []

    cut = captioned(tmp_path / "cut.jsonl", "Cut short")
    lines = cut.read_text().splitlines(keepends=True)
    cut.write_text("".join(lines[:5]) + lines[5][:20])
    page.set_input_files("#load-file input[type=file]", str(cut))
    wait_message(page, "Added cut.jsonl")
    page.wait_for_function(f"document.querySelector('{ROOT} .cv-caption-line').textContent === 'Cut short'")
    warning = page.text_content("#player .cv-warning")
    assert page.is_visible("#player .cv-warning") and "Line 6" in warning and "4 frames" in warning
    assert [p.name for p in recordings.iterdir()] == ["cut.jsonl"]
    assert page.get_attribute(ROOT, "data-frames") == "4"


@pytest.mark.browser
def test_presenter_mode_on_the_page_hides_the_controls_and_shortcuts_skip_text_fields(
        open_tab: Any, examples: Path) -> None:
    captioned(examples / "ex.jsonl", "Presenter example")
    for scheme in ("light", "dark"):
        page = open_tab("?presenter=1", scheme)
        page.wait_for_selector(f"{ROOT}[data-mode=replay][data-presenter=true]")
        assert page.evaluate("document.body.classList.contains('cv-presenting')")
        for hidden in ("#controls", "#library-area", "#converge-title"):
            assert not page.is_visible(hidden), hidden
        page.keyboard.press("End")
        page.wait_for_selector(f"{ROOT}[data-step='6']")  # 7 distinct frame times
        page.screenshot(path=str(SHOTS / f"converge-page-presenter-{scheme}.png"))
        page.keyboard.press("?")
        page.wait_for_selector(f"{ROOT}[data-help=open]")
        page.keyboard.press("Escape")
        page.keyboard.press("p")
        page.wait_for_selector(f"{ROOT}[data-presenter=false]")
        assert page.is_visible("#controls") and not page.evaluate("document.body.classList.contains('cv-presenting')")
        page.locator("#prompt textarea").fill("")
        page.locator("#prompt textarea").press_sequentially("Why? p 1")  # typing is not a shortcut
        assert page.input_value("#prompt textarea") == "Why? p 1"
        assert page.get_attribute(ROOT, "data-help") == "closed" and \
            page.get_attribute(ROOT, "data-presenter") == "false"
        assert page.get_attribute(ROOT, "data-speed") == "1"


@pytest.mark.browser
def test_export_buttons_give_a_self_contained_page_a_csv_and_a_gif(open_tab: Any, examples: Path,
                                                                    tmp_path: Path) -> None:
    captioned(examples / "ex.jsonl", "Export me")
    page = open_tab()
    page.wait_for_selector(f"{ROOT}[data-mode=replay]")
    page.click("#export-box button.label-wrap")
    for fmt, magic in (("html", b"<!doctype html>"), ("csv", b"side,source,frame,step,t,passes"), ("gif", b"GIF89a")):
        page.click(f"#export-{fmt}")
        wait_message(page, f"ex.{fmt} is ready")
        with page.expect_download() as download:
            page.click("#download-file a[download]")
        data = Path(download.value.path()).read_bytes()
        assert data.startswith(magic), fmt
    assert b"https:" not in data and b"Export me" not in data  # the last one is the GIF: no text, no links


@pytest.mark.browser
def test_an_html_export_from_the_page_opens_on_the_players_clock(open_tab: Any, examples: Path) -> None:
    captioned(examples / "ex.jsonl", "Export me")
    page = open_tab()
    page.wait_for_selector(f"{ROOT}[data-mode=replay]")
    page.click(f"{ROOT} .cv-clock-btn")
    page.wait_for_selector(f"{ROOT}[data-view=passes]")
    page.click("#export-box button.label-wrap")
    page.click("#export-html")
    wait_message(page, "ex.html is ready")
    with page.expect_download() as download:
        page.click("#download-file a[download]")
    assert '"clock":"passes"' in Path(download.value.path()).read_text(encoding="utf-8")


@pytest.mark.browser
def test_a_video_export_reports_its_frames_while_it_renders(open_tab: Any, examples: Path) -> None:
    header = make_header("Once", {"left": {"name": "local-diffusion", "settings": {}},
                                  "right": {"name": "local-ar", "settings": {}}})
    w = RecordingWriter(examples / "long.jsonl", header)
    for i in range(61):  # a 30-second race: a GIF of 900 frames, seconds of rendering to watch
        for side in SIDES:
            w.frame(side, Frame(t=0.5 * i, step=i, tokens=["a "] * (i + 1), nfe=i, final=i == 60))
    w.close()
    page = open_tab()
    page.wait_for_selector(f"{ROOT}[data-mode=replay]")
    page.click("#export-box button.label-wrap")
    page.click("#export-gif")
    wait_message(page, "Making long.gif")  # the status reports the frames while it renders
    wait_message(page, "long.gif is ready")


def test_the_csv_export_is_the_recordings_frames_table(tmp_path: Path) -> None:
    import pandas as pd

    from app.analysis.tables import frames_table
    from app.ui.export_ui import export_current
    from tests.test_tables import fixture_recording

    path = fixture_recording(tmp_path / "run.jsonl")
    *_, (out, message) = drain(export_current("csv")(str(path), "time"))
    assert message == "run.csv is ready: use the download link."
    pd.testing.assert_frame_equal(pd.read_csv(out, dtype={"passes": "Int64"}), frames_table(path))


def test_an_export_with_nothing_in_the_player_says_what_to_do() -> None:
    from app.ui.export_ui import export_current

    for fmt in ("html", "gif", "mp4", "csv"):
        [(_, message)] = drain(export_current(fmt)(None))
        assert "Load a recording or run a race first" in message


def test_wire_rows_carry_the_inspectors_confidences_and_candidates(tmp_path: Path) -> None:
    from app.cli.record import record

    out = tmp_path / "twins.jsonl"
    record("Once upon a time", "local-diffusion", "local-ar", out,
           settings={"left": {"gen_length": 32}, "right": {"gen_length": 32}})
    payload = load_payload(out)
    for side in SIDES:
        rows = expand_rows(payload["sides"][side]["rows"])
        assert all(len(r["cf"]) == len(r["tok"]) and all(0 <= c <= 100 for c in r["cf"]) for r in rows[1:])
        picked = [(pos, c) for r in rows for pos, c in (r["cd"] or [])]
        assert picked and all(1 <= len(c) <= 3 and c == sorted(c, key=lambda x: -x[1]) for _, c in picked)
    typed = payload["sides"]["right"]["rows"]  # a typing side sends one new confidence a token, not the whole list
    assert all(len(w["cf"]) == 1 and w["cfk"] == w["n"] - 1 for w in typed[2:])
    # the diffusion side names a candidate for every position it commits, the AR side one per token
    left = expand_rows(payload["sides"]["left"]["rows"])
    assert {pos for r in left for pos, _ in (r["cd"] or [])} == set(range(len(left[-1]["tok"])))


def test_finished_sessions_are_forgotten_oldest_first_beyond_the_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    from app.ui import sessions

    monkeypatch.setattr(sessions, "_sessions", {})
    monkeypatch.setattr(sessions, "MAX_SESSIONS", 3)
    running = {"race": object(), "path": "p", "run": "r"}
    sessions.remember("busy", running)
    for i in range(6):
        sessions.remember(f"s{i}", {"race": None, "path": "p", "run": "r"})
    assert list(sessions._sessions) == ["busy", "s3", "s4", "s5"]  # a running race is never dropped
