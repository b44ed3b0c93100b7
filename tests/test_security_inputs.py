"""Issue 21's input attacks on a served page, replayed through Gradio's queue API by fn_index against a real server in
its own process: every event handler of the built page, hidden ones included, is called with oversized values for
each of its inputs, and each answers with one sentence within the response bound, before any work; the memory bombs
(a 50 MB prompt to Be the sampler, 20 MB of pins in a race) are refused without allocating; and the visitor's text
never reaches the server's log (only its length and a short hash do)."""

from __future__ import annotations

import json
import re
import threading
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

from app.race.compute import COMPUTE
from app.serving.input_limits import LIMITS, fingerprint
from app.ui import door
from app.ui.guard import FAILED, NOT_A_CHOICE, OUT_OF_BOX, OUT_OF_RANGE, TOO_LARGE, UNREADABLE
from tests.reliability import tally
from tests.served import call, config, peak_mb, served_process

BOUND_S = 5.0  # the issue asks for an answer in under a second; asserted generously, the measured worst is printed
# characters of one oversized value (1 MB: under the door's 2 MB cap on a request, so the handler's own limit answers)
BIG = 1_000_000
EACH = 65_536  # characters of every value at once when all of a handler's inputs are oversized together
INNER = 1_000  # characters of one widget's value inside a packed box: over any widget's limit, within the box's
MARKER = "visitor-text-7f3a"  # starts every value sent, so the log can be searched for any of it
SERVER_STATE = {"state"}  # kept by the server; what a caller sends for it is ignored


def oversized(n: int) -> str:
    return (MARKER + "x" * n)[:n]


def one_sentence(text: Any) -> bool:
    """Whether `text` is one short sentence: a single line, under 300 characters, ending with a full stop, with no
    second sentence inside it."""
    return (isinstance(text, str) and 0 < len(text) < 300 and "\n" not in text and text.endswith(".")
            and not re.search(r"[.!?]\s+[A-Z]", text[:-1]))


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Any, Path]]:
    folder = tmp_path_factory.mktemp("served-inputs")
    log = folder / "server.log"
    with served_process(log, folder / "recordings") as (url, proc):
        yield url, proc, log


def packed_keys(value: Any) -> list[str]:
    """The widgets a packed box carries (app/ui/packed.py: a JSON object of their values by elem_id); none for any
    other input."""
    try:
        given = json.loads(value) if isinstance(value, str) else None
    except ValueError:
        return []
    return list(given) if isinstance(given, dict) else []


def handlers(cfg: dict[str, Any]) -> list[tuple[int, list[int]]]:
    """(fn_index, input component ids) of every event whose handler runs on the server."""
    return [(d["id"], list(d["inputs"])) for d in cfg["dependencies"] if d.get("backend_fn")]


def defaults(cfg: dict[str, Any], inputs: list[int]) -> list[Any]:
    by_id = {c["id"]: c for c in cfg["components"]}
    return [None if by_id[i]["type"] in SERVER_STATE else by_id[i].get("props", {}).get("value") for i in inputs]


def refused(url: str, index: int, data: list[Any], what: str, times: list[float]) -> str | None:
    """None when the handler refused the call with one sentence within the bound, without echoing the value; else
    what went wrong."""
    done, seconds = call(url, index, data)
    times.append(seconds)
    error = (done.get("output") or {}).get("error")
    if not (done.get("success") is False and one_sentence(error)):
        return f"{what}: {str(done)[:300]}"
    if MARKER in error or "xxxxxxxx" in error:
        return f"{what} echoed the value: {error[:200]}"
    if seconds >= BOUND_S:
        return f"{what} took {seconds:.2f} s"
    return None


