"""Issue 50 item 1: the line under the metrics that says why the side with fewer forward passes finished later comes
from the race itself: each side's passes and seconds a pass, read from its frames, multiply out to within 20% of the
time to final shown beside them, and the line appears only where they explain a gap larger than noise (10% in passes
and in time) between a side whose passes fix several tokens and one that types. Rendering a recording or an export
runs no model and times nothing. The lessons' races and a twins race are run for real and checked."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest

from app.cli.record import record
from app.export.html import export_html
from app.lessons.guided import LESSONS
from app.trace.frames import Frame, RecordingWriter, make_header
from app.trace.reading import read_recording
from app.view import why
from app.view.payload import load_payload
from tests.fixtures import needs_twins
from tests.pages import browser_tab

ROOT_DIR = Path(__file__).resolve().parent.parent
WORDS = [f"w{i} " for i in range(8)]
PAGE = "#player .cv-player"  # the player on the served page (an export's is #converge)


def race(path: Path, diffusion_s: float, ar_s: float, first_pass_s: float | None = None,
         ar_tokens: int = 8) -> Path:
    """A recording: a diffusion side that fills 8 tokens in 2 passes, its first at `first_pass_s` (half its time by
    default), finishing at `diffusion_s`, and an AR side that types `ar_tokens` tokens a pass each, evenly, finishing
    at `ar_s`."""
    sources = {"left": {"name": "local-diffusion", "settings": {}}, "right": {"name": "local-ar", "settings": {}}}
    w = RecordingWriter(path, make_header("p", sources))
    first = diffusion_s / 2 if first_pass_s is None else first_pass_s
    w.frame("left", Frame(t=0.0, step=0, tokens=[""] * 8, masked=[True] * 8, nfe=0))
    w.frame("left", Frame(t=first, step=1, tokens=WORDS[:4] + [""] * 4, masked=[False] * 4 + [True] * 4,
                          nfe=1, committed=[0, 1, 2, 3]))
    w.frame("left", Frame(t=diffusion_s, step=2, tokens=WORDS, masked=[False] * 8, nfe=2, committed=[4, 5, 6, 7],
                          final=True))
    words = [f"w{i} " for i in range(ar_tokens)]
    for i in range(1, ar_tokens + 1):
        w.frame("right", Frame(t=ar_s * i / ar_tokens, step=i, tokens=words[:i], nfe=i, committed=[i - 1],
                               final=i == ar_tokens))
    w.end("left", "done", None)
    w.end("right", "done", None)
    w.close()
    return path


def sides_in(line: str, labels: dict[str, str]) -> dict[str, tuple[int, float, float, str]]:
    """Per side, (passes, seconds a pass, passes x seconds a pass, time to final as written) as the line states
    them after the side's title."""
    out = {}
    for side, label in labels.items():
        found = re.search(re.escape(label) + r"(?: made)? (\d+) passes at ([\d.]+) ms a pass = ([\d.]+) s of its "
                          r"([\d.]+ s) to final", line)
        assert found, (label, line)
        out[side] = (int(found[1]), float(found[2]) / 1000, float(found[3]), found[4])
    return out


def assert_multiplies_out(payload: dict[str, Any]) -> None:
    """The payload's why line names both sides, and each side's passes and time are its metrics' (as the table writes
    them), its passes x seconds a pass is the product it states and lies within 20% of its time to final."""
    line = payload["why"]
    sides = payload["sides"]
    stated = sides_in(line, {side: entry["label"] for side, entry in sides.items()})
    for side, (passes, per_pass, product, time_text) in stated.items():
        m = sides[side]["metrics"]
        assert passes == m["nfe"] and time_text == why.seconds_text(m["t_final"]), (side, line)
        assert product == pytest.approx(passes * per_pass, rel=0.01, abs=0.002), (side, line)
        assert abs(passes * per_pass - m["t_final"]) <= 0.2 * m["t_final"] + 0.002, (side, line)
    assert "On an H200 (measured elsewhere" in line and f"{why.GPU_BLOCK_COST:.2f}x" in line
    fewer, more = sorted(stated, key=lambda side: stated[side][0])
    said = re.search(r"took ([\d.]+)x one of", line)
    assert said and float(said[1]) == pytest.approx(stated[fewer][1] / stated[more][1], rel=0.02, abs=0.05)
    ratio = float(said[1])
    assert ratio > 1  # each pass over many positions cost more than one over a single position, as the line says


