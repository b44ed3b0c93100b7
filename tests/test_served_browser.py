"""A served page hands the twins' race to the visitor's browser (issue 42 item 6): the page served in its own process
under the served policy with the static site's folder, as `python -m app --host` starts it; Chromium races the twins
on it with "Run on: your browser", the answer equals the Python twins', the server runs no race (the race joins no
queue; its frames come to the server once it has ended, to be saved in the visitor's library), Stop ends it keeping
its frames, the Board area's board runs in the browser as Python's does with no race on the server, and nothing but
the site's own files is served under its route. Skipped with the reason where Chromium,
npm (onnxruntime-web) or onnx is missing."""

from __future__ import annotations

import http.client
import os
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Iterator

import pytest

from app.bench.twins import EVAL_PROMPTS
from app.trace.reading import read_recording
from app.ui.board_tab import BROWSER_SAYS
from app.ui.browser_race import RAN, RAN_IN
from app.ui.site_files import SITE_ROUTE
from tests.fixtures import needs_twins
from tests.pages import browser_tab
from tests.served import served_process
from tests.test_site import python_answers, python_board

pytestmark = needs_twins
PLAYER = "document.querySelector('#player .cv-player').convergePlayer.state"
# the page has opened (its example loaded): asked without failing while the player is not yet on the page
OPENED = ("() => { const p = document.querySelector('#player .cv-player');"
          " return !!(p && p.convergePlayer && p.convergePlayer.state.run); }")
# the page's Stop, clicked as the race's third AR frame is drawn (the race yields to the page after each frame)
STOP_AT_THIRD = """() => { const player = document.querySelector('#player .cv-player').convergePlayer;
    const update = player.update.bind(player); let frames = 0;
    player.update = (p) => { update(p); const right = p.sides && p.sides.right;
        if (right && right.status === 'running' && right.rows.length && ++frames === 3) {
            document.getElementById('stop').click(); } }; }"""
SAVED = "() => (document.querySelector('#library-status textarea')?.value || '').startsWith('Saved the race run')"


