"""The static site (`python -m app site`): the twins race in Chromium, from a folder served on loopback, and each side's
answer equals the Python sampler's token for token with the same passes (`window.converge.race`); the page asks no
other host for anything. Skipped with the reason where Chromium, npm (onnxruntime-web) or onnx is missing."""

from __future__ import annotations

import contextlib
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from app.bench.browser import serve
from app.bench.twins import EVAL_PROMPTS
from app.site.build import NO_BOARD
from tests.fixtures import needs_twins
from tests.pages import browser_tab

pytestmark = needs_twins


def python_answers(prompt: str, ar: dict[str, Any] | None = None, **settings: Any) -> dict[str, tuple[list[int], int]]:
    """Each side's answer ids and passes as `python -m app generate --source local-diffusion` / `local-ar` makes
    them: the sources' own settings (`settings`: the diffusion side's, as the page gives them; `ar`: the AR side's,
    its length the diffusion side's), prompt encoding and sampler."""
    import threading as th

    from app.engine import autoregressive, diffusion
    from app.sources.local import make_local_ar, make_local_diffusion

    out = {}
    for side, make in (("left", make_local_diffusion), ("right", make_local_ar)):
        src = make(**settings) if side == "left" else make(gen_length=settings.get("gen_length", 128), **(ar or {}))
        ids = src.encode(prompt)
        if side == "left":
            last = list(diffusion.generate(src.model, ids, src.opts, th.Event()))[-1]
            n = diffusion.answer_length(last.ids, last.masked, src.model.eos_id)
            out[side] = ([int(i) for i in last.ids[:n]], last.nfe)
        else:
            last = list(autoregressive.generate(src.model, ids, src.opts, th.Event()))[-1]
            out[side] = (list(last.ids), last.nfe)
    return out


def python_candidates(prompt: str, ar: dict[str, Any] | None = None, **settings: Any) -> dict[str, list[Any]]:
    """Each side's frames' candidates as the sources' frames carry them (app/sources/local.py), as JSON has them."""
    import json
    import threading as th

    from app.sources.local import make_local_ar, make_local_diffusion

    left = make_local_diffusion(**settings)
    right = make_local_ar(gen_length=settings.get("gen_length", 128), **(ar or {}))
    return {side: json.loads(json.dumps([f.candidates for f in src.stream(prompt, th.Event())]))
            for side, src in (("left", left), ("right", right))}