def test_the_line_says_why_with_the_races_own_passes_and_seconds_a_pass(tmp_path: Path) -> None:
    payload = load_payload(race(tmp_path / "cpu.jsonl", diffusion_s=1.0, ar_s=0.5))
    line = payload["why"]
    assert line.startswith("Why local-ar finished first with more forward passes: local-diffusion made 2 passes at "
                           "500 ms a pass = 1.000 s of its 1.000 s to final, local-ar 8 passes at 62.5 ms a pass")
    assert "local-diffusion fixed 4.00 tokens a pass" in line
    assert "took 8.0x one of local-ar's" in line  # 500 ms against 62.5 ms
    assert_multiplies_out(payload)


def test_no_line_when_fewer_passes_also_finish_first(tmp_path: Path) -> None:
    assert "why" not in load_payload(race(tmp_path / "gpu.jsonl", diffusion_s=0.3, ar_s=0.5))


def test_no_line_when_the_times_are_within_noise(tmp_path: Path) -> None:
    assert "why" in load_payload(race(tmp_path / "apart.jsonl", diffusion_s=0.56, ar_s=0.5))
    assert "why" not in load_payload(race(tmp_path / "close.jsonl", diffusion_s=0.54, ar_s=0.5))  # 8% apart


def test_no_line_when_the_passes_are_within_noise(tmp_path: Path) -> None:
    assert "why" not in load_payload(race(tmp_path / "few.jsonl", diffusion_s=1.0, ar_s=0.5, ar_tokens=2))


def test_no_line_when_the_passes_do_not_explain_a_sides_time(tmp_path: Path) -> None:
    # the diffusion side's first pass comes at 0.9 s: its passes (0.1 s a pass after it) account for 0.2 s of 1 s
    late = load_payload(race(tmp_path / "late.jsonl", diffusion_s=1.0, ar_s=0.5, first_pass_s=0.9))
    assert "why" not in late
    assert "why" in load_payload(race(tmp_path / "soon.jsonl", diffusion_s=1.0, ar_s=0.5, first_pass_s=0.45))


def test_the_rule_wants_one_side_that_types_and_one_that_fixes_several_tokens_a_pass() -> None:
    fewer = why.Paced("local-diffusion", 16, 0.5, 4.0, 0.03, typed=False)
    typer = why.Paced("local-ar", 64, 0.3, 1.0, 0.0045, typed=True)
    assert why.why_line([fewer, typer]) and why.why_line([typer, fewer])
    assert why.why_line([fewer, why.Paced("local-diffusion b", 64, 0.3, 1.0, 0.0045, typed=False)]) is None
    assert why.why_line([why.Paced("x", 16, 0.5, 1.0, 0.03, typed=False), typer]) is None  # one token a pass
    assert why.why_line([fewer, None]) is None and why.why_line([fewer]) is None  # a side has not finished


def test_an_ar_twins_frames_type_and_a_diffusion_twins_do_not(tmp_path: Path) -> None:
    rec = read_recording(race(tmp_path / "r.jsonl", diffusion_s=1.0, ar_s=0.5))
    assert why._typed(rec.frames["right"]) and not why._typed(rec.frames["left"])


def test_a_stopped_side_gets_no_line(tmp_path: Path) -> None:
    path = race(tmp_path / "r.jsonl", diffusion_s=1.0, ar_s=0.5)
    lines = [ln.replace('"final": true', '"final": false') if '"side": "left"' in ln else ln
             for ln in path.read_text().splitlines()]  # its last frame, at 1 s and 2 passes, is not its answer
    assert sum('"final": true' in ln for ln in lines) == 1
    (tmp_path / "stopped.jsonl").write_text("\n".join(lines) + "\n")
    assert "why" in load_payload(path) and "why" not in load_payload(tmp_path / "stopped.jsonl")


def test_rendering_a_recording_and_its_export_loads_no_model_and_times_nothing(tmp_path: Path) -> None:
    path = race(tmp_path / "cpu.jsonl", diffusion_s=1.0, ar_s=0.5)
    script = ("import sys\nfrom app.view.payload import load_payload\nfrom app.export.html import export_html\n"
              f"assert 'why' in load_payload({str(path)!r})\nexport_html({str(path)!r}, {str(tmp_path / 'x.html')!r})\n"
              "print(sorted(m for m in sys.modules if m.startswith(('app.measure', 'app.engine.model'))))\n")
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT_DIR, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"  # neither the pass timer nor the model it would load was imported