@pytest.fixture(scope="module")
def served(site: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """(url, recordings folder) of the whole app served under the served policy with the site's folder."""
    root = tmp_path_factory.mktemp("served-browser")
    with served_process(root / "log.txt", root / "recordings", site=site) as (url, _):
        yield url, root / "recordings"


def raw_get(url: str, path: str, method: str = "GET") -> tuple[int, bytes]:
    """The status and body of one request for `path` sent as written (no client normalises its dots)."""
    parts = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    try:
        conn.putrequest(method, path, skip_accept_encoding=True)
        conn.putheader("Content-Length", "0")
        conn.endheaders()
        reply = conn.getresponse()
        return reply.status, reply.read()
    finally:
        conn.close()


def recordings_in(folder: Path) -> list[Path]:
    """Every recording the server has written under `folder`."""
    return sorted(folder.rglob("*.jsonl")) if folder.is_dir() else []


def test_the_served_page_races_the_twins_in_the_browser_and_the_server_runs_none(served: tuple[str, Path],
                                                                                 browser: Any) -> None:
    url, recordings = served
    prompt = EVAL_PROMPTS[0]
    before = recordings_in(recordings)
    with browser_tab(browser, url, timeout_ms=180_000) as tab:
        tab.wait_for_selector("#run-browser", state="visible")
        assert tab.is_checked("#run-on input[value='your browser']")
        assert not tab.is_visible("#run")  # the server's Run is the other choice
        tab.wait_for_function(OPENED)  # the page has opened (its example loaded)
        sent: list[tuple[str, str]] = []
        tab_requests: list[Any] = []
        tab.on("request", lambda r: (sent.append((r.method, r.url)), tab_requests.append(r)))
        tab.fill("#prompt textarea", prompt)
        tab.click("#run-browser")
        tab.wait_for_function(f"() => {PLAYER}.caption.startsWith('Ran in your browser')")
        shown = tab.evaluate(f"""() => {{ const s = {PLAYER};
            return [s.prompt, s.sides.left.metrics.nfe, s.sides.right.metrics.nfe, s.sides.left.status,
                    s.caption]; }}""")
        tab.wait_for_function(SAVED)
        joined = [r for r in tab_requests if "/queue/join" in r.url]
        again = tab.evaluate("(p) => window.converge.race(p, {length: 128}).then((r) => ["
                             "[r.left.ids, r.left.nfe], [r.right.ids, r.right.nfe]])", prompt)
    want = python_answers(prompt)
    assert shown == [prompt, want["left"][1], want["right"][1], "done", RAN]
    assert [tuple(again[0]), tuple(again[1])] == [want["left"], want["right"]]
    # the race ran in the browser: the one queue join is the save, carrying the packed race
    assert len(joined) == 1 and len(joined[0].post_data or "") > 1000
    assert {u.split(SITE_ROUTE)[1] for m, u in sent if SITE_ROUTE in u and m == "GET"} >= {
        "race.js", "twins.json", "diffusion.onnx", "ar.onnx", "ort/ort-wasm-simd-threaded.wasm"}
    saved = [p for p in recordings_in(recordings) if p not in before]  # then its frames were saved, as they ran
    assert len(saved) == 1
    rec = read_recording(saved[0])
    assert rec.header["ran_in"] == RAN_IN and rec.header["prompt"] == prompt
    assert [rec.frames[k][-1].nfe for k in ("left", "right")] == [want["left"][1], want["right"][1]]
    assert [rec.ends[k]["status"] for k in ("left", "right")] == ["done", "done"]


def test_the_served_pages_board_runs_in_the_browser_as_pythons_and_the_server_runs_none(served: tuple[str, Path],
                                                                                        browser: Any) -> None:
    """The Board area's board in the visitor's browser (?openings=2, as the site's): each opening races in the page's
    player, its table is the page's board's rows (passes and answer tokens exactly, the referee's perplexity within
    what the graph's logits allow), the line under it quotes the table's figures; the server joins no queue for it
    (no race, no save) and writes no recording, as the area's sentence says."""
    from app.board.notes import cells
    from app.board.prompts import prompt_set
    from tests.test_board_page import expected_note

    url, recordings = served
    before = recordings_in(recordings)
    with browser_tab(browser, url + "?openings=2", timeout_ms=240_000) as tab:
        tab.wait_for_function(OPENED)
        sent: list[Any] = []
        tab.on("request", lambda r: sent.append(r))
        tab.get_by_text("Board: the twins over many prompts").click()
        says = tab.inner_text("#board-browser-says")
        tab.click("#board-browser-run")
        tab.wait_for_function("() => document.getElementById('board-browser-status').textContent.startsWith('Done')"
                              " && !document.getElementById('board-browser-run').disabled")
        heads = tab.eval_on_selector_all("#board-browser-table th", "cells => cells.map((c) => c.textContent)")
        shown = tab.eval_on_selector_all("#board-browser-table tbody tr", """rows => rows.map((r) =>
            [...r.querySelectorAll('td')].map((c) => c.textContent))""")
        line = tab.inner_text("#board-browser-note")
        raced = tab.evaluate(f"() => {PLAYER}.prompt")
    assert says == BROWSER_SAYS
    assert raced == prompt_set("stories")[1].text  # the last opening's race is in the page's player
    assert [r.url for r in sent if "/queue/join" in r.url] == []  # no race ran on the server, nothing was sent to keep
    assert recordings_in(recordings) == before
    assert {r.url.split(SITE_ROUTE)[1] for r in sent if SITE_ROUTE in r.url} >= {"race.js", "referee.onnx"}
    want = [cells(r) for r in python_board(2)]
    assert heads == ["opening", "side", "passes", "answer tokens", "tokens a pass", "seconds", "referee perplexity"]
    assert [r[:4] for r in shown] == [[str(v) for v in w[:4]] for w in want]  # opening, side, passes, answer tokens
    for got, made in zip(shown, want):
        assert float(got[6]) == pytest.approx(made[6], rel=1e-3, abs=2e-3), (got, made)
    assert line.startswith("What to notice: over 2 openings")
    for figure in expected_note([dict(zip(heads, r)) for r in shown]):
        assert figure in line


def test_stop_ends_the_browser_race_keeping_its_frames_and_saves_them(served: tuple[str, Path], browser: Any) -> None:
    url, recordings = served
    before = recordings_in(recordings)
    with browser_tab(browser, url, timeout_ms=180_000) as tab:
        tab.wait_for_selector("#run-browser", state="visible")
        tab.wait_for_function(OPENED)
        tab.fill("#prompt textarea", EVAL_PROMPTS[1])
        tab.evaluate(STOP_AT_THIRD)
        tab.click("#run-browser")
        tab.wait_for_function(f"() => {PLAYER}.sides.right.status === 'stopped'")
        shown = tab.evaluate(f"() => ['left', 'right'].map((k) => {PLAYER}.sides[k].rows.length)")
        tab.wait_for_function(f"(want) => {PLAYER}.caption === want", arg=RAN)  # a stopped run is saved, it says
        tab.wait_for_function("() => [...document.querySelectorAll('#player .cv-side .cv-fig-label')]"
                              ".every((n) => !n.textContent.includes('words and symbols')) && [...document"
                              ".querySelectorAll('#player .cv-side .cv-fig-label')].some((n) => n.textContent"
                              ".includes('tokenizer pieces in place'))")  # the unit it raced in, stopped or not
        units = tab.evaluate(f"() => ['left', 'right'].map((k) => {PLAYER}.sides[k].metrics.token_unit)")
        tab.wait_for_function(SAVED)
    assert all(unit.startswith("tokenizer pieces") for unit in units)
    saved = [p for p in recordings_in(recordings) if p not in before]
    rec = read_recording(saved[0])
    assert [len(rec.frames[k]) for k in ("left", "right")] == shown and shown[1] >= 3  # every frame drawn is kept
    assert rec.ends["right"]["status"] == "stopped" and rec.frames["right"][-1].nfe < 128


def test_a_settings_change_the_browser_cannot_race_is_named_and_the_server_choice_returns_run(
        served: tuple[str, Path], browser: Any) -> None:
    url, _ = served
    with browser_tab(browser, url, timeout_ms=120_000) as tab:
        tab.wait_for_selector("#run-browser", state="visible")
        tab.wait_for_function(OPENED)
        said = tab.evaluate("""() => window.ConvergeBrowserRace.options({base: '', inputs: [
            {side: 'left', name: 'gen_length', label: 'Answer length', default: 128, own: false},
            {side: 'left', name: 'steps', label: 'Steps', default: 0, own: false},
            {side: 'right', name: 'gen_length', label: 'Max answer length', default: 128, own: false}]},
            ['A fox', '', 'local-diffusion', 'local-ar', 64, 32, 64])""")
        assert "these differ: Steps" in said
        chosen = tab.evaluate("""() => window.ConvergeBrowserRace.options({base: '', inputs: [
            {side: 'left', name: 'gen_length', label: 'Answer length', default: 128, own: false, offered: true},
            {side: 'left', name: 'steps', label: 'Steps', default: 0, own: false, offered: true},
            {side: 'left', name: 'scoring', label: 'Scoring', default: 'entropy', own: false, offered: true},
            {side: 'left', name: 'no_repeat', label: 'Stutter guard', default: true, own: false, offered: true},
            {side: 'right', name: 'gen_length', label: 'Max answer length', default: 128, own: false, offered: true},
            {side: 'right', name: 'stop_at_eos', label: 'Stop', default: true, own: false, offered: true}]},
            ['A fox', '', 'local-diffusion', 'local-ar', 64, 32, 'margin', false, 64, false])""")
        assert chosen == {"length": 64, "steps": 32, "scoring": "margin", "no_repeat": False,
                          "ar": {"stop_at_eos": False}}
        tab.click("#run-on label:has-text('this server')")
        tab.wait_for_selector("#run", state="visible")
        assert not tab.is_visible("#run-browser")


def test_the_server_hears_of_a_browser_race_only_once_the_browser_races_it(served: tuple[str, Path],
                                                                          browser: Any) -> None:
    """Settings the browser refuses (pins) are named in the player and nothing is sent, so a race the session runs
    on the server goes on; settings it takes send the one call that stops it (`began`), then the save."""
    url, _ = served
    with browser_tab(browser, url, timeout_ms=180_000) as tab:
        tab.wait_for_selector("#run-browser", state="visible")
        tab.wait_for_function(OPENED)
        tab.fill("#prompt textarea", EVAL_PROMPTS[2])
        tab.click("#pins-box button.label-wrap")
        tab.fill("#pins textarea", "3:fox")
        posts: list[str] = []
        tab.on("request", lambda r: posts.append(r.url) if r.method == "POST" else None)
        tab.click("#run-browser")
        tab.wait_for_function(f"() => {PLAYER}.notice.startsWith('Pinned text runs on the server')")
        refused = list(posts)
        tab.fill("#pins textarea", "")
        tab.click("#run-browser")
        tab.wait_for_function(f"() => {PLAYER}.caption.startsWith('Ran in your browser')")
        tab.wait_for_function(SAVED)
    assert refused == []
    saved = next(i for i, u in enumerate(posts) if "/queue/join" in u)  # the save (then the library's own calls)
    assert [u.rsplit("/", 2)[-2:] for u in posts[:saved]] == [["run", "predict"]]  # `began`, before the race


# keeps each side's ids and passes of the last browser race where a test can read them (window.lastRace), by wrapping
# window.converge.race as race.js sets it
KEEP_LAST_RACE = """(() => { let kept;
  Object.defineProperty(window, "converge", {configurable: true, get: () => kept, set: (v) => {
    const race = v.race;
    v.race = (p, o) => race(p, o).then((r) => {
      window.lastRace = {left: [r.left.ids, r.left.nfe], right: [r.right.ids, r.right.nfe]};
      return r;
    });
    kept = v;
  }});
})()"""


def test_the_served_pages_browser_race_honours_both_twins_settings(served: tuple[str, Path], browser: Any) -> None:
    """A setting changed on each side (neither twin stopping at end-of-text) races in the browser as the Python twins
    race it, with no server race; the saved run's header records the settings it ran with."""
    url, recordings = served
    prompt = EVAL_PROMPTS[3]  # both twins end it early at their defaults
    before = recordings_in(recordings)
    with browser_tab(browser, url, timeout_ms=180_000) as tab:
        tab.add_init_script(KEEP_LAST_RACE)
        tab.reload()
        tab.wait_for_selector("#run-browser", state="visible")
        tab.wait_for_function(OPENED)
        for side, name in (("left", "local-diffusion-stop_at_eos"), ("right", "local-ar-stop_at_eos")):
            tab.click(f"#{side}-settings > button")
            box = tab.locator(f"#{side}-{name} input[type=checkbox]")
            box.uncheck()
            assert not box.is_checked()
        tab.fill("#prompt textarea", prompt)
        tab.click("#run-browser")
        tab.wait_for_function(f"() => {PLAYER}.caption.startsWith('Ran in your browser')")
        raced = tab.evaluate("() => window.lastRace")
        tab.wait_for_function(SAVED)
    want = python_answers(prompt, ar={"stop_at_eos": False}, stop_at_eos=False)
    assert [tuple(raced["left"]), tuple(raced["right"])] == [want["left"], want["right"]]
    assert want["right"][1] == 128 and want != python_answers(prompt)  # the settings changed the race
    saved = [read_recording(p) for p in recordings_in(recordings) if p not in before]
    assert [[r.header["sources"][k]["settings"]["stop_at_eos"] for k in ("left", "right")] for r in saved] == [
        [False, False]]


def test_nothing_outside_the_sites_files_is_served(served: tuple[str, Path], site: Path) -> None:
    url, _ = served
    status, body = raw_get(url, SITE_ROUTE + "race.js")
    assert status == 200 and body == (site / "race.js").read_bytes()
    for path in ("../app/__main__.py", "..%2f..%2fapp%2f__main__.py", "%2e%2e/%2e%2e/etc/passwd", "/etc/passwd",
                 "ort/../../../../etc/passwd", "ort/", "nope.js", "twins.json/x", "ort//ort.wasm.min.js"):
        status, body = raw_get(url, SITE_ROUTE + path)
        assert status == 404 and b"root:" not in body and b"import" not in body, path
    assert raw_get(url, SITE_ROUTE + "race.js", "POST")[0] in (404, 405)  # no POST route is added
    assert raw_get(url, SITE_ROUTE + "race.js", "PUT")[0] in (404, 405)  # the door or the site's files refuse it


def test_the_served_bench_measures_both_ways(site: Path) -> None:
    """`python -m app bench --only served` on 2 visitors, once: server CPU seconds and the slowest wait both ways."""
    from app.bench.served import bench, cpu_seconds

    assert cpu_seconds(os.getpid()) > 0
    with ThreadPoolExecutor(1) as pool:  # its own thread: the browser fixture may hold playwright in this one
        out = pool.submit(bench, visitors=2, runs=1).result()
    assert "skipped" not in out, out
    run = out["runs"][0]
    for way in ("server", "browser"):
        assert run[way]["server_cpu_s"] >= 0 and run[way]["slowest_wait_s"] > 0
        assert out[f"worst_{way}"]["slowest_wait_s"] == run[way]["slowest_wait_s"]
    assert run["browser"]["mb_per_visitor"] > 20 and run["browser"]["chromium"]["race_s"] > 0
    assert run["browser"]["saved_runs"] == 2 + 2  # each visitor's race, and the Chromium visitor's two


def test_the_presenters_picker_runs_the_race_in_the_browser(served: tuple[str, Path], browser: Any) -> None:
    url, recordings = served
    before = recordings_in(recordings)
    root = "#player .cv-player"
    with browser_tab(browser, url + "?presenter=1", timeout_ms=180_000) as tab:
        tab.wait_for_selector(f"{root}[data-mode=replay][data-presenter=true]")
        tab.click(f"{root} .cv-pick-btn")
        tab.locator(f"{root} .cv-picker-prompt").fill("Tom had a big red ball. One day,")
        tab.click(f"{root} .cv-picker-run")
        tab.wait_for_function(f"() => {PLAYER}.caption.startsWith('Ran in your browser')")
        assert tab.text_content(f"{root} .cv-prompt-text") == "Tom had a big red ball. One day,"
        assert tab.get_attribute(root, "data-presenter") == "true"
        tab.wait_for_function(SAVED)
    saved = [p for p in recordings_in(recordings) if p not in before]
    assert [read_recording(p).header.get("ran_in") for p in saved] == [RAN_IN]  # the browser's run, not the server's


@pytest.mark.browser
def test_a_finished_browser_race_stays_finished_until_play_is_pressed(served: tuple[str, Path], browser: Any) -> None:
    """Issue 50 item 6: the race in the visitor's browser was watched as it ran, so when it ends the player stays at
    its last frame (it used to go back to frame 1 and replay at real time); Play replays it."""
    url, _ = served
    root = "#player .cv-player"
    held = f"""() => {{ const s = {PLAYER}, root = document.querySelector('{root}');
        return [s.playing, s.cursor, root.getAttribute('data-step') === root.querySelector('.cv-range').max]; }}"""
    with browser_tab(browser, url, timeout_ms=180_000) as tab:
        tab.wait_for_selector("#run-browser", state="visible")
        tab.wait_for_function(OPENED)
        tab.fill("#prompt textarea", EVAL_PROMPTS[2])
        tab.click("#run-browser")
        tab.wait_for_selector(f"{root}[data-mode=live][data-status=done]")  # painted after the race's last update
        assert tab.evaluate(held) == [False, None, True]
        tab.wait_for_function(SAVED)  # saving it leaves the player alone
        assert tab.evaluate(held) == [False, None, True]
        tab.click(f"{root} .cv-play")
        tab.wait_for_selector(f"{root}[data-playing=true]")  # Play replays it


def test_the_served_pages_browser_race_starts_from_the_draft_typed(served: tuple[str, Path], browser: Any) -> None:
    """Issue 53 item 5: "Run on: your browser" reads the page's "Start from a draft" box: a draft typed races from it
    in the browser, both twins as the Python twins race from it (the same revision letters, the same panel lines),
    and the saved run keeps the draft; a draft the server reads (the last race's side) is named, not raced."""
    import threading

    from app.engine.draft import Revision
    from app.sources.local import make_local_ar, make_local_diffusion
    from app.ui.browser_race import SERVER_DRAFT
    from app.ui.draft_ui import LAST, TYPED
    from app.view.side import draft_entry
    from tests.test_revise_page import fill_draft

    url, recordings = served
    prompt, draft = EVAL_PROMPTS[4], " Ben had a big red kite. He ran with it to the hill."
    before = recordings_in(recordings)
    with browser_tab(browser, url, timeout_ms=180_000) as tab:
        tab.wait_for_selector("#run-browser", state="visible")
        tab.wait_for_function(OPENED)
        tab.fill("#prompt textarea", prompt)
        fill_draft(tab, LAST)
        tab.click("#run-browser")
        tab.wait_for_function(f"(want) => {PLAYER}.notice === want", arg=SERVER_DRAFT)
        fill_draft(tab, TYPED, draft, share=30, seed=5)
        tab.click("#run-browser")
        tab.wait_for_function(f"() => {PLAYER}.caption.startsWith('Ran in your browser')")
        lines = tab.evaluate(f"() => ['left', 'right'].map((k) => ({PLAYER}.sides[k].draft || {{}}).line)")
        tab.wait_for_function(SAVED)
    saved = [read_recording(p) for p in recordings_in(recordings) if p not in before]
    assert len(saved) == 1 and saved[0].header["draft"] == {"text": draft, "share": 0.3, "where": "random", "seed": 5}
    for k, (side, make) in enumerate((("left", make_local_diffusion), ("right", make_local_ar))):
        source = make()
        source.revise(Revision(draft, 0.3, seed=5), prompt)
        want = [f.revision for f in source.stream(prompt, threading.Event())]
        assert [f.revision for f in saved[0].frames[side]] == want, side
        assert lines[k] == draft_entry({"draft": source.draft_json()})["line"], side  # type: ignore[index]
        assert saved[0].header["sources"][side]["draft"]["renoised"] == list(source.plan.renoised)