def test_every_handler_refuses_oversized_input_with_one_sentence_before_any_work(server: tuple[str, Any, Path]) -> None:
    url, proc, log = server
    cfg = config(url)
    kinds = {c["id"]: c["type"] for c in cfg["components"]}
    times: list[float] = []
    misses: list[str] = []
    seen: set[int] = set()
    calls = 0
    for index, inputs in handlers(cfg):
        base = defaults(cfg, inputs)
        open_inputs = [n for n, i in enumerate(inputs) if kinds[i] not in SERVER_STATE]
        if not open_inputs:
            continue
        everything = [oversized(EACH) if n in open_inputs else v for n, v in enumerate(base)]
        misses.append(refused(url, index, everything, f"handler {index}, every input oversized", times))
        calls += 1
        for n in open_inputs:
            if inputs[n] in seen:
                continue  # each input once at full size, on the first handler that takes it
            seen.add(inputs[n])
            data = list(base)
            data[n] = oversized(BIG)
            misses.append(refused(url, index, data, f"handler {index}, input {n} ({kinds[inputs[n]]} {inputs[n]})",
                                  times))
            calls += 1
            for key in packed_keys(base[n]):  # widgets sent in one box (app/ui/packed.py): each over its own limit
                data[n] = json.dumps({**json.loads(base[n]), key: oversized(INNER)})
                misses.append(refused(url, index, data, f"handler {index}, input {n}'s {key}", times))
                calls += 1
                seen.add(hash((inputs[n], key)))
    if MARKER in log.read_text(errors="replace"):
        misses.append("visitor text reached the server log")
    misses = [m for m in misses if m]
    tally("input_attacks", calls)
    tally("input_misses", len(misses))
    print(f"{calls} oversized calls to {len(handlers(cfg))} handlers ({len(seen)} inputs): slowest answer "
          f"{max(times):.3f} s, median {sorted(times)[len(times) // 2]:.3f} s")
    assert misses == []
    assert calls > 100 and len(seen) > 100  # the whole page was attacked, not a corner of it


def handler_of(cfg: dict[str, Any], elem_id: str, event: str) -> tuple[int, list[Any]]:
    """(fn_index, default inputs) of the handler an event of the component `elem_id` triggers."""
    ids = {c["id"]: c.get("props", {}).get("elem_id") for c in cfg["components"]}
    for d in cfg["dependencies"]:
        if d.get("backend_fn") and any(t[0] is not None and ids.get(t[0]) == elem_id and t[1] == event
                                       for t in d["targets"]):
            return d["id"], defaults(cfg, d["inputs"])
    raise LookupError(f"{elem_id} {event}")


def with_value(cfg: dict[str, Any], index: int, data: list[Any], elem_id: str, value: Any) -> list[Any]:
    """`data` with the input whose elem_id is `elem_id` set to `value`."""
    ids = {c["id"]: c.get("props", {}).get("elem_id") for c in cfg["components"]}
    inputs = next(d["inputs"] for d in cfg["dependencies"] if d["id"] == index)
    if elem_id not in [ids[i] for i in inputs]:  # a widget sent inside a packed box (app/ui/packed.py)
        return [json.dumps({**json.loads(v), elem_id: value}) if elem_id in packed_keys(v) else v for v in data]
    return [value if ids[i] == elem_id else v for i, v in zip(inputs, data)]


AT_LIMIT = [  # (component, event, input set to exactly its limit, its kind): cheap handlers that then do their work
    ("library-rename", "click", "library-name", "name"),
    ("left-key", "submit", "left-key", "key"),
    ("left-key", "submit", "left-arg", "model"),
    ("sampler-start", "click", "sampler-prompt", "prompt"),
    ("sampler-start", "click", "sampler-pins", "pins"),
    ("sampler-start", "click", "sampler-model-name", "model"),
    ("sweep-pass-cost", "click", "sweep-pass-cost-hf", "model"),
]


@pytest.mark.parametrize("elem_id,event,field,kind", AT_LIMIT, ids=[f"{a[2]}" for a in AT_LIMIT])
def test_a_value_at_its_limit_reaches_its_handler_and_one_character_more_is_refused(
        server: tuple[str, Any, Path], elem_id: str, event: str, field: str, kind: str) -> None:
    """The control: the limits refuse what is over them, not what the page normally sends."""
    url, _, _ = server
    cfg = config(url)
    index, data = handler_of(cfg, elem_id, event)
    chars = LIMITS[kind].chars
    body = "0:" + "a" * (chars - 2) if kind == "pins" else "a" * chars
    done, _ = call(url, index, with_value(cfg, index, data, field, body), timeout=300)
    assert done.get("success") is True, str(done)[:300]
    done, seconds = call(url, index, with_value(cfg, index, data, field, body + "a"))
    assert done.get("success") is False and done["output"]["error"] == \
        f"{LIMITS[kind].what} is over {chars:,} characters; shorten it."
    assert seconds < BOUND_S


