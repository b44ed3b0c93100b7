"""The OpenAI-compatible source driving the real openai SDK against the loopback wire server (no mocks)."""

from __future__ import annotations

import json

import openai
import pytest

from app.errors import UserError
from app.sources.base import REGISTRY, load_plugins, make_source
from app.sources.openai_chat import OpenAIChatSource, public_url, redact
from tests.wire_server import MERCURY_BLOCK, answer_for, collect, pieces, requests_seen, serve, usage_for

KEY = "sk-openai-SECRET-0a1b2c3d4e"
HOSTILE = ["<img src=x onerror=alert(1)>", "<script>document.cookie</script>", "${process.env.KEY} {{constructor}}",
           "\"quotes\" 'single' \\backslash\\ &amp; &lt;"]


@pytest.fixture(scope="module")
def url():
    with serve(fps=0, key=KEY) as base_url:
        yield base_url


def chat(url: str, model: str, **settings) -> OpenAIChatSource:
    settings = {"base_url": url, "api_key": KEY, **settings}
    return make_source(f"openai:{model}", **settings)


def test_deltas_are_appended_one_frame_each(url):
    frames, err = collect(chat(url, "gpt-test"), "ECHO:The quick brown fox jumps over the lazy dog.")
    assert err is None
    words = pieces("The quick brown fox jumps over the lazy dog.")
    assert [f.text for f in frames[:-1]] == ["".join(words[:i + 1]) for i in range(len(words))]
    assert frames[-1].final and frames[-1].text == "The quick brown fox jumps over the lazy dog."
    assert [f.step for f in frames] == list(range(len(words) + 1))
    assert [f.t for f in frames] == sorted(f.t for f in frames)
    body = {"messages": [{"role": "user", "content": "ECHO:The quick brown fox jumps over the lazy dog."}]}
    assert frames[-1].usage == usage_for(body, "The quick brown fox jumps over the lazy dog.")


def test_works_against_mercury_with_diffusing_off(url):
    frames, err = collect(chat(url, "mercury-2"), "hello")
    assert err is None
    answer = answer_for({"messages": [{"role": "user", "content": "hello"}]})
    assert [f.text for f in frames[:-1]] == [answer[:i + MERCURY_BLOCK] for i in range(0, len(answer), MERCURY_BLOCK)]
    sent = requests_seen(url)[-1]["body"]
    assert "diffusing" not in sent and "reasoning_effort" not in sent
    assert sent["stream_options"] == {"include_usage": True}


def test_request_carries_model_temperature_and_max_tokens(url):
    frames, err = collect(chat(url, "echo-request", temperature=3.5, max_tokens=4000))
    assert err is None
    body = json.loads(frames[-1].text)
    assert body["model"] == "echo-request" and body["temperature"] == 2.0 and body["max_tokens"] == 4000


def test_max_tokens_cuts_the_answer_and_still_finishes(url):
    frames, err = collect(chat(url, "gpt-test", max_tokens=3), "ECHO:one two three four five")
    assert err is None and frames[-1].final and frames[-1].text == "one two three "


def test_model_is_required():
    with pytest.raises(UserError, match="openai:MODEL"):
        make_source("openai")


def test_missing_key_names_the_variable(monkeypatch, url):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    frames, err = collect(make_source("openai:gpt-test", base_url=url))
    assert frames == [] and "OPENAI_API_KEY" in str(err)


def test_env_key_and_base_url_are_used_and_settings_override_the_url(monkeypatch, url):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", url)
    frames, err = collect(make_source("openai:gpt-test"))
    assert err is None and frames[-1].final
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    source = make_source("openai:gpt-test", base_url=url)
    assert source.settings()["base_url"] == url
    frames, err = collect(source)
    assert err is None and frames[-1].final


def test_unreachable_base_url_is_a_clear_error(monkeypatch):
    frames, err = collect(make_source("openai:gpt-test", base_url="http://127.0.0.1:9/v1", api_key=KEY))
    assert frames == [] and "Could not connect to 127.0.0.1:9" in str(err)


def test_wrong_in_memory_key_is_named_but_never_shown(url):
    wrong = "sk-typed-into-the-ui-77aa"
    frames, err = collect(chat(url, "gpt-test", api_key=wrong))
    assert frames == [] and "401" in str(err) and "the API key you entered" in str(err)
    assert wrong not in str(err)


