"""HTML export: one self-contained file that plays offline in a real Chromium, keeps hostile text inert, and
leaves nothing behind when it fails."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.errors import UserError
from app.trace.frames import Frame, RecordingWriter, make_header
from app.trace.reading import read_recording
from app.view.payload import recording_payload
from tests.fixtures import HAVE_TWINS
from tests.pages import watch_errors

ROOT = Path(__file__).resolve().parent.parent
HOSTILE = ["</script><script>window.__pwned=1</script>", "<!--", "</SCRIPT >", "\u2028\u2029", "${window.__pwned=1}",
           '<img src=x onerror="window.__pwned=1">', "https://evil.example/x.js", "//cdn.example.com/a.css", "&amp;"]
URL = re.compile(r"(?i)\b(?:https?|ftp|wss?|file|data|javascript|blob):|//[a-z0-9-]+\.[a-z0-9.-]+")
MARKUP = re.compile(r"(?i)\b(?:src|href|action|srcset)\s*=|@import|url\s*\(|<(?:link|iframe|img|object|embed|base)\b")


def external(page: str) -> list[str]:
    """Anything in the file that could name or fetch another resource: URLs anywhere, and outside the
    data block any markup or CSS that loads something."""
    markup = re.sub(r'<script type="application/json" id="converge-data">.*?</script>', "", page, flags=re.S)
    return URL.findall(page) + MARKUP.findall(markup)


def hostile_recording(path: Path) -> Path:
    """A race whose prompt, source names and tokens are all hostile text."""
    words = [h + " " for h in HOSTILE]
    w = RecordingWriter(path, make_header(" ".join(HOSTILE), {"left": {"name": "local-diffusion", "settings": {}},
                                                             "right": {"name": HOSTILE[0], "settings": {}}}))
    n = len(words)
    for i in range(n + 1):
        w.frame("left", Frame(t=0.05 * (i + 1), step=i, tokens=words, masked=[j >= i for j in range(n)],
                              nfe=i + 1, final=i == n))
    for i in range(1, n + 1):
        w.frame("right", Frame(t=0.08 * i, step=i, text="".join(words[:i]), final=i == n))
    w.end("left", "done")
    w.end("right", "done")
    w.close()
    return path


@pytest.fixture
def exported(tmp_path: Path) -> tuple[Path, Path]:
    from app.export.html import export_html

    rec = hostile_recording(tmp_path / "race.jsonl")
    return rec, export_html(rec, tmp_path / "race.html")


def data_of(page_text: str) -> Any:
    m = re.search(r'<script type="application/json" id="converge-data">(.*?)</script>', page_text, re.S)
    assert m, "no data block"
    return json.loads(m.group(1))


def test_the_file_is_self_contained_and_names_no_external_url(exported: tuple[Path, Path]) -> None:
    from app.view.payload import asset

    _, out = exported
    page = out.read_text(encoding="utf-8")
    assert external(page) == []
    assert asset("player.js").strip() in page and asset("player.css").strip() in page
    assert "Content-Security-Policy" in page and "default-src 'none'" in page
    assert page.lower().count("</script") == 3  # the data, the player and the start-up script: nothing else closes one


def test_hostile_text_is_escaped_in_the_data_and_round_trips(exported: tuple[Path, Path]) -> None:
    from app.export.html import script_json

    rec, out = exported
    page = out.read_text(encoding="utf-8")
    block = re.search(r'id="converge-data">(.*?)</script>', page, re.S).group(1)
    for ch in ("<", ">", "&", "\u2028", "\u2029"):
        assert ch not in block
    assert "://" not in block and "\\u003c\\/script\\u003e" in block
    data = data_of(page)
    expected = recording_payload(read_recording(rec), rec.name, run="export", cursor="start")
    assert data == json.loads(json.dumps({**expected, "clock": "time"}))
    assert data["prompt"] == " ".join(HOSTILE)
    assert json.loads(script_json({"s": "</script>\u2028"})) == {"s": "</script>\u2028"}


@given(st.recursive(st.text() | st.integers() | st.none(),
                    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(), kids, max_size=4),
                    max_leaves=12))
def test_script_json_round_trips_and_leaves_nothing_that_can_end_a_script_or_read_as_a_url(data: Any) -> None:
    from app.export.html import script_json

    text = script_json(data)
    assert json.loads(text) == data
    assert not any(c in text for c in "<>&\u2028\u2029") and "//" not in text
    assert all(":" not in s for s in re.findall(r'"(?:[^"\\]|\\.)*"', text))


def test_a_failed_export_leaves_no_file_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from app.export import html

    rec = hostile_recording(tmp_path / "race.jsonl")
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    with pytest.raises(UserError, match="does not exist"):
        html.export_html(rec, tmp_path / "missing" / "x.html")
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not a recording\n")
    with pytest.raises(UserError, match="not a Converge recording"):
        html.export_html(bad, out_dir / "bad.html")
    with pytest.raises(UserError, match="is a folder"):
        html.export_html(rec, out_dir)

    def disk_full(src: Any, dst: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(html.os, "replace", disk_full)
    with pytest.raises(UserError, match="No space left"):
        html.export_html(rec, out_dir / "race.html")
    assert list(out_dir.iterdir()) == []


def test_the_cli_exports_html_and_reports_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from app.cli.export import main

    rec = hostile_recording(tmp_path / "race.jsonl")
    assert main([str(rec), "--format", "html", "--out", str(tmp_path / "r.html")]) == 0
    assert "wrote" in capsys.readouterr().out and (tmp_path / "r.html").is_file()
    assert main([str(rec), "--out", str(tmp_path / "s.html")]) == 0  # the format from the extension
    (tmp_path / "junk.jsonl").write_text('{"type": "header", "schema": 7}\n')
    assert main([str(tmp_path / "junk.jsonl"), "--format", "html", "--out", str(tmp_path / "j.html")]) == 1
    assert "schema 7" in capsys.readouterr().err and not (tmp_path / "j.html").exists()


@pytest.fixture
def tab(browser: Any) -> Iterator[tuple[Any, list[str], list[str]]]:
    """A fresh page that records console errors and every request it makes."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(30_000)
    requests: list[str] = []
    errors = watch_errors(page)
    page.on("request", lambda r: requests.append(r.url))
    yield page, errors, requests
    context.close()


