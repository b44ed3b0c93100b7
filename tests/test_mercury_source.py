"""The Mercury source driving the real openai SDK against the loopback wire server (no mocks)."""

from __future__ import annotations

import json
import threading

import pytest

from app.errors import UserError
from app.sources.base import REGISTRY, load_plugins, make_source
from app.sources.mercury import DEFAULT_MODEL, EFFORTS, MercurySource, display_text
from tests.wire_server import (
    ANSWERS,
    MERCURY_BLOCK,
    answer_for,
    collect,
    content_events,
    requests_seen,
    serve,
    usage_for,
)

KEY = "sk-wire-SECRET-5f3a9c1e7b"
HOSTILE = [
    "<img src=x onerror=alert(1)>",
    "<script>alert('x')</script> & </textarea>",
    "${7*7} {{7*7}} {% raw %} `rm -rf` \\u0000",
    "  leading spaces, tabs\tand\nnewlines\n",
    "héllo wörld 你好 🙂 <|im_start|>",
]


@pytest.fixture(scope="module")
def url():
    with serve(fps=0, key=KEY) as base_url:
        yield base_url


def mercury(url: str, model: str = "", **settings) -> MercurySource:
    settings = {"base_url": url, "api_key": KEY, **settings}
    return make_source(f"mercury:{model}" if model else "mercury", **settings)


def expected_texts(model: str, prompt: str, diffusing: bool) -> list[str]:
    """The text after each content chunk the server sends, by the documented rule (replace when diffusing, else
    append)."""
    body = {"model": model, "messages": [{"role": "user", "content": prompt}], "diffusing": diffusing}
    text, out = "", []
    for chunk in content_events(body, answer_for(body)):
        content = chunk["choices"][0]["delta"]["content"]
        text = content if chunk.get("diffusion_meta", {}).get("diffusion_content") else text + content
        out.append(text)
    return out


def test_diffusing_stream_replaces_each_frame_and_grows(url):
    frames, err = collect(mercury(url), "hello")
    assert err is None
    texts = expected_texts(DEFAULT_MODEL, "hello", diffusing=True)
    assert [f.text for f in frames[:-1]] == texts
    assert frames[-1].final and frames[-1].text == answer_for({"messages": [{"role": "user", "content": "hello"}]})
    assert not any(f.final for f in frames[:-1])
    assert [f.step for f in frames] == list(range(len(frames)))
    lengths = [len(f.text) for f in frames]
    assert lengths == sorted(lengths) and lengths[0] < lengths[-1]
    noisy = [f.text for f in frames if not frames[-1].text.startswith(f.text)]
    assert noisy, "diffusing frames should carry noise, not just prefixes of the answer"
    ts = [f.t for f in frames]
    assert ts == sorted(ts) and ts[0] >= 0
    assert all(f.tokens == [] for f in frames)


def test_non_diffusing_mercury_appends_blocks(url):
    frames, err = collect(mercury(url, diffusing=False), "hello")
    assert err is None
    answer = frames[-1].text
    assert answer in ANSWERS
    assert [f.text for f in frames[:-1]] == [answer[:i + MERCURY_BLOCK] for i in range(0, len(answer), MERCURY_BLOCK)]
    assert requests_seen(url)[-1]["body"]["diffusing"] is False


def test_replace_or_append_is_decided_per_chunk(url):
    frames, err = collect(mercury(url, "mixed"), "ECHO:one two three four five six seven eight")
    assert err is None
    assert ([f.text for f in frames[:-1]]
            == expected_texts("mixed", "ECHO:one two three four five six seven eight", True))
    assert frames[-1].text == "one two three four five six seven eight"


def test_a_burst_of_frames_gives_one_frame_each(url):
    prompt = "ECHO:A burst writes several data events in one socket write, and each must stay its own frame."
    frames, err = collect(mercury(url, "burst-5"), prompt)
    assert err is None
    texts = expected_texts("burst-5", prompt, diffusing=True)
    assert len(texts) > 5
    assert [f.text for f in frames[:-1]] == texts
    assert [f.step for f in frames] == list(range(len(texts) + 1))
    assert [f.t for f in frames] == sorted(f.t for f in frames)


def test_usage_chunk_is_kept_on_the_final_frame(url):
    frames, err = collect(mercury(url), "ECHO:four words of answer")
    assert err is None
    body = {"messages": [{"role": "user", "content": "ECHO:four words of answer"}]}
    assert frames[-1].usage == usage_for(body, "four words of answer")
    assert all(f.usage is None for f in frames[:-1])


