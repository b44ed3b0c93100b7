"""The token inspector, the token panels' cheaper rendering and the player's accessibility and lesson hooks, in a
real Chromium: on exported recordings of the local twins, on recordings without confidences and on the live page.
Expected values come from the recordings themselves; progress is read from data-* attributes, never from sleeps."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Iterator

import pytest

from app.analysis.labels import side_labels
from app.trace.frames import Frame, RecordingWriter, make_header
from app.trace.reading import read_recording
from app.view.payload import asset, load_payload
from tests.fixtures import HAVE_TWINS, needs_twins
from tests.pages import browser_tab, serve_page, watch_errors
from tests.wire import expand_rows

ROOT = "#converge"
PARTS = ("panel-left", "panel-right", "legend", "heatmap-left", "heatmap-right", "chart", "metrics", "scrubber",
         "inspector")

# The centre of a visible character of position p in one side's panel (scrolled into view), at the frame shown.
POINT_OF = """([side, p]) => {
  const root = document.getElementById('converge');
  const section = root.querySelector(`.cv-side[data-side=${side}]`);
  const row = root.convergePlayer.state.sides[side].rows[+section.dataset.step];
  const shown = row.tok.map((t, i) => row.m && row.m[i] ? '\\u2591' : t);
  let at = shown.slice(0, p).join('').length, k = 0;
  while (k < shown[p].length - 1 && /\\s/.test(shown[p][k])) k++;
  at += k;
  section.querySelector('.cv-text').scrollIntoView({block: 'center'});
  const walker = document.createTreeWalker(section.querySelector('.cv-text-inner'), NodeFilter.SHOW_TEXT);
  for (let n, seen = 0; (n = walker.nextNode()); seen += n.length) {
    if (seen + n.length > at) {
      const r = document.createRange();
      r.setStart(n, at - seen);
      r.setEnd(n, at - seen + 1);
      const b = r.getBoundingClientRect();
      return {x: b.left + b.width / 2, y: b.top + b.height / 2};
    }
  }
  return null;
}"""

# Every frame of the shared timeline, painted synchronously: each panel's text and, per highlight class, the text
# of the positions that carry it must equal what the rows say. Returns the mismatches.
EVERY_FRAME = """() => {
  const root = document.getElementById('converge'), api = root.convergePlayer, bad = [];
  const classes = {'cv-m': (r, i) => r.m && r.m[i], 'cv-n': (r, i) => r.ch[i] === 1,
                   'cv-c': (r, i) => r.ch[i] === 2, 'cv-r': (r, i) => r.ch[i] === 3};
  const steps = +root.querySelector('.cv-range').max;
  for (let k = 0; k <= steps; k++) {
    api.seek(k);
    api.paint();
    for (const side of ['left', 'right']) {
      const section = root.querySelector(`.cv-side[data-side=${side}]`);
      const row = api.state.sides[side].rows[+section.dataset.step];
      const shown = row ? row.tok.map((t, i) => row.m && row.m[i] ? '\\u2591' : t) : [];
      const inner = section.querySelector('.cv-text-inner');
      if (inner.textContent !== shown.join('')) bad.push([k, side, 'text']);
      for (const [cls, has] of Object.entries(classes)) {
        const want = shown.filter((t, i) => has(row, i)).join('');
        const got = Array.from(inner.querySelectorAll('.' + cls), e => e.textContent).join('');
        if (got !== want) bad.push([k, side, cls, got, want]);
      }
    }
  }
  return bad;
}"""


# the last frame (every position committed), painted now rather than at the next animation frame
LAST_FRAME = "() => { window.converge.seek(1e9); window.converge.paint(); }"


def twins_race(path: Path) -> Path:
    """A real race of the built-in twins (64 tokens each; the diffusion side commits one token a step and reopens
    tokens: the twin is sure of so much that at its defaults it finishes before remasking finds a doubt)."""
    from app.cli.record import record

    record("Once upon a time", "local-diffusion", "local-ar", path, settings={
        "left": {"gen_length": 64, "remask": 0.9, "filter": None, "threshold": None}, "right": {"gen_length": 64}})
    return path


def plain_race(path: Path) -> Path:
    """A race whose sources report no confidences: a masked-diffusion side and a typing (text) side."""
    w = RecordingWriter(path, make_header("No confidences", {"left": {"name": "mercury", "settings": {}},
                                                             "right": {"name": "openai:test", "settings": {}}}))
    words = ["one ", "two ", "three ", "four"]
    for i in range(4):
        w.frame("left", Frame(t=0.1 * (i + 1), step=i, tokens=words, masked=[j > i for j in range(4)], final=i == 3))
        w.frame("right", Frame(t=0.2 * (i + 1), step=i, text="".join(words[:i + 1]), final=i == 3))
    w.end("left", "done")
    w.end("right", "done")
    w.close()
    return path


@pytest.fixture(scope="module")
def twins(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The twins' recording and its exported HTML file."""
    if not HAVE_TWINS:
        pytest.skip("the twin weights are not in assets/models")
    from app.export.html import export_html

    folder = tmp_path_factory.mktemp("twins")
    rec = twins_race(folder / "twins.jsonl")
    return rec, export_html(rec, folder / "twins.html")


