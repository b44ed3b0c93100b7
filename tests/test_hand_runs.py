"""What a page keeps of "Be the sampler" runs is bounded: per visitor of a served page, in idle time and in all (the
same through Gradio's queue API: tests/test_sampler_ui.py)."""

from __future__ import annotations

from app.ui.hand_runs import HandRuns


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


def test_a_page_keeps_at_most_its_total_the_least_recently_used_going_first() -> None:
    runs = HandRuns(total=3)
    a, b, c = (runs.keep(None, name) for name in "abc")
    runs.get(a)
    d = runs.keep(None, "d")
    assert [runs.get(t) for t in (a, b, c, d)] == ["a", None, "c", "d"] and len(runs) == 3


def test_an_unknown_or_forged_ticket_names_no_run() -> None:
    runs = HandRuns()
    runs.keep(None, "a run")
    assert runs.get("not-a-ticket") is None and runs.get(None) is None and runs.get(["a", "list"]) is None
