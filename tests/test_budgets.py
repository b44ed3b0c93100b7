"""Every route and handler of a served page has a declared budget (app/ui/budgets.py), the door holds each address to
it, and docs/security.md prints the table as it is (issue 49, item 1).

The first test enumerates the routes of the running served app (Gradio's, the app's and the site's files) and its
handlers, and fails on one the table does not name, so a new route or handler without a budget fails the suite; the
next shows that check failing. Each route budget is then held per address by the running door: so many requests of
one address run at once, so many more wait their turn, the next is refused with 429, and another address's request
runs meanwhile; and past that burst an address starts at most its budget's rate a second.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any, Iterator

import gradio as gr
import pytest

from app.serving.policy import from_launch
from app.ui import budgets, door
from app.ui.budgets import ROUTE_BUDGETS, ROUTES, SITE_TEMPLATE, budgeted, template_of
from app.ui.layout import build, launch_options
from app.ui.turns import Turns
from tests.fixtures import run_async
from tests.pages import free_port, wait_for_page
from tests.reliability import tally

ROOT = Path(__file__).resolve().parent.parent
SERVED = from_launch("0.0.0.0", False, env={}, allow=("upload",))
OTHER = "127.0.0.2"


def routes_of(app: Any) -> Iterator[tuple[str, str]]:
    """(method, path template) of every route a running Gradio app answers, HEAD as GET, a trailing slash aside: its
    routers' routes (the API's under their prefix) and the site's files when their middleware is installed."""
    def walk(routes: list[Any], prefix: str) -> Iterator[tuple[str, str]]:
        for route in routes:
            inner = getattr(route, "original_router", None)
            if inner is not None:
                yield from walk(inner.routes, prefix + (route.include_context.prefix or ""))
                continue
            for method in getattr(route, "methods", None) or ():
                yield ("GET" if method == "HEAD" else method), (prefix + route.path).rstrip("/") or "/"
    yield from walk(app.routes, "")
    if any(getattr(m, "cls", None).__name__ == "SiteFiles" for m in app.user_middleware):
        yield "GET", SITE_TEMPLATE


def unbudgeted(app: Any) -> list[tuple[str, str]]:
    """The routes of a running app that the table does not name."""
    return sorted({route for route in routes_of(app) if route not in ROUTES})


@pytest.fixture(scope="module")
def served_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, Any]]:
    """The whole page under the served policy with the site's files (a folder of one file), launched on loopback as
    the command line launches it; yields (demo, its server app)."""
    site = tmp_path_factory.mktemp("site")
    (site / "index.html").write_text("<p>site</p>")
    demo = build(SERVED, browser=True)
    port = free_port()
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True, _frontend=False,
                **launch_options(site))
    wait_for_page(f"http://127.0.0.1:{port}/")
    try:
        yield demo, demo.server_app
    finally:
        demo.close()


def test_every_route_and_handler_of_the_running_served_page_has_a_budget(served_app: tuple[Any, Any]) -> None:
    demo, app = served_app
    found = set(routes_of(app))
    assert unbudgeted(app) == [], "routes without a budget in app/ui/budgets.py"
    assert set(ROUTES) <= found, f"budgets for routes the page no longer has: {sorted(set(ROUTES) - found)}"
    counts = budgeted(demo)  # raises LookupError for a handler without a budget
    running = [fn for fn in demo.fns.values() if fn.fn is not None]
    assert sum(counts.values()) == len(running) and set(counts) <= set(budgets.HANDLERS)
    for fn in running:  # and each queued one runs under its group's limit, as the table declares it
        if fn.queue:
            assert fn.concurrency_limit == budgets.HANDLERS[fn.concurrency_id].at_once, fn.concurrency_id


def test_a_route_or_handler_without_a_budget_fails_the_check(served_app: tuple[Any, Any]) -> None:
    """The check above is shown failing: a route added to the running app, and a queued handler with no group."""
    _, app = served_app
    app.add_api_route("/gradio_api/new-thing", lambda: {}, methods=["GET"])
    try:
        assert unbudgeted(app) == [("GET", "/gradio_api/new-thing")]
    finally:
        app.router.routes.pop()
    assert unbudgeted(app) == []
    with gr.Blocks() as demo:
        button = gr.Button()
        button.click(lambda: None)
    with pytest.raises(LookupError, match="has no declared budget"):
        budgeted(demo)


