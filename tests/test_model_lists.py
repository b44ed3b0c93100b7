"""Model pickers: the `mercury` and `openai` sources offer the models their endpoint lists at /v1/models (the real
`openai` SDK against the loopback wire server), by the trust policy's rules for which endpoint gets which key; a
failed listing is one sentence and a typed name stays allowed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from app.errors import UserError
from app.serving.policy import LOCAL, Policy
from app.sources.listing import list_models
from app.trace.reading import read_recording
from app.ui.visitor import listing_endpoint, visitor_models
from tests import sentinels
from tests.pages import pick_source
from tests.test_ui import examples, only_recording, page, start, wait_status  # noqa: F401 (page fixtures)
from tests.wire_server import DEFAULT_KEY, MODELS

SERVED = Policy(served=True, reason="--host 0.0.0.0")


def test_a_source_lists_the_models_its_endpoint_serves(wire_server: str) -> None:
    assert list_models(wire_server, DEFAULT_KEY, "TEST_KEY") == sorted(MODELS)


def test_a_failed_listing_is_one_sentence_that_never_quotes_the_key(wire_server: str) -> None:
    with pytest.raises(UserError) as rejected:
        list_models(wire_server, sentinels.TYPED, "the API key you entered")
    with pytest.raises(UserError) as offline:
        list_models(sentinels.UNREACHABLE, sentinels.TYPED, "OPENAI_API_KEY")
    assert "rejected the API key (the API key you entered)" in str(rejected.value)
    assert str(offline.value) == "Could not reach 127.0.0.1:9 to list its models: you can still type a model name."
    for message in (str(rejected.value), str(offline.value)):
        assert sentinels.found_in(message) == [] and message.count(". ") == 0 and message.endswith(".")


def test_the_hosts_endpoint_is_listed_with_the_hosts_key_only_where_the_policy_lends_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://host.example/v1")
    assert listing_endpoint(LOCAL, "openai", "", "") == ("http://host.example/v1", sentinels.ENV["OPENAI_API_KEY"],
                                                        "OPENAI_API_KEY")
    assert listing_endpoint(LOCAL, "openai", "", sentinels.TYPED)[1] == sentinels.TYPED
    lending = Policy(served=True, reason="--share", allowed=frozenset({"env-keys"}))
    assert listing_endpoint(lending, "mercury", "", "")[1] == sentinels.ENV["INCEPTION_API_KEY"]
    with pytest.raises(UserError, match=r"^No API key to list models with \(enter your own API key\)"):
        listing_endpoint(SERVED, "mercury", "", "")
    assert listing_endpoint(SERVED, "mercury", "", sentinels.TYPED)[1] == sentinels.TYPED
    monkeypatch.delenv("INCEPTION_API_KEY")
    with pytest.raises(UserError, match=r"set INCEPTION_API_KEY or enter a key\): you can still type a model name"):
        listing_endpoint(LOCAL, "mercury", "", "")


def test_a_base_url_the_visitor_typed_gets_only_the_visitors_key_and_only_if_the_host_listed_it() -> None:
    with pytest.raises(UserError, match="^Enter an API key to list the models at that base URL"):
        listing_endpoint(LOCAL, "openai", "http://elsewhere.example/v1", "")
    assert listing_endpoint(LOCAL, "openai", "http://elsewhere.example/v1", sentinels.TYPED)[1] == sentinels.TYPED
    with pytest.raises(UserError, match="not one this server allows"):
        listing_endpoint(SERVED, "openai", "http://10.0.0.5:8000/v1", sentinels.TYPED)
    listed = Policy(served=True, reason="--share", base_urls=("http://10.0.0.5:8000/v1",))
    assert listing_endpoint(listed, "openai", "http://10.0.0.5:8000/v1/", sentinels.TYPED)[:2] == (
        "http://10.0.0.5:8000/v1/", sentinels.TYPED)


def test_on_a_served_page_a_failure_at_the_visitors_endpoint_says_nothing_about_what_answered(wire_server: str) -> None:
    listed = Policy(served=True, reason="--share", base_urls=(wire_server,))
    with pytest.raises(UserError) as err:
        visitor_models(listed, "openai", wire_server, sentinels.TYPED)  # the server answers 401 with a body
    host = wire_server.split("//")[1].split("/")[0]
    assert str(err.value) == (f"Could not list the models at {host}: check the base URL and your key; "
                              "you can still type a model name.")
    assert visitor_models(listed, "openai", wire_server, DEFAULT_KEY) == sorted(MODELS)


@pytest.mark.browser
def test_a_model_picked_from_the_endpoints_list_runs(page: Any, api_env: str, recordings: Path) -> None:
    pick_source(page, "left", "mercury")
    assert page.input_value("#left-arg input") == "mercury-2"  # mercury's default, already in its picker
    pick_source(page, "right", "openai")
    assert "3 models listed by the endpoint" in page.text_content("#right-arg")
    page.click("#right-arg input")
    options = page.locator("#right-arg [role=option]")
    assert [options.nth(i).get_attribute("aria-label") for i in range(options.count())] == sorted(MODELS)
    page.click("#right-arg [role=option][aria-label='gpt-test']")
    assert page.input_value("#right-arg input") == "gpt-test"
    start(page, "Explain diffusion models in one sentence.")
    wait_status(page, "done")
    header = read_recording(only_recording(recordings)).header
    assert ((header["sources"]["left"]["name"], header["sources"]["right"]["name"])
            == ("mercury:mercury-2", "openai:gpt-test"))
    assert header["sources"]["left"]["settings"]["model"] == "mercury-2"


@pytest.mark.browser
def test_a_listing_that_fails_says_so_in_one_line_and_a_typed_name_still_runs(page: Any, recordings: Path) -> None:
    pick_source(page, "left", "mercury")  # the suite's sources point at a closed loopback port
    pick_source(page, "right", "openai")
    assert "Could not reach 127.0.0.1:9 to list its models: you can still type a model name." in page.text_content(
        "#right-arg")
    page.locator("#right-arg input").fill("my-own-model")
    start(page, "Hello")
    wait_status(page, "error")  # both sides' endpoint is closed: no frame came, so nothing is saved
    assert "openai:my-own-model" in page.text_content("#player .cv-side[data-side=right]")
    assert not list(recordings.glob("*.jsonl"))
    assert "Could not connect to 127.0.0.1:9" in page.text_content("#player .cv-side[data-side=right] .cv-message")