def test_think_end_marker_kept_raw_and_hidden_by_display_text(url):
    frames, err = collect(mercury(url), "ECHO:Reasoning done.<|think_end|>The answer is 4.")
    assert err is None
    assert frames[-1].text == "Reasoning done.<|think_end|>The answer is 4."
    assert display_text(frames[-1].text) == "Reasoning done.The answer is 4."
    assert display_text("a<|think_start|>b<|think_end|>c") == "abc"
    assert display_text("a <| not a marker |> b <b>") == "a <| not a marker |> b <b>"


@pytest.mark.parametrize("asked, sent", [(1.7, 1.0), (0.1, 0.5), (0.8, 0.8), ("0.6", 0.6)])
def test_temperature_is_clamped_recorded_and_sent(url, asked, sent):
    source = mercury(url, "echo-request", temperature=asked)
    assert source.settings()["temperature"] == sent
    frames, err = collect(source)
    assert err is None
    body = json.loads(frames[-1].text)
    assert body["temperature"] == sent


def test_a_clamped_temperature_is_told_to_the_user_in_the_side_message_and_the_recording(url, tmp_path):
    from app.race.run import Race
    from app.trace.reading import read_recording
    from app.ui.live import live_updates

    assert mercury(url, temperature=0.75).notice is None
    out = tmp_path / "race.jsonl"
    race = Race("ECHO:hi", "mercury", "mercury", out=out,
                settings={"left": {"base_url": url, "temperature": 0.2},
                          "right": {"base_url": url, "temperature": 0.7}},
                secrets={"left": {"api_key": KEY}, "right": {"api_key": KEY}})
    final = list(live_updates(race, interval=0.01))[-1]["sides"]
    told = "Mercury accepts a temperature from 0.5 to 1.0, so 0.2 was sent as 0.5."
    assert (final["left"]["status"], final["left"]["message"]) == ("done", told)
    assert final["right"]["message"] is None
    assert read_recording(out).ends["left"] == {"status": "done", "message": told}


def test_request_carries_diffusing_effort_and_include_usage(url):
    frames, err = collect(mercury(url, "echo-request"))
    assert err is None
    body = json.loads(frames[-1].text)
    assert body["diffusing"] is True and body["reasoning_effort"] == "instant"
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["model"] == "echo-request" and body["messages"] == [{"role": "user", "content": "hello"}]
    assert KEY not in frames[-1].text


@pytest.mark.parametrize("effort", EFFORTS)
def test_reasoning_effort_is_selectable(url, effort):
    frames, err = collect(mercury(url, "echo-request", reasoning_effort=effort))
    assert err is None and json.loads(frames[-1].text)["reasoning_effort"] == effort


@pytest.mark.parametrize("settings, word", [({"reasoning_effort": "max"}, "reasoning_effort"),
                                            ({"temperature": "hot"}, "temperature"),
                                            ({"diffusing": "maybe"}, "diffusing"),
                                            ({"base_url": "ftp://example.com"}, "base URL")])
def test_bad_settings_raise_a_clear_error(url, settings, word):
    with pytest.raises(UserError, match=word):
        mercury(url, **settings)


def test_source_names_and_defaults(monkeypatch, url):
    monkeypatch.setenv("INCEPTION_BASE_URL", url)
    source = make_source("mercury")
    assert source.name == "mercury" and source.model == "mercury-2"
    assert source.settings()["base_url"] == url
    assert source.settings()["reasoning_effort"] == "instant" and source.settings()["diffusing"] is True
    assert make_source("mercury:mercury-2.5").model == "mercury-2.5"
    monkeypatch.delenv("INCEPTION_BASE_URL")
    assert make_source("mercury").settings()["base_url"] == "https://api.inceptionlabs.ai/v1"


def test_settings_spec_keeps_to_the_generic_keys():
    load_plugins()
    kind = REGISTRY["mercury"]
    assert kind.takes_arg
    assert set(kind.settings) == {"temperature", "reasoning_effort", "max_tokens", "diffusing"}
    for spec in kind.settings.values():
        assert {"default", "label"} <= set(spec) <= {"default", "label", "choices", "min", "max", "step", "info"}
        assert "choices" in spec or {"min", "max", "step"} <= set(spec)
        if "choices" in spec:
            assert spec["default"] in spec["choices"]
        else:
            assert spec["min"] <= spec["default"] <= spec["max"]
    made = make_source("mercury", **{k: v["default"] for k, v in kind.settings.items()})
    assert made.settings()["temperature"] == kind.settings["temperature"]["default"]


