"""What the server keeps of "Be the sampler" runs is bounded: per visitor of a served page, in idle time and in all;
through Gradio's queue API, a visitor who opens sessions without end keeps no more than two runs."""

from __future__ import annotations

from typing import Any

import pytest

from app.serving.policy import LOCAL
from app.ui.hand_runs import ENDED, HandRuns
from tests.test_security_access import OWNER_A, call, fn_index, inputs, page, served, session


class Clock:
    """A clock the test moves by hand, so idle time passes without waiting."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_visitor_keeps_two_runs_and_a_third_ends_the_one_they_used_longest_ago() -> None:
    runs = HandRuns(per_visitor=2)
    first, second = runs.keep("10.0.0.1", "run 1"), runs.keep("10.0.0.1", "run 2")
    assert runs.get(first) == "run 1"  # now the second is the one used longest ago
    other = runs.keep("10.0.0.2", "another visitor's run")
    third = runs.keep("10.0.0.1", "run 3")
    assert runs.get(second) is None
    assert (runs.get(first), runs.get(third), runs.get(other)) == ("run 1", "run 3", "another visitor's run")


def test_a_local_page_caps_no_visitor() -> None:
    runs = HandRuns(per_visitor=2)
    tickets = [runs.keep(None, f"run {i}") for i in range(5)]
    assert [runs.get(t) for t in tickets] == [f"run {i}" for i in range(5)]


def test_a_run_left_idle_goes_and_a_run_in_use_stays() -> None:
    clock = Clock()
    runs = HandRuns(idle=100.0, clock=clock)
    idle, busy = runs.keep(None, "idle run"), runs.keep(None, "busy run")
    clock.now = 60.0
    runs.put(busy, "busy run, one step on")
    clock.now = 120.0
    assert runs.get(idle) is None and runs.get(busy) == "busy run, one step on"
    assert len(runs) == 1


def test_the_server_keeps_at_most_its_total_the_least_recently_used_going_first() -> None:
    runs = HandRuns(total=3)
    a, b, c = (runs.keep(None, name) for name in "abc")
    runs.get(a)
    d = runs.keep(None, "d")
    assert [runs.get(t) for t in (a, b, c, d)] == ["a", None, "c", "d"] and len(runs) == 3


def test_an_unknown_or_forged_ticket_names_no_run() -> None:
    runs = HandRuns()
    runs.keep(None, "a run")
    assert runs.get("not-a-ticket") is None and runs.get(None) is None and runs.get(["a", "list"]) is None


def step_note(demo: Any, url: str, session_hash: str) -> str:
    """'Let the model choose' in a session, through the queue API; the note the box then shows."""
    index = fn_index(demo, elem_id="sampler-model", event="click")
    done = call(url, index, inputs(demo, index), session_hash)
    assert done["success"], done
    return done["output"]["data"][2]


@pytest.mark.parametrize("served_page", [True, False], ids=["served", "local-control"])
def test_three_sessions_of_one_visitor_keep_only_the_two_newest_runs(served_page: bool) -> None:
    """A served page ends a visitor's run that a third started run leaves no room for, and says so in that session;
    on a local page (the host) every run is kept."""
    with page(served() if served_page else LOCAL) as (demo, url):
        start = fn_index(demo, elem_id="sampler-start", event="click")
        sessions = [session(demo, url, OWNER_A) for _ in range(3)]
        for hash_ in sessions:
            done = call(url, start, inputs(demo, start, OWNER_A), hash_)
            assert done["success"], done
        notes = [step_note(demo, url, hash_) for hash_ in sessions]
    assert notes[0] == ENDED if served_page else notes[0] != ENDED
    assert all(note != ENDED and note for note in notes[1:]), notes
