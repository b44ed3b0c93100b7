"""The hostile text catalogue (tests/hostile.py) through every path: the prompt box, model output from the wire server,
recordings written, read, listed, uploaded and loaded, and the exported HTML file. Nothing executes (`window.__pwned`
stays unset, no element the text describes appears) and every string is shown as text, or refused with a clear message
(a prompt over the page's limit)."""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path
from typing import Any

import pytest

from app.analysis.changes import SideAnalyzer, display_tokens, text_tokens
from app.errors import UserError
from app.export.html import export_html, render
from app.race.run import Race
from app.sources.base import make_source
from app.trace import library
from app.trace.frames import SIDES, Frame, RecordingWriter, make_header
from app.trace.reading import read_recording
from app.ui.live import live_updates
from app.view.payload import load_payload, wire_rows
from tests.fixtures import needs_twins
from tests.hostile import BIG, HOSTILE, SENTINEL, as_stored, big_prompt, big_token, joined
from tests.reliability import tally
from tests.test_ui import ROOT, choose, examples, page, side_text, start, wait_status  # noqa: F401 (page fixtures)
from tests.wire_server import script

PATHS = ("prompt box", "built-in models", "wire-server output", "recording", "upload and library", "HTML export",
         "GIF and MP4 export")
TEXT_AREAS = (".cv-text, .cv-prompt-text, .cv-spec, .cv-message, .cv-caption-line, .cv-warning, .cv-status, "
              "#library-table [role=gridcell] span, #library-pick ul")
INJECTED = ("script, img, svg, iframe, object, embed, video, audio, source, form, button, input, textarea, base, meta, "
            "link, style, math, template, details, a, noscript, body")
NOTHING_RAN = f"""([areas, injected]) => ({{
    pwned: typeof window.{SENTINEL},
    injected: [...document.querySelectorAll(areas)].reduce((n, area) => n + area.querySelectorAll(injected).length, 0),
    handlers: [...document.querySelectorAll('*')].filter(e => [...e.attributes].some(a => /^on/i.test(a.name))).length}})"""  # noqa: E501 - JavaScript run in the page as written
NOTHING = {"pwned": "undefined", "injected": 0, "handlers": 0}
LIMIT = re.compile(r"over [\d,]+ characters")


def shown(text: str) -> str:
    """What a panel shows for a text state: its display tokens (markers such as <|im_end|> hidden), joined."""
    return "".join(text_tokens(as_stored(text)))


def missing(panel: str, entries: dict[str, str], tokens: bool = False) -> list[str]:
    """The names of the entries whose displayed form is not in the panel's text (a token source shows tokens as they
    are)."""
    return [name for name, text in entries.items() if (as_stored(text) if tokens else shown(text)) not in panel]


def hostile_recording(path: Path, prompt: str | None = None, extra: str = "") -> Path:
    """A race whose prompt, caption, source names, tokens, texts and end messages are all hostile text."""
    words = [h + " " for h in HOSTILE.values()] + ([extra] if extra else [])
    header = make_header(joined() if prompt is None else prompt,
                         {"left": {"name": "local-diffusion", "settings": {"note": HOSTILE["script-tag"]}},
                          "right": {"name": "openai:" + HOSTILE["img-onerror"], "settings": {}}})
    header["caption"] = HOSTILE["dollar-brace"] + " " + HOSTILE["double-brace"]
    w = RecordingWriter(path, header)
    n = len(words)
    for i in range(0, n + 1, 8):
        w.frame("left", Frame(t=0.01 * i, step=i, tokens=words, masked=[j >= i for j in range(n)], nfe=i))
    w.frame("left", Frame(t=0.01 * (n + 1), step=n + 1, tokens=words, masked=[False] * n, final=True))
    for i in range(1, n + 1, 8):
        w.frame("right", Frame(t=0.012 * i, step=i, text="".join(words[:i])))
    w.frame("right", Frame(t=0.012 * (n + 1), step=n + 1, text="".join(words), final=True))
    w.end("left", "done")
    w.end("right", "error", HOSTILE["close-script"] + " " + HOSTILE["svg-onload"])
    w.close()
    return path