def open_file(browser: Any, path: Path, **context: Any) -> tuple[Any, Any, list[str]]:
    ctx = browser.new_context(viewport={"width": 1280, "height": 1000}, **context)
    tab = ctx.new_page()
    tab.set_default_timeout(30_000)
    errors = watch_errors(tab)
    tab.goto(path.as_uri())
    tab.wait_for_selector(f"{ROOT}[data-status=done]")
    return ctx, tab, errors


@pytest.fixture
def tab(browser: Any, twins: tuple[Path, Path]) -> Iterator[Any]:
    ctx, page, errors = open_file(browser, twins[1])
    page.evaluate(LAST_FRAME)
    yield page
    ctx.close()
    assert errors == [], errors


def click_position(page: Any, side: str, p: int, root: str = ROOT) -> None:
    point = page.evaluate(POINT_OF.replace("getElementById('converge')", f"querySelector('{root}')"), [side, p])
    assert point, (side, p)
    page.mouse.click(point["x"], point["y"])


def inspector(page: Any, root: str = ROOT) -> dict[str, Any]:
    return page.evaluate(f"""() => {{
      const i = document.querySelector('{root} .cv-inspector');
      const visible = (sel) => {{ const e = i.querySelector(sel); return !!e && e.offsetParent !== null; }};
      return {{open: i.dataset.open, side: i.dataset.side, pos: i.dataset.pos,
               title: i.querySelector('.cv-insp-title').textContent, now: i.querySelector('.cv-insp-now').textContent,
               events: Array.from(i.querySelectorAll('.cv-insp-event'), e => e.textContent),
               note: visible('.cv-insp-noconf') ? i.querySelector('.cv-insp-noconf').textContent : null,
               spark: visible('.cv-spark')}};
    }}""")


def shown(token: str) -> str:
    """A token as the inspector quotes it."""
    return "\u201c" + token.replace(" ", "\u2423").replace("\n", "\u23ce").replace("\t", "\u21e5") + "\u201d"


def reopened_position(rec: Any) -> int:
    """A left position that was committed, remasked and committed again."""
    for f in rec.frames["left"]:
        for p in f.remasked or []:
            if not rec.frames["left"][-1].masked[p]:
                return p
    pytest.fail("the diffusion twin reopened no position; raise its remask setting")


def test_the_player_writes_no_markup() -> None:
    js = asset("player.js")  # every part of app/view/player/, joined as served
    assert not re.search(r"innerHTML|outerHTML|insertAdjacentHTML|document\.write", js)


@pytest.mark.browser
@needs_twins
def test_the_panels_show_every_frame_exactly(tab: Any) -> None:
    """The panels draw runs of same-styled tokens, rebuilding only the blocks a frame changed: every frame still
    shows each position's text and highlight."""
    assert tab.evaluate(EVERY_FRAME) == []


