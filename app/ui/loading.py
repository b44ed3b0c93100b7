"""Progress while a race's sources load: a Hugging Face model's first load reads (or downloads) its weights, which
can take minutes, and a page that says nothing for that long looks broken; a download says how many GB of how many."""

from __future__ import annotations

import threading
import time
from typing import Any, Callable, Generator

from app.hf.download import progress

LOAD_TICK = 1.0  # seconds between notes; loads quicker than this say nothing


def while_loading(build: Callable[[], Any], what: str,
                  abandon: Callable[[Any], None] = lambda _: None) -> Generator[str, None, Any]:
    """Runs `build` on a worker thread and yields "Loading WHAT... N s" about once a second until it returns, with how
    far a Hugging Face download is while one runs (app/hf/download.py); the generator's return value is
    `build`'s result (its exception is raised here). If the caller closes the generator first (the visitor pressed
    Stop or left), `abandon` gets the result once it arrives."""
    box: dict[str, Any] = {}
    lock = threading.Lock()

    def work() -> None:
        try:
            value = build()
        except BaseException as e:  # handed to the caller below
            box["error"] = e
            return
        with lock:
            box["value"] = value
            gone = box.get("gone", False)
        if gone:
            abandon(value)

    worker = threading.Thread(target=work, daemon=True, name="sources-load")
    started = time.monotonic()
    worker.start()
    worker.join(LOAD_TICK)
    try:
        while worker.is_alive():
            now = progress()
            yield f"Loading {what}... {time.monotonic() - started:.0f} s" + (f": {now}" if now else "")
            worker.join(LOAD_TICK)
    except GeneratorExit:
        with lock:
            box["gone"] = True
            value = box.get("value")
        if value is not None:
            abandon(value)
        raise
    if "error" in box:
        raise box["error"]
    return box["value"]