def nothing_ran(page: Any) -> dict[str, Any]:
    """What hostile text did in this Chromium page (a sentinel global, injected elements, event-handler attributes);
    counts the check and every trace of text that ran, for the reliability table."""
    found = page.evaluate(NOTHING_RAN, [TEXT_AREAS, INJECTED])
    tally("browser_checks")
    tally("executed", (found["pwned"] != "undefined") + found["injected"] + found["handlers"])
    return found


def paste(page: Any, selector: str, text: str) -> None:
    """Puts `text` into a text field the way a paste does: one value change, one input event (playwright's fill makes
    Gradio's textarea lay a 100,000-character word out over and over, which takes seconds)."""
    page.eval_on_selector(selector, "(el, text) => { el.value = text; "
                                    "el.dispatchEvent(new Event('input', {bubbles: true})); }",
                          text)


@pytest.fixture
def env(fast_env: str) -> str:
    return fast_env


def test_the_catalogue_holds_every_kind_of_hostile_text_the_issue_names() -> None:
    names = set(HOSTILE) | set(BIG)
    tally("hostile_strings", len(names))  # what ran in Chromium is tallied by nothing_ran, per browser check
    tally("hostile_paths", len(PATHS))
    assert len(names) >= 50
    kinds = {"script-tag", "img-onerror", "javascript-url", "close-script", "dollar-brace", "double-brace",
             "markdown-html-mix", "rtl-override", "zero-width", "combining-zalgo", "nul", "invalid-utf8",
             "token-100k", "prompt-1mb"}
    assert kinds <= names, kinds - names
    assert len(big_token()) == 100_000 and " " not in big_token()
    assert len(big_prompt().encode("utf-8")) == 1_000_000


@pytest.mark.parametrize("name", list(HOSTILE))
def test_each_entry_round_trips_through_a_recording_the_library_and_an_export(name: str, tmp_path: Path) -> None:
    text = HOSTILE[name]
    path = tmp_path / "one.jsonl"
    w = RecordingWriter(path, make_header(text, {"left": {"name": "openai:" + text, "settings": {}}}))
    w.frame("left", Frame(t=0.0, step=0, tokens=[text, "x"], masked=[False, True]))
    w.frame("left", Frame(t=0.1, step=1, text=text, final=True))
    w.end("left", "error", text)
    w.close()
    rec = read_recording(path)
    stored = as_stored(text)
    assert rec.warnings == [] and rec.header["prompt"] == stored and rec.frames["left"][-1].text == stored
    assert rec.frames["left"][0].tokens[0] == stored and rec.ends["left"]["message"] == stored
    entry = library.describe(path)
    assert entry["prompt"] == stored and entry["sources"] == "openai:" + stored
    assert entry["problem"] == f"Failed: left ({stored[:120]})."  # the side ended in an error: the library says so
    payload = load_payload(path)
    assert payload["prompt"] == stored and payload["sides"]["left"]["message"] == stored
    html = render(payload)
    data = html.split('<script type="application/json" id="converge-data">', 1)[1].split("</script>", 1)[0]
    assert "<" not in data and json.loads(data)["prompt"] == stored
    tally("hostile_inputs", 4)  # written, read, listed, exported


@pytest.mark.parametrize("fmt", ["gif", "mp4"])
def test_a_recording_of_every_entry_exports_as_a_video(fmt: str, tmp_path: Path) -> None:
    from app.export.video import MIN_SIZE, export_video

    path = hostile_recording(tmp_path / "hostile.jsonl")
    out = export_video(path, tmp_path / f"hostile.{fmt}", fmt=fmt, fps=5, size=MIN_SIZE)
    if fmt == "gif":
        from PIL import Image

        with Image.open(out) as im:
            assert im.n_frames >= 5
    else:
        imageio_ffmpeg = pytest.importorskip("imageio_ffmpeg")
        frames, _ = imageio_ffmpeg.count_frames_and_secs(str(out))
        assert frames >= 5
    tally("hostile_inputs", len(HOSTILE))