def lesson_race(n: int, changed: bool = False) -> tuple[str, str, str, dict[str, dict[str, Any]]]:
    """Lesson `n` (numbered as the page numbers them) as the page races it: prompt, sources and settings, its pins on
    a diffusion side."""
    x = LESSONS[n - 1]
    sources = x.changed() if changed else x.sources()
    settings = {side: {**given, **({"pins": x.pins} if x.pins and spec == "local-diffusion" else {})}
                for side, (spec, given) in sources.items()}
    return x.prompt, sources["left"][0], sources["right"][0], settings


RACES = {
    "lesson 3, its try it (16 passes against 64)": lesson_race(3, changed=True),
    "lesson 12": lesson_race(12),
    "lesson 13 (32 passes against 256)": lesson_race(13),
    "lesson 15": lesson_race(15),
    "lesson 17": lesson_race(17),
    "the twins at the page's defaults": ("Once upon a time", "local-diffusion", "local-ar", {}),
}


@needs_twins
@pytest.mark.parametrize("name", RACES)
def test_a_real_race_has_no_line_or_one_whose_numbers_multiply_out(name: str, tmp_path: Path) -> None:
    prompt, left, right, settings = RACES[name]
    out = tmp_path / "race.jsonl"
    final = record(prompt, left, right, out, settings=settings)
    payload = load_payload(out)
    assert final.get("why") == payload.get("why")  # the live race and its recording say the same
    if "why" in payload:
        assert_multiplies_out(payload)


@pytest.mark.parametrize("example", sorted(p.name for p in (ROOT_DIR / "recordings" / "examples").glob("*.jsonl")))
def test_a_bundled_example_has_no_line_or_one_whose_numbers_multiply_out(example: str) -> None:
    payload = load_payload(ROOT_DIR / "recordings" / "examples" / example)
    if "why" in payload:
        assert_multiplies_out(payload)


@pytest.fixture
def page(browser: Any, server_url: str) -> Iterator[Any]:
    with browser_tab(browser, server_url) as tab:
        tab.wait_for_selector(f"{PAGE}[data-status='idle'], {PAGE}[data-mode='replay']")
        yield tab


def shown_line(tab: Any, root: str) -> str:
    """The why line as the player shows it, once a replay is loaded, checked against the metrics table beside it:
    each side's passes and time to final in the line are the table's, and they multiply out."""
    line = tab.locator(f"{root} [data-part=why]")
    line.wait_for(state="visible")
    text = line.inner_text()
    labels = {s: tab.locator(f"{root} .cv-side[data-side={s}] .cv-spec").inner_text().strip()
              for s in ("left", "right")}
    for side, (passes, per_pass, _, time_text) in sides_in(text, labels).items():
        cell = root + " [data-metric={}] td[data-side=" + side + "]"
        assert tab.locator(cell.format("nfe")).inner_text() == str(passes)
        assert tab.locator(cell.format("t_final")).inner_text() == time_text
        assert abs(passes * per_pass - float(time_text.split()[0])) <= 0.2 * float(time_text.split()[0]) + 0.002
    return text


@pytest.mark.browser
def test_the_page_shows_the_line_under_the_metrics_with_the_tables_numbers(page: Any, tmp_path: Path) -> None:
    path = race(tmp_path / "cpu.jsonl", diffusion_s=1.0, ar_s=0.5)
    want = load_payload(path)["why"]
    page.set_input_files("#load-file input[type=file]", str(path))
    page.wait_for_function("([sel, want]) => (document.querySelector(sel) || {}).textContent === want",
                           arg=[f"{PAGE} [data-part=why]", want])  # the upload replaced whatever was shown
    assert shown_line(page, PAGE) == want
    page.set_input_files("#load-file input[type=file]", str(race(tmp_path / "gpu.jsonl", diffusion_s=0.3, ar_s=0.5)))
    page.wait_for_selector(f"{PAGE} [data-part=why]", state="hidden")  # a race it does not explain: no line


@pytest.mark.browser
def test_an_html_export_shows_the_line(browser: Any, tmp_path: Path) -> None:
    path = race(tmp_path / "cpu.jsonl", diffusion_s=1.0, ar_s=0.5)
    html = export_html(path, tmp_path / "cpu.html")
    with browser_tab(browser, html.as_uri()) as tab:
        tab.wait_for_selector("#converge[data-status='done']")
        assert shown_line(tab, "#converge") == load_payload(path)["why"]