def test_a_path_no_route_declares_and_the_routes_the_page_does_not_use_answer_404_when_served() -> None:
    entered: list[str] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        entered.append(scope["path"])
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def ask(method: str, path: str) -> int:
        statuses: list[int] = []

        async def send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                statuses.append(message["status"])
        scope = {"type": "http", "method": method, "path": path, "headers": [], "client": ("10.1.0.1", 1)}
        await door.Door(app, policy=SERVED)(scope, receive, send)
        return statuses[0]

    refused = [(m, t) for (m, t), name in ROUTES.items() if name == "refused"]
    undeclared = [("GET", "/nothing/here"), ("PUT", "/config"), ("DELETE", "/gradio_api/queue/join")]
    for method, template in refused + undeclared:
        assert run_async(ask(method, re.sub(r"\{[^}]*\}", "x", template))) == 404, template
    assert run_async(ask("GET", "/config")) == 200 and entered == ["/config"]


def test_docs_security_prints_the_budget_table() -> None:
    assert budgets.markdown() in (ROOT / "docs" / "security.md").read_text(), \
        "docs/security.md's budget table differs from app/ui/budgets.py markdown(): paste it again"


class _Page:
    """What the door reads of a page: its queue (empty: the joins here never reach it) and its handlers (none)."""

    fns: dict[int, Any] = {}

    class _queue:  # noqa: N801 (Gradio's attribute name)
        event_queue_per_concurrency_id: dict[str, Any] = {}
        active_jobs: list[Any] = []
        pending_messages_per_session: dict[str, Any] = {}


class _Stuck:
    """An app whose requests wait until released, so a test holds requests in flight without timing."""

    def __init__(self) -> None:
        self.release, self.entered = asyncio.Event(), []

    def get_blocks(self) -> Any:
        return _Page

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        self.entered.append(scope["client"][0])
        await self.release.wait()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})


@pytest.mark.parametrize("name", [n for n, budget in ROUTE_BUDGETS.items() if budget.connections])
def test_each_route_budget_holds_an_address_to_its_turns(name: str) -> None:
    """`connections` of one address's requests run at once, `waiting` more wait their turn, the next is refused with
    429 and one sentence, another address's request runs meanwhile, and all that waited then run."""
    budget = ROUTE_BUDGETS[name]
    method, template = next(route for route, n in ROUTES.items() if n == name)
    path = re.sub(r"\{[^}]*\}", "x", template)
    assert template_of(method, path) == template
    in_all = budget.connections + budget.waiting

    async def run() -> tuple[list[str], list[int], list[bytes], list[int]]:
        stuck = _Stuck()
        gate = door.Door(stuck, policy=SERVED)
        statuses: list[int] = []
        said: list[bytes] = []

        async def keep(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                statuses.append(message["status"])
            else:
                said.append(message.get("body", b""))

        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": b"{}", "more_body": False}

        def call(source: str) -> Any:
            scope = {"type": "http", "method": method, "path": path, "client": (source, 1), "app": stuck,
                     "headers": [(b"content-length", b"2")] if method == "POST" else []}
            return asyncio.create_task(gate(scope, receive, keep))

        held = [call("10.2.0.1") for _ in range(in_all)]
        other = call(OTHER)
        while gate.turns.held() < in_all + 1 or OTHER not in stuck.entered:
            await asyncio.sleep(0)  # a turn of the loop for each request to reach the app or wait for its turn
        await call("10.2.0.1")  # one more than may be held: refused at once
        refused, entered, sentence = list(statuses), list(stuck.entered), list(said)
        stuck.release.set()
        await asyncio.gather(*held, other)
        return entered, refused, sentence, statuses[len(refused):]

    entered, refused, sentence, later = run_async(run())
    assert entered.count("10.2.0.1") == budget.connections and entered.count(OTHER) == 1
    assert refused == [429] and door.busy(budget).encode() in sentence[0]
    assert later == [200] * (in_all + 1)
    tally("route_attacks", in_all + 1)


@pytest.mark.parametrize("name", [n for n, budget in ROUTE_BUDGETS.items() if budget.per_second])
def test_an_address_starts_at_most_its_rate_a_second_past_a_burst(name: str) -> None:
    """Past a burst of `connections + waiting`, one address's next request of a budget begins only when its token is
    there (1 / per_second later, and the next one a token later still), another address is not held up, and a second
    later the address has per_second more, up to the burst (the test sets the clock)."""
    budget = ROUTE_BUDGETS[name]
    now = [0.0]
    turns = Turns(clock=lambda: now[0])
    burst = budget.connections + budget.waiting
    assert [turns.delay(("10.3.0.1", name), budget) for _ in range(burst)] == [0.0] * burst
    owed = [turns.delay(("10.3.0.1", name), budget) for _ in range(2)]
    assert owed == pytest.approx([1 / budget.per_second, 2 / budget.per_second])
    assert turns.delay(("10.3.0.2", name), budget) == 0.0
    now[0] += 1.0 + 2 / budget.per_second  # the owed tokens come, then a second's worth (the bucket holds a burst)
    second = min(int(budget.per_second), burst)
    assert [turns.delay(("10.3.0.1", name), budget) for _ in range(second)] == [0.0] * second
    assert turns.delay(("10.3.0.1", name), budget) > 0
