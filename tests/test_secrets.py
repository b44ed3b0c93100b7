"""Keys never leak. The whole suite runs with sentinel keys (conftest: every file written, every test's output and log
and
every open page is searched for them at the end); these tests push the keys at the places most likely to leak them: a
server that echoes the key back in its errors, a key typed into the page, a key in the base URL, a key an HTTP header
cannot carry, and a source that crashes with the key in its exception."""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path
from typing import Any, Iterator

import pytest

from app.export.html import export_html
from app.race.run import Race
from app.sources.base import REGISTRY, SourceBase, SourceKind, make_source, register
from app.trace.frames import Frame
from app.trace.reading import read_recording
from app.ui.live import live_updates
from tests import sentinels
from tests.test_ui import choose, examples, page, side_text, start, wait_status  # noqa: F401 (page fixtures)
from tests.wire_server import DEFAULT_KEY, collect


def no_key_in(*texts: str | bytes) -> None:
    for text in texts:
        assert sentinels.found_in(text) == [], text[:300]


def run(left: str, right: str, out: Path, **kwargs: Any) -> dict[str, Any]:
    final: dict[str, Any] = {}
    for update in live_updates(Race("ECHO:nothing secret here", left, right, out=out, **kwargs), interval=0.02):
        final = update
    return final


def test_the_suite_runs_with_sentinel_keys_and_sources_reach_no_real_service() -> None:
    for name, value in sentinels.ENV.items():
        assert os.environ[name] == value
    assert make_source("mercury").settings()["base_url"] == sentinels.UNREACHABLE
    assert make_source("openai:gpt-test").settings()["base_url"] == sentinels.UNREACHABLE


def test_keys_echoed_by_the_server_never_reach_the_recording_the_messages_or_an_export(api_env: str,
                                                                                        tmp_path: Path) -> None:
    out = tmp_path / "race.jsonl"
    final = run("mercury:fail-401", "openai:error-after-2", out,
                secrets={"left": {"api_key": sentinels.TYPED}, "right": {}})
    left, right = final["sides"]["left"]["message"], final["sides"]["right"]["message"]
    assert "401" in left and "the API key you entered" in left and "reported an error after 2 frames" in right
    html = export_html(out, tmp_path / "race.html")
    no_key_in(left, right, out.read_bytes(), html.read_bytes(), repr(final))


def test_a_key_in_the_base_url_is_dropped_from_settings_recordings_and_messages(api_env: str, tmp_path: Path) -> None:
    host = api_env.split("//", 1)[1]
    url = f"http://user:{sentinels.TYPED}@{host}?key={sentinels.TYPED}"
    source = make_source("mercury:fail-404", base_url=url, api_key=DEFAULT_KEY)
    frames, err = collect(source)
    assert frames == [] and "404" in str(err)
    out = tmp_path / "race.jsonl"
    run("mercury:fail-404", "openai:gpt-test", out, settings={"left": {"base_url": url}, "right": {}})
    no_key_in(str(err), repr(source), repr(source.settings()), out.read_bytes())


@pytest.mark.parametrize("bad", [f"{sentinels.TYPED}\nX-Injected: 1", f"{sentinels.TYPED} trailing",
                                 f"{sentinels.TYPED}\u00e9"])
def test_a_key_an_http_header_cannot_carry_is_refused_without_quoting_it(api_env: str, bad: str) -> None:
    frames, err = collect(make_source("openai:gpt-test", api_key=bad))
    assert frames == [] and "API key" in str(err) and "the API key you entered" in str(err)
    no_key_in(str(err))


def test_a_crashing_source_logs_its_traceback_with_the_keys_taken_out(tmp_path: Path,
                                                                      caplog: pytest.LogCaptureFixture) -> None:
    class Leaky(SourceBase):
        name = "leaky"

        def settings(self) -> dict[str, Any]:
            return {}

        def stream(self, prompt: str, cancel: threading.Event, defer: bool = False) -> Iterator[Frame]:
            yield Frame(t=0.0, step=0, text="one")
            raise RuntimeError(f"upstream said: bad key {os.environ['OPENAI_API_KEY']} / {sentinels.TYPED}")

    register(SourceKind(prefix="leaky-test", make=lambda **kw: Leaky(), label="crashes, quoting keys",
                        takes_key=True))  # it is handed a typed key, which only a kind that takes one is
    try:
        out = tmp_path / "race.jsonl"
        with caplog.at_level(logging.ERROR, logger="converge.race"):
            final = run("leaky-test", "leaky-test", out, secrets={"left": {"api_key": sentinels.TYPED}})
    finally:
        REGISTRY.pop("leaky-test")
    assert "failed unexpectedly (RuntimeError)" in final["sides"]["left"]["message"]
    assert "upstream said: bad key [key] / [key]" in caplog.text
    no_key_in(caplog.text, out.read_bytes(), repr(final))
    assert len(read_recording(out).frames["left"]) == 1


@pytest.mark.browser
def test_a_typed_key_and_echoed_keys_never_show_on_the_page_or_in_its_exports(page: Any, api_env: str,
                                                                              recordings: Path, tmp_path: Path) -> None:
    choose(page, "left", "mercury", "fail-401", key=sentinels.TYPED)
    choose(page, "right", "openai", "error-after-2")
    start(page, "Tell me a secret.")
    wait_status(page, "error")
    assert ("401" in side_text(page, "left", "cv-message")
            and "reported an error" in side_text(page, "right", "cv-message"))
    page.click("#export-box button.label-wrap")
    page.click("#export-html")
    page.wait_for_function("(document.querySelector('#library-status textarea').value || '').includes('is ready')")
    with page.expect_download() as download:
        page.click("#download-file a[download]")
    no_key_in(sentinels.page_text(page), Path(download.value.path()).read_bytes(),
              next(recordings.glob("*.jsonl")).read_bytes())
    assert page.input_value("#left-key input") == sentinels.TYPED  # it stays in the password field, and only there