@pytest.mark.browser
def test_a_1000_token_panel_is_far_fewer_than_1000_nodes(browser: Any, tmp_path: Path) -> None:
    from app.bench.player import bench_recording
    from app.export.html import export_html

    html = export_html(bench_recording(tmp_path / "bench.jsonl"), tmp_path / "bench.html")
    ctx, page, errors = open_file(browser, html)
    count = """(k) => {
      const api = window.converge;
      api.seek(k);
      api.paint();
      return ['left', 'right'].map(s => {
        const inner = document.querySelector(`.cv-side[data-side=${s}] .cv-text-inner`);
        return [inner.querySelectorAll('*').length, inner.textContent.length];
      });
    }"""
    steps = int(page.get_attribute(f"{ROOT} .cv-range", "max"))
    mid = page.evaluate(count, steps // 5)  # the diffusion side half unmasked, in random order
    end = page.evaluate(count, steps)
    ctx.close()
    assert errors == []
    assert mid[0][0] < 500 and end[0][0] < 150 and end[1][0] < 150, (mid, end)  # elements: inline boxes to lay out
    assert end[0][1] == end[1][1] > 1000


@pytest.mark.browser
@needs_twins
def test_clicking_a_token_shows_its_commits_confidence_and_candidates(tab: Any, twins: tuple[Path, Path]) -> None:
    rec = read_recording(twins[0])
    frames = rec.frames["left"]
    p = reopened_position(rec)
    click_position(tab, "left", p)
    tab.wait_for_selector(f"{ROOT} .cv-inspector[data-open=true][data-pos='{p}']")
    got = inspector(tab)
    assert got["side"] == "left" and f"position {p}" in got["title"] and "local-diffusion" in got["title"]
    rows = expand_rows(load_payload(twins[0])["sides"]["left"]["rows"])  # the percents the player was sent
    final = rows[-1]
    assert shown(final["tok"][p]) in got["now"] and f"confidence {final['cf'][p]} %" in got["now"]
    # every commit and reopening of p, in order, with the candidates the model weighed then
    expected, committed, was_masked = [], False, True
    for i, (f, row) in enumerate(zip(frames, rows)):
        kind = None
        if was_masked and not f.masked[p]:
            kind, committed = ("re-committed" if committed else "committed"), True
        elif f.masked[p] and not was_masked:
            kind = "remasked"
        was_masked = f.masked[p]
        if kind:
            cands = dict(row["cd"] or []).get(p, [])
            expected.append(f"{kind}|step {f.step} · frame {i + 1} ·|" + ", ".join(
                f"{shown(name)} {pct} %" for name, pct in cands))
    assert any(e.startswith("remasked") for e in expected) and len(got["events"]) == len(expected)
    for line, want in zip(got["events"], expected):
        kind, when, cands = want.split("|")
        assert line.startswith(when) and f" {kind} " in line and cands and line.endswith(cands), (line, want)
    assert got["spark"] and got["note"] is None
    assert tab.evaluate(f"""() => {{
      const c = document.querySelector('{ROOT} .cv-spark');
      return c.getContext('2d').getImageData(0, 0, c.width, c.height).data.some((v, i) => i % 4 === 3 && v > 0);
    }}""")
    assert tab.text_content(f"{ROOT} .cv-side[data-side=left] .cv-sel") == final["tok"][p]
    # the "now" line follows the frame shown: at the left side's first frame p is still masked
    tab.evaluate("""() => {
      const api = window.converge, left = document.querySelector('.cv-side[data-side=left]');
      for (let k = 0; left.dataset.step !== '0'; k++) { api.seek(k); api.paint(); }
    }""")
    assert "masked" in tab.text_content(f"{ROOT} .cv-insp-now")
    tab.keyboard.press("Escape")
    tab.wait_for_selector(f"{ROOT} .cv-inspector[data-open=false]")
    # the selection's mark goes with the next paint, which may come after the inspector closed
    tab.wait_for_function(f"() => document.querySelector('{ROOT} .cv-text .cv-sel') === null")


@pytest.mark.browser
@needs_twins
def test_the_ar_side_shows_the_step_each_token_was_typed_and_its_alternatives(tab: Any, twins: tuple[Path, Path]
                                                                             ) -> None:
    frames = read_recording(twins[0]).frames["right"]
    p = 5
    click_position(tab, "right", p)
    tab.wait_for_selector(f"{ROOT} .cv-inspector[data-open=true][data-side=right][data-pos='{p}']")
    got = inspector(tab)
    typed = next(i for i, f in enumerate(frames) if len(f.tokens) > p)
    cands = dict(expand_rows(load_payload(twins[0])["sides"]["right"]["rows"])[typed]["cd"])[p]
    assert len(got["events"]) == 1 and got["events"][0].startswith(f"step {frames[typed].step} · frame {typed + 1} ·")
    assert f" appeared {shown(frames[typed].tokens[p])}" in got["events"][0]
    assert got["events"][0].endswith(", ".join(f"{shown(n)} {q} %" for n, q in cands))


@pytest.mark.browser
@needs_twins
def test_the_keyboard_picks_positions_and_escape_closes(tab: Any) -> None:
    step = tab.get_attribute(ROOT, "data-step")
    tab.focus(f"{ROOT} .cv-side[data-side=left] .cv-text")
    for key, pos in (("ArrowRight", 0), ("ArrowRight", 1), ("Shift+ArrowRight", 11), ("ArrowLeft", 10)):
        tab.keyboard.press(key)
        tab.wait_for_selector(f"{ROOT} .cv-inspector[data-open=true][data-side=left][data-pos='{pos}']")
    assert tab.get_attribute(ROOT, "data-step") == step  # the arrows moved the position, not the frame
    tab.keyboard.press("Escape")
    tab.wait_for_selector(f"{ROOT} .cv-inspector[data-open=false]")
    assert tab.evaluate("document.activeElement.classList.contains('cv-text')")
    # the inspector's own pickers: a side and a typed position
    tab.fill(f"{ROOT} .cv-insp-pos", "7")
    tab.wait_for_selector(f"{ROOT} .cv-inspector[data-open=true][data-side=left][data-pos='7']")
    tab.select_option(f"{ROOT} .cv-insp-side", "right")
    tab.wait_for_selector(f"{ROOT} .cv-inspector[data-open=true][data-side=right][data-pos='7']")
    tab.focus(f"{ROOT} .cv-insp-pos")
    tab.keyboard.press("Escape")
    tab.wait_for_selector(f"{ROOT} .cv-inspector[data-open=false]")
    assert tab.evaluate("document.activeElement.closest('.cv-side').dataset.side") == "right"


@pytest.mark.browser
@needs_twins
def test_resting_the_pointer_on_a_token_inspects_it(tab: Any) -> None:
    point = tab.evaluate(POINT_OF, ["left", 3])
    tab.mouse.move(point["x"], point["y"])
    tab.wait_for_selector(f"{ROOT} .cv-inspector[data-open=true][data-side=left][data-pos='3']")


@pytest.mark.browser
def test_a_source_without_confidences_says_so(browser: Any, tmp_path: Path) -> None:
    from app.export.html import export_html

    html = export_html(plain_race(tmp_path / "plain.jsonl"), tmp_path / "plain.html")
    ctx, page, errors = open_file(browser, html)
    page.evaluate(LAST_FRAME)
    for side, p, word in (("left", 2, "committed"), ("right", 1, "appeared")):
        click_position(page, side, p)
        page.wait_for_selector(f"{ROOT} .cv-inspector[data-open=true][data-side={side}][data-pos='{p}']")
        got = inspector(page)
        assert got["note"] and "no confidences" in got["note"] and not got["spark"]
        assert len(got["events"]) == 1 and f" {word} " in got["events"][0] and "candidates" not in got["events"][0]
    ctx.close()
    assert errors == []


def entropy_race(path: Path) -> Path:
    """A schema 2 race whose left side reports each predicted position's entropy and the accepted one's candidates."""
    w = RecordingWriter(path, make_header("Entropy", {"left": {"name": "local-uniform", "settings": {}},
                                                      "right": {"name": "local-ar", "settings": {}}}))
    w.frame("left", Frame(t=0.1, step=0, tokens=["qx ", "zz"], states="nn"))
    w.frame("left", Frame(t=0.2, step=1, tokens=["cat ", "zz"], states="an", confidence=[0.9, 0.1], committed=[0],
                          candidates=[[0, [["cat ", 0.9], ["dog ", 0.05]]]], entropy=[0.4321, 2.5]))
    w.frame("left", Frame(t=0.3, step=2, tokens=["cat ", "sat"], states="aa", confidence=[0.9, 0.8], committed=[1],
                          candidates=[[1, [["sat", 0.8]]]], entropy=[None, 1.234], final=True, text="cat sat"))
    w.frame("right", Frame(t=0.2, step=0, tokens=["cat"], confidence=[0.5], final=True, text="cat"))
    w.end("left", "done")
    w.end("right", "done")
    w.close()
    return path


@pytest.mark.browser
def test_the_inspector_shows_a_positions_entropy_beside_its_candidates(browser: Any, tmp_path: Path) -> None:
    from app.export.html import export_html

    html = export_html(entropy_race(tmp_path / "entropy.jsonl"), tmp_path / "entropy.html")
    ctx, page, errors = open_file(browser, html)
    page.evaluate(LAST_FRAME)
    click_position(page, "left", 1)
    page.wait_for_selector(f"{ROOT} .cv-inspector[data-open=true][data-side=left][data-pos='1']")
    got = inspector(page)
    assert "entropy 1.23 nats" in got["now"]
    accepted = [e for e in got["events"] if "accepted" in e]
    assert accepted and "top candidates" in accepted[-1] and "entropy 1.23 nats" in accepted[-1]
    click_position(page, "left", 0)
    page.wait_for_selector(f"{ROOT} .cv-inspector[data-open=true][data-side=left][data-pos='0']")
    got = inspector(page)
    assert "entropy" not in got["now"]  # the last frame predicted nothing there
    assert any("top candidates" in e and "entropy 0.43 nats" in e for e in got["events"])
    ctx.close()
    assert errors == []


@pytest.mark.browser
@needs_twins
def test_the_inspector_works_on_a_live_race_in_the_page(browser: Any, recordings: Path) -> None:
    root = "#player .cv-player"
    with serve_page() as url, browser_tab(browser, url, timeout_ms=120_000) as page:
        page.wait_for_selector(f"{root}[data-status]")
        for side, prefix in (("left", "local-diffusion"), ("right", "local-ar")):
            page.click(f"#{side}-settings button.label-wrap")
            page.click(f"#{side}-{prefix}-gen_length input")
            page.click(f"#{side}-{prefix}-gen_length [role=option][aria-label='32']")
        page.locator("#prompt textarea").fill("Once upon a time")
        before = page.evaluate(f"document.querySelector('{root}').convergePlayer.state.run")
        page.click("#run")
        page.wait_for_function(f"""(before) => {{
          const r = document.querySelector('{root}'), st = r.convergePlayer.state;
          return st.run !== before && st.mode === 'live' && st.done && r.dataset.status === 'done'
            && st.autoPlayed && !st.playing;
        }}""", arg=before)  # the race and its replay at the watch pace over: the panels hold still
        click_position(page, "left", 2, root)
        page.wait_for_selector(f"{root} .cv-inspector[data-open=true][data-side=left][data-pos='2']")
        got = inspector(page, root)
        assert got["spark"] and got["note"] is None
        assert any(" committed " in e and "%" in e for e in got["events"]), got["events"]
        page.focus(f"{root} .cv-insp-pos")  # Escape from inside the inspector, wherever the page left the focus
        page.keyboard.press("Escape")
        page.wait_for_selector(f"{root} .cv-inspector[data-open=false]")


@pytest.mark.browser
def test_lesson_parts_exist_and_the_spotlight_shows_in_both_modes(browser: Any, tmp_path: Path) -> None:
    from app.export.html import export_html

    html = export_html(plain_race(tmp_path / "plain.jsonl"), tmp_path / "plain.html")
    ctx, page, errors = open_file(browser, html, reduced_motion="reduce")
    style = """(part) => {
      const e = document.querySelector(`[data-part="${part}"]`);
      document.querySelectorAll('.cv-spotlight').forEach(x => x.classList.remove('cv-spotlight'));
      e.classList.add('cv-spotlight');
      const s = getComputedStyle(e), after = getComputedStyle(e, '::after'), box = e.getBoundingClientRect();
      return {outline: s.outlineWidth, ring: after.borderTopWidth, animation: after.animationName,
              visible: box.width > 0 && box.height > 0, position: s.position};
    }"""
    for part in PARTS:
        got = page.evaluate(style, part)
        assert got["visible"] and got["outline"] == "4px" and got["ring"] == "5px", (part, got)
        assert got["animation"] == "none", part  # reduced motion: no pulse
    page.keyboard.press("p")
    page.wait_for_selector(f"{ROOT}[data-presenter=true]")
    for part in ("legend", "panel-left", "panel-right", "scrubber", "inspector"):
        assert page.evaluate(style, part)["visible"], part
    assert page.evaluate(style, "legend")["position"] == "sticky"  # the legend stays on screen while scrolling
    ctx.close()
    assert errors == []
    ctx, page, errors = open_file(browser, html)
    assert page.evaluate(style, "chart")["animation"] == "cv-pulse"
    ctx.close()


@pytest.mark.browser
def test_every_control_is_reachable_by_keyboard_labelled_and_ringed(browser: Any, tmp_path: Path) -> None:
    from app.export.html import export_html

    html = export_html(plain_race(tmp_path / "plain.jsonl"), tmp_path / "plain.html")
    ctx, page, errors = open_file(browser, html)
    reached = []
    for _ in range(40):
        page.keyboard.press("Tab")
        focused = page.evaluate("""() => {
          const e = document.activeElement;
          if (!e || !e.closest('#converge')) return null;
          const s = getComputedStyle(e);
          return {key: e.className + '|' + (e.getAttribute('aria-label') || e.id), ring: s.outlineStyle !== 'none'
                  && parseFloat(s.outlineWidth) >= 2, name: e.getAttribute('aria-label') || (e.labels && e.labels[0]
                  && e.labels[0].textContent) || e.textContent};
        }""")
        if focused and focused["key"] not in [r["key"] for r in reached]:
            reached.append(focused)
    controls = page.evaluate("""() => Array.from(document.querySelectorAll(
        '#converge button, #converge input, #converge select, #converge [tabindex]'))
      .filter(e => e.offsetParent !== null && !e.disabled)
      .map(e => e.className + '|' + (e.getAttribute('aria-label') || e.id))""")
    assert sorted(r["key"] for r in reached) == sorted(controls)
    assert all(r["ring"] and r["name"].strip() for r in reached), reached
    assert page.get_attribute(f"{ROOT} .cv-range", "aria-valuetext").startswith("t = ")
    assert page.get_attribute(f"{ROOT} .cv-side[data-side=left]", "aria-label") == "Left panel: mercury"
    ctx.close()
    assert errors == []


@pytest.mark.browser
def test_a_compare_label_titles_the_panel(browser: Any, tmp_path: Path) -> None:
    from app.export.html import export_html

    sources = {"left": {"name": "local-diffusion", "settings": {"scoring": "confidence"}},
               "right": {"name": "local-diffusion", "settings": {"scoring": "random"}}}
    w = RecordingWriter(tmp_path / "compare.jsonl", make_header("Compare", sources))
    for side in ("left", "right"):
        w.frame(side, Frame(t=0.1, step=0, tokens=["a "], masked=[False], final=True))
        w.end(side, "done")
    w.close()
    html = export_html(tmp_path / "compare.jsonl", tmp_path / "compare.html")
    ctx, page, errors = open_file(browser, html)
    labels = side_labels(sources)
    assert labels["left"] != labels["right"]
    for side in ("left", "right"):
        assert page.text_content(f"{ROOT} .cv-side[data-side={side}] .cv-spec") == labels[side]
    ctx.close()
    assert errors == []