def test_a_rejected_value_reaches_the_log_only_as_its_length_and_hash(server: tuple[str, Any, Path]) -> None:
    """Issue 21: a dropdown value that is not a choice was written verbatim into the server log by Gradio's traceback.
    Now a refused choice, an out-of-range number, a value Gradio cannot read and a handler that fails are each answered
    with one sentence and logged by length and hash (or by the exception's type and frames) only."""
    url, _, log = server
    cfg = config(url)
    index, data = handler_of(cfg, "library-load", "click")
    value = MARKER + " a secret the visitor typed"
    done, seconds = call(url, index, with_value(cfg, index, data, "library-pick", value))
    assert done.get("success") is False and done["output"]["error"] == NOT_A_CHOICE and seconds < BOUND_S
    big = oversized(BIG)
    call(url, index, with_value(cfg, index, data, "library-pick", big))
    race = next(d["id"] for d in cfg["dependencies"] if d.get("api_name") == "race")
    data = defaults(cfg, next(d["inputs"] for d in cfg["dependencies"] if d["id"] == race))
    done, _ = call(url, race, with_value(cfg, race, data, "left-local-diffusion-steps", 10**9))
    assert done.get("success") is False and done["output"]["error"] == OUT_OF_RANGE
    example, _ = handler_of(cfg, "prompt-examples", "click")
    done, _ = call(url, example, [987654321])  # an example that does not exist: Gradio's own preprocessing fails
    assert done.get("success") is False and done["output"]["error"] == UNREADABLE
    row, _ = handler_of(cfg, "library-table", "select")
    done, _ = call(url, row, [None])  # a select event without its event data: the handler's call fails
    assert done.get("success") is False and done["output"]["error"] == FAILED
    text = log.read_text(errors="replace")
    assert MARKER not in text and "1000000000" not in text and "987654321" not in text
    assert fingerprint(value) in text and fingerprint(big) in text and fingerprint(10**9) in text
    assert fingerprint(987654321) in text and "pick_row failed with TypeError" in text


def test_a_number_of_thousands_of_digits_is_refused_in_one_sentence_naming_a_number_setting(
        server: tuple[str, Any, Path]) -> None:
    """A number too large for a float (4,000 digits, within what JSON and Python read) sent to a slider or to a number
    box (a Hugging Face model's own settings, Gradio's gr.Number) is refused before Gradio reads it, with a sentence
    that says a number setting is too large rather than that a value could not be read; so is a number box's value
    outside its range."""
    url, _, log = server
    cfg = config(url)
    race = next(d["id"] for d in cfg["dependencies"] if d.get("api_name") == "race")
    data = defaults(cfg, next(d["inputs"] for d in cfg["dependencies"] if d["id"] == race))
    for elem_id, value, sentence in [("left-local-diffusion-steps", 10**4000, TOO_LARGE),
                                     ("left-hf-diffusion-max_new_tokens", 10**4000, TOO_LARGE),
                                     ("left-hf-diffusion-max_new_tokens", -5, OUT_OF_BOX)]:
        done, _ = call(url, race, with_value(cfg, race, data, elem_id, value))
        assert done.get("success") is False and done["output"]["error"] == sentence, (elem_id, done)
        assert one_sentence(sentence)
    assert "9" * 40 not in log.read_text(errors="replace") and "0" * 40 not in log.read_text(errors="replace")