def test_in_memory_key_never_appears_in_settings_repr_or_frames(monkeypatch, url):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    source = chat(url, "gpt-test")
    frames, err = collect(source)
    assert err is None
    blob = json.dumps(source.settings()) + repr(source) + json.dumps([f.to_json() for f in frames])
    assert KEY not in blob and "SECRET" not in blob


def test_credentials_in_the_base_url_are_not_recorded(url):
    source = chat(url, "gpt-test", base_url=url.replace("http://", "http://user:pa55word@") + "?token=abc")
    assert "pa55word" not in json.dumps(source.settings()) and "token=abc" not in json.dumps(source.settings())
    assert public_url("https://u:p@host.example:8443/v1?k=1") == "https://host.example:8443/v1"


def test_redact_removes_the_key_and_keeps_one_line():
    assert redact(f"bad key {KEY}\nsecond line.", KEY) == "bad key [key] second line"


@pytest.mark.parametrize("model, n, phrase", [
    ("fail-401", 0, "rejected the API key"),
    ("fail-429", 0, "rate limiting"),
    ("fail-429-retry", 0, "try again in 7 s"),
    ("fail-503", 0, "overloaded"),
    ("fail-503-retry", 0, "try again in 5 s"),
    ("cut-after-3", 3, "dropped after 3 frames"),
    ("eof-after-1", 1, "without finishing"),
    ("malformed-after-2", 2, "malformed chunk"),
    ("badshape-after-0", 0, "malformed chunk"),
    ("error-after-2", 2, "reported an error"),
    ("stall-after-2", 2, "timed out"),
])
def test_faults_give_one_clear_sentence_after_the_frames_before_them(url, model, n, phrase):
    answer = "alpha beta gamma delta epsilon zeta"
    frames, err = collect(chat(url, model, timeout=1), "ECHO:" + answer)
    assert err is not None
    words = pieces(answer)
    assert [f.text for f in frames] == ["".join(words[:i + 1]) for i in range(n)]
    message = str(err)
    assert phrase in message and KEY not in message and "SECRET" not in message
    assert "\n" not in message and message.endswith(".") and ". " not in message


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_text_comes_through_verbatim(url, text):
    frames, err = collect(chat(url, "gpt-test"), "ECHO:" + text)
    assert err is None and frames[-1].text == text


def test_settings_spec_keeps_to_the_generic_keys():
    load_plugins()
    kind = REGISTRY["openai"]
    assert kind.takes_arg
    for spec in kind.settings.values():
        assert {"default", "label"} <= set(spec) <= {"default", "label", "choices", "min", "max", "step", "info"}


def test_the_wire_server_also_serves_models_and_non_streamed_completions(url):
    client = openai.OpenAI(base_url=url, api_key=KEY, max_retries=0)
    assert "mercury-2" in [m.id for m in client.models.list()]
    reply = client.chat.completions.create(model="mercury-2", messages=[{"role": "user", "content": "ECHO:<b>hi</b>"}])
    assert reply.choices[0].message.content == "<b>hi</b>" and reply.usage.completion_tokens == 1
    with pytest.raises(openai.AuthenticationError):
        openai.OpenAI(base_url=url, api_key="nope", max_retries=0).models.list()


def test_every_sdk_client_shares_one_tls_context_that_still_verifies_certificates() -> None:
    """Each race or model list makes an SDK client; its TLS context (the CA store) is made once per process, not once
    per client, and it is the SDK's own default: certificates and host names checked."""
    import ssl

    from app.sources.openai_chat import sdk_client

    a = sdk_client("sk-test", "https://api.example.com/v1", 5, 0)
    b = sdk_client("sk-other", "http://127.0.0.1:9/v1", 7, 1)
    contexts = [client._client._transport._pool._ssl_context for client in (a, b)]
    assert contexts[0] is contexts[1]
    assert contexts[0].verify_mode == ssl.CERT_REQUIRED and contexts[0].check_hostname
    assert (a.api_key, a.max_retries, b.api_key, b.max_retries) == ("sk-test", 0, "sk-other", 1)