def step_is(page: Any, expr: str) -> None:
    page.wait_for_function(f"() => {{ const s = +document.getElementById('converge').dataset.step; return {expr}; }}")


@pytest.mark.browser
def test_the_exported_file_plays_scrubs_and_changes_speed_offline(exported: tuple[Path, Path], tab: Any) -> None:
    rec_path, out = exported
    page, errors, requests = tab
    rec = read_recording(rec_path)
    last = len({f.t for s in ("left", "right") for f in rec.frames[s]}) - 1
    page.goto(out.as_uri())
    page.wait_for_selector("#converge[data-status=done][data-mode=replay]")
    assert page.get_attribute("#converge", "data-step") == "0"  # opens at the start, ready to play
    assert page.get_attribute("#converge", "data-speed") == "1"  # original timing by default
    page.click("#converge button[aria-label='Play']")
    step_is(page, "s > 0")
    step_is(page, f"s === {last}")
    page.wait_for_selector("#converge[data-playing=false]")
    assert page.text_content("#converge .cv-side[data-side=left] .cv-text") == "".join(h + " " for h in HOSTILE)
    assert page.text_content("#converge .cv-side[data-side=right] .cv-spec") == HOSTILE[0]
    page.fill("#converge .cv-range", "2")  # the scrubber
    step_is(page, "s === 2")
    page.select_option("#converge .cv-speed", "4")
    page.wait_for_selector("#converge[data-speed='4']")
    page.click("#converge button[aria-label='Play']")
    step_is(page, f"s === {last}")
    assert page.evaluate("() => typeof window.__pwned") == "undefined"
    assert page.evaluate("() => document.querySelectorAll('img, iframe, link').length") == 0
    assert requests == [out.as_uri()] and errors == []


def test_record_then_export_from_the_command_line(tmp_path: Path) -> None:
    """The brief's own check: `python -m app record` then `python -m app export --format html`."""
    source = hostile_recording(tmp_path / "source.jsonl")
    pair = ("local-diffusion", "local-ar") if HAVE_TWINS else (f"replay:{source}", f"replay:{source}#right")
    settings = ['{"gen_length": 32}', '{"gen_length": 32}'] if HAVE_TWINS else ['{"speed": 4}', '{"speed": 4}']
    rec, html = tmp_path / "r.jsonl", tmp_path / "r.html"
    for args in (["record", "--left", pair[0], "--right", pair[1], "--prompt", "Once upon a time", "--out", str(rec),
                  "--left-settings", settings[0], "--right-settings", settings[1]],
                 ["export", str(rec), "--format", "html", "--out", str(html)]):
        proc = subprocess.run([sys.executable, "-m", "app", *args], cwd=ROOT, capture_output=True, text=True,
                              timeout=600)
        assert proc.returncode == 0, proc.stderr
    page = html.read_text(encoding="utf-8")
    assert external(page) == []
    assert len(data_of(page)["sides"]["left"]["rows"]) == len(read_recording(rec).frames["left"]) > 1


def test_the_bench_race_has_two_1000_token_panels(tmp_path: Path) -> None:
    from app.bench.player import bench_recording

    rec = read_recording(bench_recording(tmp_path / "bench.jsonl"))
    left, right = rec.frames["left"], rec.frames["right"]
    assert len(left[-1].tokens) == len(right[-1].tokens) == 1000
    assert any(left[0].masked) and not any(left[-1].masked) and left[-1].final and right[-1].final
    assert len(right) == 1000 and [len(f.tokens) for f in right[:3]] == [1, 2, 3]


@pytest.mark.browser
def test_the_player_bench_plays_the_exported_file_to_its_end() -> None:
    from concurrent.futures import ThreadPoolExecutor

    from app.bench.player import bench

    with ThreadPoolExecutor(1) as pool:  # its own thread: this module's browser fixture holds playwright in this one
        result = pool.submit(bench, seconds=1.0, n_tokens=200).result()
    assert "skipped" not in result, result
    for mode in ("normal", "presenter"):
        assert result[mode]["reached_end"] is True
        assert result[mode]["frames"] > 10 and result[mode]["paints"] > 10
        assert result[mode]["frame_ms_p95"] >= result[mode]["frame_ms_p50"] > 0
    assert result["tokens_per_panel"] == 200 and isinstance(result["meets_60fps_p95"], bool)