def test_memory_bombs_are_refused_at_once_without_allocating(tmp_path: Path) -> None:
    """Issue 21: a 50 MB prompt to Be the sampler took 92 s and raised the server from 1.1 to 6.8 GB, and a race
    with 20 MB of valid pins froze the server at 5.9 GB; both are now refused in the response bound, and the
    server's peak memory stays far below the issue's 1.5 GB bound (what remains is Gradio reading the request body)."""
    with served_process(tmp_path / "server.log", tmp_path / "recordings") as (url, proc):
        cfg = config(url)
        before = peak_mb(proc)
        sampler, data = handler_of(cfg, "sampler-start", "click")
        prompt = "Once upon a time " * (50_000_000 // 17)
        done, t_sampler = call(url, sampler, with_value(cfg, sampler, data, "sampler-prompt", prompt))
        assert done["success"] is False and done["output"]["error"] == door.TOO_BIG  # never read past 2 MB
        race = next(d["id"] for d in cfg["dependencies"] if d.get("api_name") == "race")
        pins = "0:" + "Lily " * (20_000_000 // 5)
        data = defaults(cfg, next(d["inputs"] for d in cfg["dependencies"] if d["id"] == race))
        done, t_race = call(url, race, with_value(cfg, race, data, "pins", pins))
        assert done["success"] is False and done["output"]["error"] == door.TOO_BIG
        peak = peak_mb(proc)
        assert not list((tmp_path / "recordings").rglob("*.jsonl"))  # no race was started, nothing written
    tally("input_attacks", 2)
    print(f"50 MB prompt refused in {t_sampler:.2f} s, 20 MB of pins in {t_race:.2f} s; "
          f"peak memory {before:.0f} MB before, {peak:.0f} MB after")
    assert max(t_sampler, t_race) < BOUND_S
    assert peak < 1_500 and peak - before < 500


def test_be_the_sampler_waits_for_a_compute_slot_like_a_race(recordings: Path) -> None:
    """Issue 21: Be the sampler ran its model outside the CPU slots that races and sweeps share."""
    from app.ui.layout import build
    from tests.pages import serve_page
    from tests.test_security_access import OWNER_A, fn_index, inputs, served, session

    demo = build(served())
    held = COMPUTE.acquire(COMPUTE.slots, threading.Event())
    assert held == COMPUTE.slots
    released = False
    try:
        with serve_page(demo) as url:
            index = fn_index(demo, elem_id="sampler-start", event="click")
            answer: list[dict[str, Any]] = []
            from tests.served import call as call_fn
            worker = threading.Thread(target=lambda: answer.append(call_fn(url, index, inputs(demo, index, OWNER_A),
                                                                           session(demo, url, OWNER_A))[0]))
            worker.start()
            deadline = time.monotonic() + 60
            while COMPUTE.waiting() == 0:  # the condition: the sampler has queued for a slot
                assert time.monotonic() < deadline and worker.is_alive(), \
                    f"the sampler did not wait: {str(answer)[:200]}"
                time.sleep(0.05)  # polling interval while waiting for the condition, not synchronisation
            assert not answer  # it is waiting, not answering
            COMPUTE.release(held)
            released = True
            worker.join(120)
            assert answer and answer[0]["success"], answer
    finally:
        if not released:
            COMPUTE.release(held)
    assert COMPUTE.in_use == 0


def test_the_declared_name_limit_is_the_librarys_own() -> None:
    from app.trace.store import MAX_NAME

    assert LIMITS["name"].chars == MAX_NAME


@pytest.mark.browser
def test_the_page_shows_the_refusal_where_the_visitor_looks(browser: Any, recordings: Path) -> None:
    """In Chromium: pinned text one character over its limit, then Run; the page shows the one sentence, and no race
    runs (before, the race ran and tokenised every pin)."""
    from app.ui.layout import build
    from tests.pages import browser_tab, serve_page
    from tests.test_security_access import served

    with serve_page(build(served())) as url, browser_tab(browser, url) as tab:
        tab.wait_for_selector("#player .cv-player[data-status]")
        tab.click("#pins-box button.label-wrap")
        tab.locator("#pins textarea").fill("40:" + "a" * (LIMITS["pins"].chars - 2))
        tab.click("#run")
        tab.get_by_text("The pinned text is over 4,000 characters; shorten it.").wait_for()
    assert not list(recordings.rglob("*.jsonl"))