def test_missing_key_names_the_variable(monkeypatch, url):
    monkeypatch.delenv("INCEPTION_API_KEY", raising=False)
    frames, err = collect(make_source("mercury", base_url=url))
    assert frames == [] and err is not None
    assert "INCEPTION_API_KEY" in str(err)


def test_key_from_the_environment_is_used(monkeypatch, url):
    monkeypatch.setenv("INCEPTION_API_KEY", KEY)
    frames, err = collect(make_source("mercury", base_url=url))
    assert err is None and frames[-1].final


def test_wrong_key_says_which_variable_and_never_echoes_it(monkeypatch, url):
    wrong = "sk-wrong-key-9d8c7b6a5f"
    monkeypatch.setenv("INCEPTION_API_KEY", wrong)
    frames, err = collect(make_source("mercury", base_url=url))
    assert frames == [] and "401" in str(err) and "INCEPTION_API_KEY" in str(err)
    assert wrong not in str(err) and "wrong-key" not in str(err)


FAULTS = [
    ("fail-401", 0, "401"),
    ("fail-402", 0, "402"),
    ("fail-404", 0, "fail-404"),
    ("fail-429", 0, "try again shortly"),
    ("fail-429-retry", 0, "try again in 7 s"),
    ("fail-500", 0, "500"),
    ("fail-503", 0, "overloaded"),
    ("fail-503-retry", 0, "try again in 5 s"),
    ("cut-after-3", 3, "dropped after 3 frames"),
    ("eof-after-3", 3, "without finishing"),
    ("malformed-after-2", 2, "malformed chunk after 2 frames"),
    ("badshape-after-2", 2, "malformed chunk after 2 frames"),
    ("error-after-2", 2, "reported an error after 2 frames"),
    ("stall-after-2", 2, "timed out"),
    ("stall-headers", 0, "timed out"),
]


@pytest.mark.parametrize("model, n, phrase", FAULTS)
def test_faults_give_one_clear_sentence_after_the_frames_before_them(url, model, n, phrase):
    prompt = "ECHO:A long enough answer for a fault to strike after a few frames of diffusion."
    frames, err = collect(mercury(url, model, timeout=1), prompt)
    assert err is not None, f"{model} should raise UserError"
    message = str(err)
    assert phrase in message
    assert [f.text for f in frames] == expected_texts(model, prompt, diffusing=True)[:n]
    assert not any(f.final for f in frames)
    assert KEY not in message and "SECRET" not in message
    assert "\n" not in message and message.endswith(".") and ". " not in message


def test_rate_limit_is_not_retried_silently(url):
    before = sum(r["body"].get("model") == "fail-429-retry" for r in requests_seen(url))
    collect(mercury(url, "fail-429-retry"))
    after = sum(r["body"].get("model") == "fail-429-retry" for r in requests_seen(url))
    assert after - before == 1


def test_key_never_appears_in_settings_repr_or_frames(url):
    source = mercury(url)
    frames, err = collect(source)
    assert err is None
    blob = json.dumps(source.settings()) + repr(source) + json.dumps([f.to_json() for f in frames])
    assert KEY not in blob and "SECRET" not in blob


@pytest.mark.parametrize("text", HOSTILE)
@pytest.mark.parametrize("diffusing", [True, False])
def test_hostile_text_comes_through_verbatim(url, text, diffusing):
    frames, err = collect(mercury(url, diffusing=diffusing), "ECHO:" + text)
    assert err is None
    assert frames[-1].text == text


def test_cancel_ends_a_stalled_stream_without_error_or_final_frame(url):
    source = mercury(url, "stall-after-2", timeout=300)
    cancel, got_two = threading.Event(), threading.Event()
    result = {}

    def consume():
        frames = []
        try:
            for frame in source.stream("ECHO:stalls after two frames of its diffusion", cancel):
                frames.append(frame)
                if len(frames) == 2:
                    got_two.set()
        except UserError as err:
            result["error"] = err
        result["frames"] = frames

    thread = threading.Thread(target=consume, daemon=True)
    thread.start()
    assert got_two.wait(30)
    cancel.set()
    thread.join(30)  # a hang guard only: the source's own timeout is 300 s
    assert not thread.is_alive(), "Stop should end a stalled read at once, not after the timeout"
    assert "error" not in result and len(result["frames"]) == 2 and not result["frames"][-1].final


def test_the_same_request_streams_the_same_frames(url):
    first, _ = collect(mercury(url), "ECHO:seeded noise makes every run of a request the same")
    second, _ = collect(mercury(url), "ECHO:seeded noise makes every run of a request the same")
    assert [f.text for f in first] == [f.text for f in second] and len(first) > 2