def test_the_site_command_writes_a_folder_that_names_no_other_host(site: Path, tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    from app.__main__ import main

    assert main(["site", str(tmp_path / "out")]) == 0
    assert "wrote" in capsys.readouterr().out
    names = sorted(str(p.relative_to(tmp_path / "out")) for p in (tmp_path / "out").rglob("*") if p.is_file())
    assert names == sorted(str(p.relative_to(site)) for p in site.rglob("*") if p.is_file())
    assert {"index.html", "race.js", "page.js", "player.js", "player.css", "twins.json", "diffusion.onnx",
            "ar.onnx"} <= set(names)
    for name in ("index.html", "page.js", "race.js", "player.js", "player.css"):
        assert "://" not in (tmp_path / "out" / name).read_text(encoding="utf-8"), name


RACE = """async (prompts) => {
  const out = [];
  for (const p of prompts) {
    const r = await window.converge.race(p);
    out.push({left: [r.left.ids, r.left.nfe, r.left.text, r.left.frames.length],
              right: [r.right.ids, r.right.nfe, r.right.text, r.right.frames.length]});
  }
  return out;
}"""


def test_the_browser_race_equals_the_python_twins_and_asks_no_other_host(site: Path, browser: Any) -> None:
    prompts = list(EVAL_PROMPTS[:24])
    with serve(site) as url:
        seen: list[str] = []

        def route(r: Any) -> None:
            seen.append(r.request.url)
            r.continue_() if r.request.url.startswith(url) else r.abort()

        with browser_tab(browser, "about:blank", timeout_ms=170_000) as tab:
            tab.route("**/*", route)
            tab.goto(url)
            tab.wait_for_function("() => !document.getElementById('cv-run').disabled")
            got = tab.evaluate(RACE, prompts)
    assert [u for u in seen if not u.startswith(url)] == []
    for prompt, race in zip(prompts, got):
        want = python_answers(prompt)
        for side in ("left", "right"):
            assert (race[side][0], race[side][1]) == want[side], (prompt, side)


def test_the_single_file_races_from_file_with_no_network(single: Path, browser: Any) -> None:
    page = single
    assert page.stat().st_size < 40e6
    prompts = list(EVAL_PROMPTS[:2])  # the folder's test races all 24; this one shows the inlined parts load
    with browser_tab(browser, "about:blank", timeout_ms=120_000, offline=True) as tab:
        seen: list[str] = []
        tab.on("request", lambda r: seen.append(r.url))
        tab.goto(page.as_uri())
        tab.wait_for_function("() => !document.getElementById('cv-run').disabled")
        got = tab.evaluate(RACE, prompts)
        board = tab.evaluate("() => [document.getElementById('cv-board-box').textContent, "
                             "!!document.getElementById('cv-board-run')]")
    assert [u for u in seen if not u.startswith(("file:", "blob:"))] == []
    assert board == [re.sub("<[^>]+>", "", NO_BOARD), False]  # the board left out, in its one sentence
    for prompt, race in zip(prompts, got):
        want = python_answers(prompt)
        assert [(race[side][0], race[side][1]) for side in ("left", "right")] == [want["left"], want["right"]]


ROWS = """async (prompts) => {
  const analysis = await window.converge.analysis, out = [];
  for (const p of prompts) {
    const r = await window.converge.race(p, {length: 64});
    const sides = {};
    for (const key of ["left", "right"]) {
      const a = window.ConvergeRows.analyzer(analysis), frames = r[key].frames;
      sides[key] = {frames: frames, rows: window.ConvergeRows.wire(frames.map((f) => a.add(f))),
                    ...window.ConvergeRows.summary(frames, analysis)};
    }
    out.push(sides);
  }
  return out;
}"""


def test_the_rows_built_in_the_browser_equal_the_python_payload_from_the_same_frames(site: Path,
                                                                                      browser: Any) -> None:
    """app/site/js/rows.js is the JavaScript copy of the analysis for token frames: its wire rows, metrics and settled
    series equal what app/view (SideAnalyzer, wire_rows, summary) makes of the same frames, on several races."""
    import json

    from app.analysis.changes import SideAnalyzer
    from app.trace.frames import Frame
    from app.view.payload import wire_rows
    from app.view.side import summary

    with serve(site) as url, browser_tab(browser, url, timeout_ms=120_000) as tab:
        tab.wait_for_function("() => !document.getElementById('cv-run').disabled")
        got = tab.evaluate(ROWS, list(EVAL_PROMPTS[20:24]))
    for race in got:
        for key in ("left", "right"):
            side = race[key]
            frames = [Frame.from_json(f) for f in side["frames"]]
            analyzer = SideAnalyzer()
            want = {"rows": wire_rows([analyzer.add(f) for f in frames]), **summary(frames)}
            want = json.loads(json.dumps(want))  # tuples as lists, as the browser's JSON has them
            assert len(frames) > 2 and want["metrics"]["token_unit"] == "tokenizer pieces"
            for part in ("rows", "metrics", "settled"):
                assert side[part] == want[part], (key, part)


PLAYER_WATCH = """() => {
  const seen = {left: new Set(), right: new Set()};
  for (const key of ["left", "right"]) {
    const panel = document.querySelector(`#converge .cv-side[data-side=${key}]`);
    new MutationObserver(() => seen[key].add(panel.getAttribute("data-frames")))
      .observe(panel, {attributes: true, attributeFilter: ["data-frames"]});
  }
  window.seenFrames = seen;
}"""


def test_the_site_draws_the_race_with_the_pages_player(site: Path, browser: Any) -> None:
    """The page's player (app/view/player/) draws both sides as their frames arrive: panels, heatmaps, chart,
    metrics, scrubber, inspector and presenter mode, and the page asks no other host for anything."""
    with serve(site) as url, browser_tab(browser, "about:blank", timeout_ms=120_000) as tab:
        seen: list[str] = []
        tab.on("request", lambda r: seen.append(r.url))
        tab.goto(url)
        for part in ("panel-left", "panel-right", "heatmap-left", "heatmap-right", "chart", "metrics", "scrubber",
                     "inspector", "legend"):
            assert tab.locator(f"#converge [data-part={part}]").count() == 1, part
        tab.wait_for_function("() => !document.getElementById('cv-run').disabled")
        tab.evaluate(PLAYER_WATCH)
        tab.click("#cv-run")
        tab.wait_for_selector("#converge[data-status=done]")
        tab.wait_for_function("() => !document.getElementById('cv-run').disabled")
        frames = tab.evaluate("""() => ['left', 'right'].map((s) => [
            [...window.seenFrames[s]].map(Number),
            +document.querySelector(`#converge .cv-side[data-side=${s}]`).getAttribute('data-frames'),
            +document.querySelector(`#converge [data-part=heatmap-${s}] canvas`).getAttribute('data-rows')])""")
        for grew, total, heat_rows in frames:
            assert total > 2 and heat_rows == total
            assert len(grew) > 2 and sorted(grew) == grew and grew[-1] == total  # drawn as the frames came
        figures = tab.locator("#converge [data-part=metrics]").inner_text()
        assert "tokenizer pieces" in figures or "passes" in figures.lower(), figures
        tab.focus("#converge .cv-side[data-side=left] .cv-text")
        tab.keyboard.press("ArrowRight")
        tab.wait_for_selector("#converge .cv-inspector[data-open=true][data-side=left][data-pos='0']")
        tab.keyboard.press("Escape")
        tab.keyboard.press("p")
        tab.wait_for_selector("#converge[data-presenter=true]")
        assert tab.evaluate("() => document.documentElement.classList.contains('cv-presenting')")
    assert seen and [u for u in seen if not u.startswith(url)] == []


# the page's Stop, clicked as the race's third AR frame reaches the player (the race yields to the page after each)
STOP_AT_THIRD = """() => { const root = document.getElementById('converge');
    const player = (root.convergePlayer ? root : root.querySelector('.cv-player')).convergePlayer;
    const update = player.update.bind(player); let frames = 0;
    player.update = (p) => { update(p); const right = p.sides && p.sides.right;
        if (right && right.status === 'running' && right.rows.length && ++frames === 3) {
            document.getElementById('cv-stop').click(); } }; }"""


def test_stop_ends_the_sites_race_keeping_the_frames_drawn(site: Path, browser: Any) -> None:
    with serve(site) as url, browser_tab(browser, url, timeout_ms=120_000) as tab:
        tab.wait_for_function("() => !document.getElementById('cv-run').disabled")
        assert tab.is_disabled("#cv-stop")
        tab.evaluate(STOP_AT_THIRD)
        tab.click("#cv-run")
        tab.wait_for_function("() => document.getElementById('cv-status').textContent.startsWith('Stopped')")
        for key in ("left", "right"):  # the player paints on its own timer: wait for it to draw the end
            tab.wait_for_selector(f"#converge .cv-side[data-side={key}][data-status=stopped]")
        sides = tab.evaluate("""() => ['left', 'right'].map((s) => [
            document.querySelector(`#converge .cv-side[data-side=${s}]`).getAttribute('data-status'),
            +document.querySelector(`#converge .cv-side[data-side=${s}]`).getAttribute('data-frames')])""")
        assert tab.is_disabled("#cv-stop") and not tab.is_disabled("#cv-run")
    assert [status for status, _ in sides] == ["stopped", "stopped"]
    assert 3 <= sides[1][1] < 128  # the AR twin stopped a few tokens in, every frame it drew kept


def python_board(openings: int) -> list[dict[str, Any]]:
    """The page's board's rows (app/ui/board_tab.py): both twins at their defaults over its first `openings`
    openings, each answer scored by the referee."""
    from app.board.notes import SIDES
    from app.board.prompts import prompt_set
    from app.board.run import Board, Entrant, paired, plan, referee, takes_seed

    heats = plan(paired(*(Entrant(spec, spec, spec) for spec, _ in SIDES)), prompt_set("stories")[:openings], 1)
    board = Board(heats, None, referee(), takes_seed)
    for _ in board.run():
        pass
    return board.rows


def test_the_sites_board_fills_pythons_rows_and_its_note_quotes_its_table(site: Path, browser: Any) -> None:
    """The board in the browser (?openings=2): Stop ends it keeping no unfinished race; run again, each opening races
    in the player, the referee's graph fetched only once a board starts, and its table is the page's board's rows
    (passes and answer tokens exactly, the referee's perplexity within what the graph's logits allow); the line under
    it quotes the table's figures."""
    from app.board.notes import cells
    from app.board.prompts import prompt_set
    from tests.test_board_page import expected_note

    with serve(site) as url, browser_tab(browser, url + "?openings=2", timeout_ms=240_000) as tab:
        asked: list[str] = []
        tab.on("request", lambda r: asked.append(r.url))
        tab.wait_for_function("() => !document.getElementById('cv-board-run').disabled")
        before = [u for u in asked if u.endswith("referee.onnx")]
        tab.click("#cv-board-run")  # Stop at once: it ends with no race finished, and so no row
        tab.click("#cv-board-stop")
        tab.wait_for_function("() => document.getElementById('cv-board-status').textContent === "
                              "'Stopped after 0 of 2 openings.' && !document.getElementById('cv-board-run').disabled")
        assert tab.eval_on_selector_all("#cv-board-table tbody tr", "rows => rows.length") == 0
        tab.click("#cv-board-run")
        tab.wait_for_function("() => document.getElementById('cv-board-status').textContent.startsWith('Done')")
        heads = tab.eval_on_selector_all("#cv-board-table th", "cells => cells.map((c) => c.textContent)")
        shown = tab.eval_on_selector_all("#cv-board-table tbody tr", """rows => rows.map((r) =>
            [...r.querySelectorAll('td')].map((c) => c.textContent))""")
        line = tab.inner_text("#cv-board-note")
        raced = tab.evaluate("() => document.querySelector('#converge').textContent")
    assert before == [] and [u for u in asked if u.endswith("referee.onnx")] == [url + "referee.onnx"]
    assert prompt_set("stories")[1].text in raced  # the last opening's race is in the player
    want = [cells(r) for r in python_board(2)]
    assert heads == ["opening", "side", "passes", "answer tokens", "tokens a pass", "seconds", "referee perplexity"]
    assert [r[:4] for r in shown] == [[str(v) for v in w[:4]] for w in want]  # opening, side, passes, answer tokens
    for got, made in zip(shown, want):
        assert float(got[6]) == pytest.approx(made[6], rel=1e-3, abs=2e-3), (got, made)
    rows = [dict(zip(heads, r)) for r in shown]
    assert line.startswith("What to notice: over 2 openings")
    for figure in expected_note(rows):
        assert figure in line


def test_the_browser_bench_measures_the_site_beside_the_python_twins(site: Path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    from app.bench.browser import bench

    with ThreadPoolExecutor(1) as pool:  # its own thread: the browser fixture may hold playwright in this one
        result = pool.submit(bench, prompts=EVAL_PROMPTS[:1], loads=1).result()
    assert "skipped" not in result, result
    assert len(result["first_load_s"]["runs"]) == 1 and result["first_load_s"]["worst"] > 0
    for side in ("left", "right"):
        assert result[f"{side}_ms_per_pass"]["worst"] >= result[f"{side}_ms_per_pass"]["median"] > 0
        assert result[f"{side}_passes_per_s"]["worst"] <= result[f"{side}_passes_per_s"]["median"]
        assert result["python_ms_per_pass"][side]["median"] > 0
    assert result["race_both_s"]["median"] > 0 and result["passes_per_s_both"]["median"] > 0


def test_the_browser_bench_says_why_it_skips_without_chromium(monkeypatch: pytest.MonkeyPatch) -> None:
    import app.bench.browser as browser_bench

    pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    pytest.importorskip("onnx", reason="the onnx package builds the site's graphs")
    monkeypatch.setattr(browser_bench, "CHROMIUM", "/nonexistent/chromium")
    monkeypatch.setattr(browser_bench.shutil, "which", lambda name: None)
    assert browser_bench.bench()["skipped"].startswith("Chromium is not installed")


SETTINGS = """async ([prompt, options]) => {
  const r = await window.converge.race(prompt, options);
  return {left: [r.left.ids, r.left.nfe], right: [r.right.ids, r.right.nfe],
          candidates: {left: r.left.frames.map((f) => f.candidates), right: r.right.frames.map((f) => f.candidates)}};
}"""
# each diffusion setting the browser honours moved from the twin's default at least once (and back at another), as
# the page gives them (0: off, or steps following the length); `ar`: the AR twin's
VARIED = ({"threshold": 0}, {"threshold": 0.5, "filter": 0}, {"filter": 0.3, "min_length": 24},
          {"threshold": 0.7, "filter": 0.9, "min_length": 0},
          {"block_length": 8, "steps": 32, "scoring": "confidence"},
          {"block_length": 64, "schedule": "dream", "scoring": "margin", "steps": 24},
          {"block_length": 32, "schedule": "dllm", "steps": 40, "no_repeat_ngram": 3, "ar": {"no_repeat_ngram": 3}},
          {"factor": 1.0, "eos_discount": 0.5, "no_repeat": False, "no_repeat_ngram": 0,
           "ar": {"no_repeat": False, "no_repeat_ngram": 0, "min_length": 0}},
          {"no_repeat_ngram": 2, "temperature": 0.7, "seed": 2,
           "ar": {"no_repeat_ngram": 2, "temperature": 0.7, "seed": 2, "min_length": 32}},
          {"min_gap": 3, "stop_at_eos": False, "filter": 0, "ar": {"stop_at_eos": False}},
          {"prefix_cache": False, "top_k": 5, "threshold": 0.5},
          {"dual_cache": False, "lookahead": 16, "schedule": "dream"},
          {"lookahead": 16, "block_length": 32, "threshold": 0, "filter": 0, "steps": 16, "eos_discount": 0.8},
          {"top_k": 5, "scoring": "margin", "schedule": "dllm", "min_gap": 2, "prefix_cache": False},
          {"steps": 0, "block_length": 16, "factor": 2.0, "threshold": 0.9, "dual_cache": False},
          {"temperature": 0.8, "seed": 3, "ar": {"temperature": 0.8, "seed": 7}},
          {"temperature": 1.2, "seed": 11, "top_k": 50, "block_length": 32, "ar": {"temperature": 1.0, "top_k": 20}},
          {"scoring": "random", "seed": 5, "remask": 0.3, "ar": {"temperature": 0.7, "top_p": 0.9, "seed": 4}},
          {"remask": 0.3, "temperature": 0.5, "seed": 9999, "threshold": 0,
           "ar": {"temperature": 1.5, "top_k": 5, "top_p": 0.5, "seed": 9999}},
          {"scoring": "random", "seed": 1, "schedule": "dream",
           "ar": {"temperature": 0.9, "seed": 1, "stop_at_eos": False}})


GRAPH_PATHS = range(10, 15)  # VARIED's settings that run the graph with no cache, no DualCache, lookahead


def test_the_twins_settings_race_in_the_browser_as_the_python_twins_with_their_candidates(site: Path,
                                                                                          browser: Any) -> None:
    """Settings that run the graph each way the caches do (no cache, the prefix cache alone, lookahead) race as in
    Python: the same ids and passes on each side and the same candidates in every frame. The sampler logic under
    every setting of VARIED, off and on, is replayed in Node over the Python twins' own logits
    (tests/test_site_parity.py); this is the part only the browser runs, onnxruntime-web's graph through each path."""
    assert {"prefix_cache", "dual_cache", "lookahead"} <= {k for i in GRAPH_PATHS for k in VARIED[i]}
    with serve(site) as url, browser_tab(browser, url, timeout_ms=170_000) as tab:
        tab.wait_for_function("() => !document.getElementById('cv-run').disabled")
        for i in GRAPH_PATHS:
            prompt, varied = EVAL_PROMPTS[i], VARIED[i]
            diffusion = {k: v for k, v in varied.items() if k != "ar"}
            got = tab.evaluate(SETTINGS, [prompt, {"length": 64, **varied}])
            want = python_answers(prompt, ar=varied.get("ar"), gen_length=64, **diffusion)
            assert (got["left"], got["right"]) == (list(want["left"]), list(want["right"])), varied
            frames = python_candidates(prompt, ar=varied.get("ar"), gen_length=64, **diffusion)
            for side in ("left", "right"):
                assert len(got["candidates"][side]) == len(frames[side]), (varied, side)
                for k, (seen, made) in enumerate(zip(got["candidates"][side], frames[side])):
                    assert same_candidates(seen, made), (varied, side, k, seen, made)


RANDOM = """const { defaultRng } = await import(process.argv[1]);
const out = [];
for (const seed of JSON.parse(process.argv[2])) {
  const r = defaultRng(seed), draws = Array.from(r.random(7)), picks = [];
  for (let i = 0; i < 20; i++) picks.push(r.choice([3, 5, 8, 13], [0.1, 0.2, 0.3, 0.4]));
  out.push([draws, picks, Array.from(r.random(3))]);
}
console.log(JSON.stringify(out));"""


def test_the_browsers_generator_draws_as_numpys_default_rng() -> None:
    """app/site/js/rng.js: default_rng(seed)'s doubles and choice(a, p=...) are numpy's, bit for bit, in order."""
    import json
    import subprocess

    import numpy as np

    node = shutil.which("node")
    if node is None:
        pytest.skip("Node.js is not installed to run app/site/js/rng.js")
    seeds = [0, 1, 42, 9999, 2**32 + 5]
    rng_js = Path(__file__).resolve().parent.parent / "app" / "site" / "js" / "rng.js"
    done = subprocess.run([node, "--input-type=module", "-e", RANDOM, rng_js.as_uri(), json.dumps(seeds)],
                          capture_output=True, text=True, timeout=60, check=True)
    for seed, (draws, picks, after) in zip(seeds, json.loads(done.stdout)):
        rng = np.random.default_rng(seed)
        assert draws == rng.random(7).tolist(), seed
        assert picks == [int(rng.choice([3, 5, 8, 13], p=[0.1, 0.2, 0.3, 0.4])) for _ in range(20)], seed
        assert after == rng.random(3).tolist(), seed


SAMPLE = """const { defaultRng } = await import(process.argv[1]);
const out = JSON.parse(process.argv[2]).map(([seed, n, k]) =>
  defaultRng(seed).sample(Array.from({length: n}, (_, i) => i + 3), k).sort((a, b) => a - b));
console.log(JSON.stringify(out));"""


def test_the_browsers_generator_picks_without_replacement_as_numpys_choice() -> None:
    """app/site/js/rng.js `sample`: the set default_rng(seed).choice(a, size, replace=False) picks (a draft's random
    re-noised positions, app/site/js/draft.js), for drafts of 1 to 300 tokens, all of them picked or a few."""
    import json
    import subprocess

    import numpy as np

    node = shutil.which("node")
    if node is None:
        pytest.skip("Node.js is not installed to run app/site/js/rng.js")
    cases = [(seed, n, k) for seed in (0, 3, 11, 9999) for n, k in ((1, 1), (12, 4), (32, 10), (64, 64), (300, 90))]
    rng_js = Path(__file__).resolve().parent.parent / "app" / "site" / "js" / "rng.js"
    done = subprocess.run([node, "--input-type=module", "-e", SAMPLE, rng_js.as_uri(), json.dumps(cases)],
                          capture_output=True, text=True, timeout=60, check=True)
    for (seed, n, k), got in zip(cases, json.loads(done.stdout), strict=True):
        want = np.random.default_rng(seed).choice(np.arange(n) + 3, size=k, replace=False)
        assert got == sorted(int(x) for x in want), (seed, n, k)


def same_candidates(seen: list[Any] | None, made: list[Any] | None) -> bool:
    """One frame's candidates alike: the same positions and tokens in the same order, each probability the same to 4
    places or one step of them apart (the graph's logits are within 1e-4 of numpy's, not its bits, so a probability
    can differ in its fifth decimal and round the other way; docs/site.md)."""
    if seen is None or made is None:
        return seen == made
    return [(pos, [t for t, _ in c]) for pos, c in seen] == [(pos, [t for t, _ in c]) for pos, c in made] and all(
        abs(p - q) <= 1.00001e-4 for (_, a), (_, b) in zip(seen, made) for (_, p), (_, q) in zip(a, b))


REFUSED = """(bad) => Promise.all(bad.map((o) =>
  window.converge.race('A fox', o).then(() => 'raced', (e) => e.message)))"""


def test_a_setting_out_of_range_or_not_offered_is_refused_by_name(site: Path, browser: Any) -> None:
    bad = [({"threshold": 2}, "Parallel threshold must be above 0 and at most 1 (or off), not 2: change threshold."),
           ({"min_length": 1.5}, "Shortest answer must be a whole number"),
           ({"steps": 200, "length": 64}, "Steps must be between 1 and the answer length (64), not 200: change steps"),
           ({"block_length": 24, "length": 64}, "Block length 24 does not divide the generation length 64"),
           ({"scoring": "loud"}, "Scoring must be one of"),
           ({"threshold": 0.5, "factor": 1}, "not both"),
           ({"pins": ["0:Once"]}, "Pinned text (pins) runs on the server only"),
           ({"top_p": 0.5}, "does not offer top_p for the diffusion twin"),
           ({"ar": {"remask": 0.3}}, "does not offer remask for the AR twin"),
           ({"ar": {"no_repeat_ngram": 20}}, "No repeated runs must be between 0 and 16, not 20"),
           ({"ar": {"top_p": 0}}, "Top-p must be between 0.05 and 1, not 0: change top_p."),
           ({"temperature": 3}, "Temperature must be between 0 and 2"),
           ({"ar": {"stop_at_eos": "no"}}, "Stop at end-of-text must be on or off")]
    with serve(site) as url, browser_tab(browser, url, timeout_ms=120_000) as tab:
        tab.wait_for_function("() => !document.getElementById('cv-run').disabled")
        said = tab.evaluate(REFUSED, [b for b, _ in bad])
    for (given, words), sentence in zip(bad, said):
        assert words in sentence, (given, sentence)


CONTROLS = """() => [...document.querySelectorAll('#cv-settings fieldset')].map((set) => [set.id,
  [...set.querySelectorAll('label')].map((l) => [l.querySelector('input, select').id,
                                                 l.firstChild.textContent.trim()])])"""


def test_the_pages_controls_are_the_settings_the_browser_honours_labelled_as_in_python(site: Path,
                                                                                         browser: Any) -> None:
    from app.engine.autoregressive import TWIN_AR
    from app.engine.diffusion import TWIN_DIFFUSION
    from app.engine.options import settings_spec
    from app.sources.local import BROWSER_SETTINGS

    specs = {"diffusion": settings_spec(TWIN_DIFFUSION), "ar": settings_spec(TWIN_AR)}
    want = [[f"cv-{prefix}settings", [["cv-length" if name == "gen_length" else f"cv-{prefix}{name}",
                                       specs[kind][name]["label"]]
                                      for name in BROWSER_SETTINGS[f"local-{kind}"]
                                      if kind == "diffusion" or name != "gen_length"]]  # one length for both
            for kind, prefix in (("diffusion", ""), ("ar", "ar-"))]
    with serve(site) as url, browser_tab(browser, url, timeout_ms=120_000) as tab:
        tab.wait_for_function("() => !document.getElementById('cv-run').disabled")
        tab.wait_for_selector("#cv-ar-settings")
        assert tab.evaluate(CONTROLS) == want
        tab.fill("#cv-threshold", "0.5")
        tab.select_option("#cv-length", "32")
        tab.click("#cv-run")
        tab.wait_for_function("() => document.getElementById('cv-status').textContent.startsWith('Done')")


PLAYER_NOW = """() => { const root = document.getElementById('converge');
    const p = (root.convergePlayer ? root : root.querySelector('.cv-player')).convergePlayer;
    return {playing: p.state.playing, cursor: p.state.cursor, shown: root.getAttribute('data-playing'),
            step: root.getAttribute('data-step'), last: root.querySelector('.cv-range').max,
            status: root.querySelector('.cv-status').textContent}; }"""
SITE_IDLE = "Type a prompt and press Run: the twins race in this browser."


@pytest.mark.browser
@pytest.mark.parametrize("where", ["folder", "single file"])
def test_a_finished_race_on_the_site_stays_finished_until_play_is_pressed(site: Path, single: Path, browser: Any,
                                                                            where: str) -> None:
    """Issue 50 item 6: the race was watched as it ran, so when it ends the player stays at its last frame (it used to
    go back to frame 1 and replay); Play replays it. The idle line speaks of this page's controls."""
    with contextlib.ExitStack() as stack:
        url = stack.enter_context(serve(site)) if where == "folder" else single.as_uri()
        tab = stack.enter_context(browser_tab(browser, url, timeout_ms=120_000, offline=where != "folder"))
        assert tab.evaluate(PLAYER_NOW)["status"] == SITE_IDLE
        tab.wait_for_function("() => !document.getElementById('cv-run').disabled")
        tab.fill("#cv-prompt", EVAL_PROMPTS[3])
        tab.click("#cv-run")
        tab.wait_for_selector("#converge[data-status=done]")  # painted after the last update, where a replay began
        now = tab.evaluate(PLAYER_NOW)
        assert (now["playing"], now["cursor"], now["shown"]) == (False, None, "false"), now
        assert int(now["step"]) == int(now["last"]) > 2, now  # at its last frame
        tab.click("#converge .cv-play")
        tab.wait_for_selector("#converge[data-playing=true]")  # Play replays it


@pytest.mark.browser
def test_the_folder_opened_from_disk_says_how_to_open_it(site: Path, browser: Any) -> None:
    """Issue 50 item 5: index.html double-clicked (file://) cannot fetch the folder's files; instead of "Failed to
    fetch" (and the browser's CORS errors: browser_tab fails on any console error) the page says in one sentence how
    to open it, naming this folder, and no text speaks of controls it lacks."""
    with browser_tab(browser, "about:blank", timeout_ms=60_000) as tab:
        asked: list[str] = []
        tab.on("request", lambda r: asked.append(r.url))
        tab.goto((site / "index.html").as_uri())
        tab.wait_for_function("() => document.getElementById('cv-status').textContent.includes('http.server')")
        tab.wait_for_selector("#converge[data-mode=message]")
        said = tab.text_content("#cv-status")
        player_said = tab.evaluate(PLAYER_NOW)["status"]
        assert tab.is_disabled("#cv-run")
        tab.keyboard.press("?")
        tab.wait_for_selector("#converge[data-help=open]")
        shown = tab.inner_text("body")
    assert said == player_said == (
        "This page was opened from disk, where the browser loads none of its files: open this folder through a web "
        f"server (python -m http.server -d {site}, and open the address it prints), or build one file that opens from "
        "disk with python -m app site converge.html --single-file.")
    for wrong in ("Failed to fetch", "Choose two sources", "load a recording"):
        assert wrong not in shown
    assert not [u for u in asked if u.endswith((".json", ".onnx", ".wasm", ".mjs"))]  # it tried none of them


DRAFT = " She liked to play in the park with her red ball."
SHOWN_DRAFT = """() => { const root = document.getElementById('converge');
    const note = (s) => root.querySelector(`.cv-side[data-side=${s}] .cv-draft-note`);
    const cells = (s, cls) => root.querySelectorAll(`.cv-side[data-side=${s}] .cv-text .cv-tok.${cls}`).length;
    const row = root.querySelector('tr[data-metric=draft_kept]');
    return {notes: ['left', 'right'].map((s) => note(s).hidden ? null : note(s).textContent),
            kept: row.hidden ? null : [...row.querySelectorAll('td')].map((n) => n.textContent),
            cells: ['left', 'right'].map((s) => cells(s, 'cv-k')), status: document.getElementById('cv-status')
            .textContent}; }"""


def python_from_draft(prompt: str, where: str, seed: int) -> dict[str, Any]:
    """What the Python twins make of the page's draft (30% re-noised, the seed given) at the site's length of 32: each
    side's panel line (app/view/side.py draft_line) and its metrics' kept and edited counts."""
    import threading

    from app.analysis import revision as rv
    from app.engine.draft import Revision
    from app.sources.local import make_local_ar, make_local_diffusion
    from app.view.side import draft_entry

    out: dict[str, Any] = {}
    for side, make in (("left", make_local_diffusion), ("right", make_local_ar)):
        source = make(gen_length=32)
        source.revise(Revision(DRAFT, 0.3, where, seed), prompt)
        counts = rv.counts(list(source.stream(prompt, threading.Event())))
        out[side] = {"line": draft_entry({"draft": source.draft_json()})["line"],  # type: ignore[index]
                     "kept": f"{counts['draft_kept']} of {counts['draft_positions']}"}
    return out


@pytest.mark.browser
@pytest.mark.parametrize("where", ["folder", "single file"])
def test_a_race_on_the_site_starts_from_the_draft_typed_and_shows_its_letters(site: Path, single: Path,
                                                                               browser: Any, where: str) -> None:
    """Issue 53 item 5: the page's "Start from a draft" box races both twins from the draft typed, as Python's do:
    the masked twin's panel says how much it re-noised and shows the draft's kept tokens as such, the AR twin's says
    how much of the draft it kept, and the metrics count what each kept, equal to the Python twins' counts."""
    prompt, how = EVAL_PROMPTS[5], "random" if where == "folder" else "unsure"
    seed = 4 if how == "random" else 0  # the seed box draws the random tokens; the least sure need none
    with contextlib.ExitStack() as stack:
        url = stack.enter_context(serve(site)) if where == "folder" else single.as_uri()
        tab = stack.enter_context(browser_tab(browser, url, timeout_ms=120_000, offline=where != "folder"))
        tab.wait_for_function("() => !document.getElementById('cv-run').disabled")
        tab.fill("#cv-prompt", prompt)
        tab.select_option("#cv-length", "32")
        tab.click("#cv-draft-box summary")
        tab.fill("#cv-draft", DRAFT)
        tab.fill("#cv-renoise", "30")
        tab.select_option("#cv-renoise-where", how)
        tab.fill("#cv-renoise-seed", str(seed))
        tab.click("#cv-run")
        tab.wait_for_function("() => document.getElementById('cv-status').textContent.startsWith('Done')")
        tab.wait_for_selector("#converge[data-status=done]")
        shown = tab.evaluate(SHOWN_DRAFT)
    want = python_from_draft(prompt, how, seed)
    assert shown["notes"] == [want["left"]["line"], want["right"]["line"]], shown
    assert shown["kept"] == [want["left"]["kept"], want["right"]["kept"]], shown
    assert shown["cells"][0] > 0, shown  # the masked twin's panel draws tokens kept from the draft as kept


REFUSE = """const { revisionOf, choose } = await import(process.argv[1]);
const said = JSON.parse(process.argv[2]).map(([draft, n]) => {
  try { choose(n, revisionOf(draft), null); return null; } catch (e) { return e.message; }
});
console.log(JSON.stringify(said));"""


def test_a_draft_the_browser_cannot_start_from_is_refused_in_pythons_sentence() -> None:
    """app/site/js/draft.js checks a draft as app/engine/draft.py does (empty, a share past 100%, a span backwards or
    past the draft's end) and says so in Python's own sentence; a draft that can start is not refused."""
    import json
    import subprocess

    from app.engine.draft import Revision, choose
    from app.errors import UserError

    node = shutil.which("node")
    if node is None:
        pytest.skip("Node.js is not installed to run app/site/js/draft.js")
    cases = [({"text": "  "}, 5), ({"text": " a", "share": 1.5}, 5), ({"text": " a", "where": "9:3"}, 5),
             ({"text": " a", "where": "four"}, 5), ({"text": " a", "where": "7:9", "share": 1.0}, 5),
             ({"text": " a", "where": "2:9", "share": 0.5}, 5)]
    draft_js = Path(__file__).resolve().parent.parent / "app" / "site" / "js" / "draft.js"
    done = subprocess.run([node, "--input-type=module", "-e", REFUSE, draft_js.as_uri(), json.dumps(cases)],
                          capture_output=True, text=True, timeout=60, check=True)
    want: list[str | None] = []
    for draft, n in cases:
        try:
            choose(n, Revision(**draft))
            want.append(None)
        except UserError as e:
            want.append(str(e))
    assert json.loads(done.stdout) == want
    assert want[-1] is None and all(want[:-1])