@needs_twins
def test_each_entry_as_a_prompt_to_the_built_in_twins_is_answered_or_refused_clearly() -> None:
    twins = [make_source("local-diffusion", gen_length=8, steps=8, block_length=8),
             make_source("local-ar", gen_length=8)]
    for name, text in HOSTILE.items():
        for source in twins:
            try:
                frames = list(source.stream(text, threading.Event()))
            except UserError as e:
                assert "shorten the prompt" in str(e), (name, source.name, e)
                continue
            assert frames[-1].final, (name, source.name)
            analyzer = SideAnalyzer()
            json.dumps(wire_rows([analyzer.add(f) for f in frames]), allow_nan=False)
    tally("hostile_inputs", 2 * len(HOSTILE))


def test_prompts_and_model_output_over_the_wire_reach_the_recording_as_text(fast_env: str, tmp_path: Path) -> None:
    prompt = joined() + "\nECHO:" + joined()
    out = tmp_path / "race.jsonl"
    final: dict[str, Any] = {}
    for update in live_updates(Race(prompt, "mercury", "openai:gpt-test", out=out), interval=0.05):
        final = update
    assert [final["sides"][s]["status"] for s in SIDES] == ["done", "done"], final["sides"]
    rec = read_recording(out)
    assert rec.header["prompt"] == as_stored(prompt)
    for side in SIDES:
        answer = rec.frames[side][-1].text
        assert answer == as_stored(joined()), side
        assert missing("".join(display_tokens(rec.frames[side][-1])), HOSTILE) == []
    tally("hostile_inputs", 2 * len(HOSTILE))


def test_a_100k_character_token_from_the_model_is_kept_whole(fast_env: str, tmp_path: Path) -> None:
    token = big_token()
    chunks = [b'data: {"choices": [{"index": 0, "delta": {"content": "%s"}}]}\n\n' % token[:50_000].encode(),
              b'data: {"choices": [{"index": 0, "delta": {"content": "%s"}, "finish_reason": "stop"}]}\n\n'
              % token[50_000:].encode(), b"data: [DONE]\n\n"]
    out = tmp_path / "big.jsonl"
    final: dict[str, Any] = {}
    for update in live_updates(Race("big", f"openai:{script(chunks)}", "openai:gpt-test", out=out), interval=0.05):
        final = update
    assert final["sides"]["left"]["status"] == "done"
    assert read_recording(out).frames["left"][-1].text == token
    html = export_html(out, tmp_path / "big.html").read_text(encoding="utf-8")
    assert token in html
    tally("hostile_inputs", 3)


def test_the_reliability_table_counts_browser_checks_that_ran_and_says_not_run_without_them() -> None:
    from collections import Counter

    from tests.reliability import NOT_RUN, table

    without = table(Counter({"hostile_strings": 70, "hostile_inputs": 100}))
    assert "| hostile text that executed in those checks" in without and f"| {NOT_RUN} |" in without
    assert "pages checked in Chromium" not in without
    ran = table(Counter({"hostile_strings": 70, "browser_checks": 4, "executed": 0}))
    assert "| pages checked in Chromium for hostile text that ran | 4 |" in ran and NOT_RUN not in ran
    assert ran.splitlines()[-1].endswith("| 0 |")


@pytest.mark.browser
def test_the_prompt_box_and_streamed_output_show_every_entry_as_text(page: Any, fast_env: str,
                                                                     recordings: Path) -> None:
    text = joined()
    choose(page, "left", "mercury")
    choose(page, "right", "openai", HOSTILE["img-onerror"])
    start(page, text + "\nECHO:" + text)
    typed = page.input_value("#prompt textarea")
    wait_status(page, "done")
    assert nothing_ran(page) == NOTHING
    rec = read_recording(next(recordings.glob("*.jsonl")))
    assert rec.header["prompt"] == as_stored(typed)
    assert page.text_content("#player .cv-prompt-text") == as_stored(typed)
    for side in SIDES:
        panel = side_text(page, side, "cv-text")
        assert panel == "".join(display_tokens(rec.frames[side][-1])), side
        assert missing(panel, {k: v.replace("\r\n", "\n").replace("\r", "\n") for k, v in HOSTILE.items()}) == []
    assert "openai:" + HOSTILE["img-onerror"] in side_text(page, "right", "cv-spec")
    tally("hostile_inputs", 3 * len(HOSTILE))  # typed, echoed by a diffusing stream, echoed by a typing stream


