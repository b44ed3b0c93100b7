"""Browser-test helpers shared by the page, lessons, presenter and HTML-export tests."""

from __future__ import annotations

import contextlib
import socket
import time
import urllib.request
from typing import Any, Iterator


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def serve_page(demo: Any = None) -> Iterator[str]:
    """A page (the whole app unless `demo` is given), launched in this process with the app's own launch options;
    yields its URL once it answers."""
    from app.ui.layout import build, launch_options

    demo = demo if demo is not None else build()
    port = free_port()
    # _frontend=False skips Gradio's own probe of the page, which gives up after 3 s (a loaded machine can take longer
    # to render it and Gradio then refuses to start); the loop below waits for the page as long as it takes
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True, _frontend=False,
                **launch_options())
    url = f"http://127.0.0.1:{port}/"
    wait_for_page(url)
    try:
        yield url
    finally:
        demo.close()


def wait_for_page(url: str, limit_s: float = 60) -> None:
    """Returns once `url` answers 200 (a page launched with _frontend=False, whose own probe Gradio skipped)."""
    deadline = time.monotonic() + limit_s
    while True:
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                if r.status == 200:
                    return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)  # polling interval while the server starts, not synchronisation


@contextlib.contextmanager
def browser_tab(browser: Any, url: str, timeout_ms: int = 60_000, height: int = 1100, width: int = 1280,
                **context: Any) -> Iterator[Any]:
    """A fresh browser context and tab on `url`; on leaving, both close and the test fails on any console error."""
    ctx = browser.new_context(viewport={"width": width, "height": height}, **context)
    tab = ctx.new_page()
    tab.set_default_timeout(timeout_ms)
    errors = watch_errors(tab)
    tab.goto(url)
    try:
        yield tab
    finally:
        ctx.close()
    assert errors == [], f"console errors: {errors}"


OPEN_TABS: list[Any] = []  # every watched tab, so conftest can search their text for leaked keys after each test


def watch_errors(tab: Any) -> list[str]:
    """Collects the tab's console errors and uncaught exceptions; a test asserts the list stays empty."""
    OPEN_TABS.append(tab)
    errors: list[str] = []
    tab.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    tab.on("pageerror", lambda e: errors.append(str(e)))
    return errors


def pick_source(tab: Any, side: str, prefix: str) -> None:
    """Chooses a source kind in one side's picker; where the kind lists its endpoint's models, waits until the model
    picker has them or says why not, so what a test types next is not replaced when the listing arrives."""
    from app.sources.listing import LISTED, TYPE_A_NAME

    already = tab.input_value(f"#{side}-source input").startswith(f"{prefix} ")
    tab.click(f"#{side}-source input")
    tab.click(f"#{side}-source [role=option][aria-label^='{prefix} ']")
    if prefix in LISTED and not already:
        tab.wait_for_function("([sel, words]) => (document.querySelector(sel)?.textContent || '').includes(words)",
                              arg=[f"#{side}-arg", TYPE_A_NAME])

def outside_viewport(tab: Any, selectors: tuple[str, ...]) -> dict[str, Any]:
    """Each selector whose first element is missing, hidden or not wholly inside the viewport, with its box."""
    return tab.evaluate("""(sels) => {
      const out = {};
      for (const sel of sels) {
        const e = document.querySelector(sel);
        const r = e && e.getBoundingClientRect();
        if (!r || r.width === 0 || r.height === 0 || r.top < 0 || r.left < 0 || r.bottom > innerHeight
            || r.right > innerWidth) out[sel] = r ? [r.left, r.top, r.right, r.bottom] : null;
      }
      return out;
    }""", list(selectors))


def step_to(tab: Any, key: int, left: int | None = None, root: str = "#converge") -> None:
    """Moves an exported player's scrubber to the timeline's key and waits for the left side to show its frame
    `left` (the key itself where both sides share the keys frame for frame)."""
    tab.fill(f"{root} .cv-range", str(key))
    tab.wait_for_selector(f"{root} .cv-side[data-side=left][data-step='{key if left is None else left}']")
