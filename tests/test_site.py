"""The static site (`python -m app site`): the twins race in Chromium, from a folder served on loopback, and each side's
answer equals the Python sampler's token for token with the same passes (`window.converge.race`); the page asks no
other host for anything. Skipped with the reason where Chromium, npm (onnxruntime-web) or onnx is missing."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from app.bench.browser import serve
from app.bench.twins import EVAL_PROMPTS
from tests.fixtures import needs_twins
from tests.pages import browser_tab

pytestmark = needs_twins
ORT_READY = (Path(__file__).resolve().parent.parent / "app" / "site" / "node_modules" / "onnxruntime-web").is_dir()


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site built once for the module (npm ci on first use, as on a fresh machine)."""
    pytest.importorskip("onnx", reason="the onnx package (requirements.txt) builds the site's graphs")
    if not ORT_READY and shutil.which("npm") is None:
        pytest.skip("npm is not installed, so onnxruntime-web cannot be installed to build the site")
    from app.errors import UserError
    from app.site.build import build_site, runtime_dir

    try:
        runtime_dir()
    except UserError as e:  # npm is there but could not install it (no registry in reach)
        pytest.skip(f"onnxruntime-web is unavailable: {e}")
    return build_site(tmp_path_factory.mktemp("site") / "site")


def python_answers(prompt: str, **settings: Any) -> dict[str, tuple[list[int], int]]:
    """Each side's answer ids and passes as `python -m app generate --source local-diffusion` / `local-ar` makes
    them: the sources' own settings (`settings`: the diffusion side's, as the page gives them), prompt encoding and
    sampler."""
    import threading as th

    from app.engine import autoregressive, diffusion
    from app.sources.local import make_local_ar, make_local_diffusion

    out = {}
    for side, make in (("left", make_local_diffusion), ("right", make_local_ar)):
        src = make(**settings) if side == "left" else make(gen_length=settings.get("gen_length", 128))
        ids = src.encode(prompt)
        if side == "left":
            last = list(diffusion.generate(src.model, ids, src.opts, th.Event()))[-1]
            n = diffusion.answer_length(last.ids, last.masked, src.model.eos_id)
            out[side] = ([int(i) for i in last.ids[:n]], last.nfe)
        else:
            last = list(autoregressive.generate(src.model, ids, src.opts, th.Event()))[-1]
            out[side] = (list(last.ids), last.nfe)
    return out


def test_the_site_command_writes_a_folder_that_names_no_other_host(site: Path, tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    from app.__main__ import main

    assert main(["site", str(tmp_path / "out")]) == 0
    assert "wrote" in capsys.readouterr().out
    names = sorted(str(p.relative_to(tmp_path / "out")) for p in (tmp_path / "out").rglob("*") if p.is_file())
    assert names == sorted(str(p.relative_to(site)) for p in site.rglob("*") if p.is_file())
    assert {"index.html", "race.js", "page.js", "rows.js", "player.js", "player.css", "twins.json", "diffusion.onnx",
            "ar.onnx"} <= set(names)
    for name in ("index.html", "page.js", "race.js", "rows.js", "player.js", "player.css"):
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


def test_the_single_file_races_from_file_with_no_network(site: Path, browser: Any, tmp_path: Path) -> None:
    from app.site.build import build_single

    page = build_single(tmp_path / "converge.html")
    assert page.stat().st_size < 40e6
    prompts = list(EVAL_PROMPTS[:2])  # the folder's test races all 24; this one shows the inlined parts load
    with browser_tab(browser, "about:blank", timeout_ms=120_000, offline=True) as tab:
        seen: list[str] = []
        tab.on("request", lambda r: seen.append(r.url))
        tab.goto(page.as_uri())
        tab.wait_for_function("() => !document.getElementById('cv-run').disabled")
        got = tab.evaluate(RACE, prompts)
    assert [u for u in seen if not u.startswith(("file:", "blob:"))] == []
    for prompt, race in zip(prompts, got):
        want = python_answers(prompt)
        assert [(race[side][0], race[side][1]) for side in ("left", "right")] == [want["left"], want["right"]]


ROWS = """async (prompts) => {
  const analysis = await window.converge.analysis, out = [];
  for (const p of prompts) {
    const r = await window.converge.race(p, {length: 64});
    const sides = {};
    for (const key of ["left", "right"]) {
      const a = window.ConvergeRows.analyzer(), frames = r[key].frames;
      sides[key] = {frames: frames, rows: window.ConvergeRows.wire(frames.map((f) => a.add(f))),
                    ...window.ConvergeRows.summary(frames, analysis)};
    }
    out.push(sides);
  }
  return out;
}"""


def test_the_rows_built_in_the_browser_equal_the_python_payload_from_the_same_frames(site: Path,
                                                                                      browser: Any) -> None:
    """app/site/rows.js is the JavaScript copy of the analysis for token frames: its wire rows, metrics and settled
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
  return {left: [r.left.ids, r.left.nfe], right: [r.right.ids, r.right.nfe]};
}"""
OFFERED = ({"threshold": 0}, {"threshold": 0.5, "filter": 0}, {"filter": 0.3, "min_length": 24},
           {"threshold": 0.7, "filter": 0.9, "min_length": 0})


def test_the_diffusion_settings_the_site_offers_race_as_the_python_twin(site: Path, browser: Any) -> None:
    """threshold, filter (0: off) and min_length, as the page gives them, race in the browser as in Python; any
    other setting, or one out of range, is refused by name."""
    with serve(site) as url, browser_tab(browser, url, timeout_ms=120_000) as tab:
        tab.wait_for_function("() => !document.getElementById('cv-run').disabled")
        for prompt, offered in zip(EVAL_PROMPTS[8:12], OFFERED):
            got = tab.evaluate(SETTINGS, [prompt, {"length": 64, **offered}])
            want = python_answers(prompt, gen_length=64, **offered)
            assert (got["left"], got["right"]) == (list(want["left"]), list(want["right"])), offered
        for bad, words in (({"top_k": 5}, "top_k is not offered"), ({"threshold": 2}, "threshold must be"),
                           ({"min_length": 1.5}, "min_length must be")):
            said = tab.evaluate("(o) => window.converge.race('A fox', o).then(() => 'raced', (e) => e.message)", bad)
            assert words in said, said