@pytest.mark.browser
def test_prompts_over_the_limit_are_refused_clearly_and_a_huge_token_streams_as_text(
        page: Any, fast_env: str, recordings: Path) -> None:
    for _name, make in BIG.items():
        paste(page, "#prompt textarea", make())
        page.click("#run")  # the page's input guard (app/ui/guard.py) answers before the race handler runs
        page.get_by_text(LIMIT).first.wait_for()
        assert list(recordings.glob("*.jsonl")) == []  # refused before anything was recorded
        tally("hostile_inputs")
    token = big_token()
    model = script([b'data: {"choices": [{"index": 0, "delta": {"content": "%s"}, "finish_reason": "stop"}]}\n\n'
                    % token.encode(), b"data: [DONE]\n\n"])
    choose(page, "left", "openai", model)
    choose(page, "right", "openai", "gpt-test")
    start(page, "ECHO:" + HOSTILE["script-tag"])
    wait_status(page, "done")
    assert side_text(page, "left", "cv-text") == token
    assert side_text(page, "right", "cv-text") == HOSTILE["script-tag"]
    assert nothing_ran(page) == NOTHING
    tally("hostile_inputs")


@pytest.mark.browser
def test_uploaded_recordings_and_their_html_export_show_every_entry_as_text(
        page: Any, browser: Any, tmp_path: Path, recordings: Path) -> None:
    big = hostile_recording(tmp_path / "big.jsonl", prompt=big_prompt(), extra=big_token())
    rec_path = hostile_recording(tmp_path / "hostile.jsonl")
    for path in (big, rec_path):
        page.set_input_files("#load-file input[type=file]", str(path))
        page.wait_for_function("n => (document.querySelector('#library-status textarea').value || '').includes(n)",
                               arg=f"Added {path.name}")
        page.focus("#player .cv-range")
        page.keyboard.press("End")
        page.wait_for_function(f"document.querySelector('{ROOT}').dataset.step === "
                               f"document.querySelector('{ROOT} .cv-range').max")
        if path == big:
            assert page.evaluate(f"document.querySelector('{ROOT} .cv-prompt-text').textContent.length") == 1_000_000
            assert (big_token() in side_text(page, "left", "cv-text")
                    and big_token() in side_text(page, "right", "cv-text"))
            tally("hostile_inputs", 2)
    rec = read_recording(rec_path)
    assert nothing_ran(page) == NOTHING
    assert missing(side_text(page, "left", "cv-text"), HOSTILE, tokens=True) == []
    assert missing(side_text(page, "right", "cv-text"), HOSTILE) == []
    assert side_text(page, "right", "cv-message") == rec.ends["right"]["message"]
    assert page.text_content("#player .cv-caption-line") == rec.header["caption"]
    assert page.text_content("#player .cv-prompt-text") == rec.header["prompt"]
    table = page.inner_text("#library-table")
    assert rec.header["caption"] in table and "openai:" + HOSTILE["img-onerror"] in table
    tally("hostile_inputs", 2 * len(HOSTILE) + 2)

    page.click("#export-box button.label-wrap")
    page.click("#export-html")
    page.wait_for_function("(document.querySelector('#library-status textarea').value || '').includes('is ready')")
    with page.expect_download() as download:
        page.click("#download-file a[download]")
    exported = tmp_path / "export.html"
    Path(download.value.path()).replace(exported)
    tab = browser.new_page()
    requests: list[str] = []
    tab.on("request", lambda r: requests.append(r.url))
    tab.goto(exported.as_uri())
    tab.wait_for_selector("#converge[data-status=done]")
    tab.focus("#converge .cv-range")
    tab.keyboard.press("End")
    # a function: the file's CSP forbids eval
    tab.wait_for_function("() => document.getElementById('converge').dataset.step === "
                          "document.querySelector('#converge .cv-range').max")
    assert nothing_ran(tab) == NOTHING
    assert missing(tab.text_content("#converge .cv-side[data-side=left] .cv-text") or "", HOSTILE, tokens=True) == []
    assert missing(tab.text_content("#converge .cv-side[data-side=right] .cv-text") or "", HOSTILE) == []
    assert tab.text_content("#converge .cv-prompt-text") == rec.header["prompt"]
    assert requests == [exported.as_uri()]  # nothing fetched: no text became a URL
    tab.close()
    tally("hostile_inputs", len(HOSTILE) + 1)
