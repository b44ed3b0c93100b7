"""The `live` section of `python -m app bench`: does the page answer while a race runs on the server (issue 50 item 3)?

It starts the whole app in a process of its own (the local page, as `python -m app` runs it) and opens it in headless
Chromium at 1366x768. Each run chooses lesson 13 (a 256-token race of both twins) and presses its Run; from that click
until the race has finished and the player has shown its end, plus REPLAY_S seconds of the replay at the watch pace
that follows, it records the main thread's long tasks (a PerformanceObserver of `longtask`: every task over 50 ms),
and every CLICK_EVERY seconds it clicks the page's empty left margin with a real mouse event, timing each click from
the event's own time stamp (when the browser received it) to its handler (a listener stamping performance.now()).
Reported per run and for the worst run: the updates the player was handed, the longest task, how many took over
LONG_MS, their total, and the slowest click; the targets are no task over LONG_MS and every click answered within
CLICK_MS. Skips with the reason where playwright or Chromium is missing.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
from pathlib import Path
from typing import Any, Iterator

from app.bench.player import NO_CHROMIUM, NO_PLAYWRIGHT, chromium
from app.bench.served import app_process
from app.lessons.guided import LESSONS

RUNS = 3
LONG_MS = 200.0  # the bound on a long task
CLICK_MS = 100.0  # the bound on a click's wait for its handler
CLICK_EVERY = 0.25  # seconds between the bench's clicks while a race runs
REPLAY_S = 2.0  # seconds of the watch-pace replay after the race that are measured too
LESSON = next(i for i, lesson in enumerate(LESSONS) if lesson.title.startswith("Why diffusion wins on a GPU"))
SERVE = ("import sys; from app.ui.layout import launch; "
         "launch('127.0.0.1', int(sys.argv[1]), quiet=True, _frontend=False)")
PLAYER = "#player .cv-player"
MARGIN = (4, 400)  # a point of the page's left margin: a click there does nothing but reach the listener

WATCH = """() => {
  const w = window.__live = {long: [], clicks: []};
  w.observer = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) w.long.push([e.startTime, e.duration]);
  });
  w.observer.observe({type: 'longtask', buffered: false});
  w.onClick = (e) => { if (e.clientX < 10) w.clicks.push(performance.now() - e.timeStamp); };
  const player = document.querySelector('#player .cv-player').convergePlayer;
  w.updates = 0;
  if (!player.counted) {  /* counts the updates the page hands the player (each one message of the race) */
    const update = player.update;
    player.update = (payload) => { window.__live.updates += 1; return update(payload); };
    player.counted = true;
  }
  document.addEventListener('click', w.onClick, true);
}"""
COLLECT = """() => {
  const w = window.__live;
  w.observer.takeRecords().forEach((e) => w.long.push([e.startTime, e.duration]));
  w.observer.disconnect();
  document.removeEventListener('click', w.onClick, true);
  return {long: w.long.map((x) => x[1]), clicks: w.clicks, updates: w.updates};
}"""
FINISHED = (f"(() => {{ const p = document.querySelector('{PLAYER}');"
            " return p.dataset.mode === 'live' && ['done', 'stopped', 'error'].includes(p.dataset.status); })()")


@contextlib.contextmanager
def page_app(folder: Path) -> Iterator[int]:
    """The whole app (the local page) in its own process on 127.0.0.1, its recordings in `folder`; yields its port."""
    with app_process(folder, SERVE) as (port, _):
        yield port


def one_run(page: Any) -> dict[str, Any]:
    """One lesson race from its Run click to REPLAY_S seconds after it finished: long tasks and click latencies."""
    before = page.get_attribute(PLAYER, "data-run")
    page.evaluate(WATCH)
    started = time.perf_counter()
    page.click("#lesson-run")
    page.wait_for_function("([sel, run]) => { const p = document.querySelector(sel);"
                           " return p.dataset.mode === 'live' && p.dataset.run !== run; }", arg=[PLAYER, before])
    clicks = 0
    finished_at = None
    while finished_at is None or time.perf_counter() - finished_at < REPLAY_S:
        page.mouse.click(*MARGIN)
        clicks += 1
        if finished_at is None and page.evaluate(FINISHED):
            finished_at = time.perf_counter()
        page.wait_for_timeout(CLICK_EVERY * 1000)  # the bench's own pace of clicks, not a synchronisation
    got = page.evaluate(COLLECT)
    long, answered = got["long"], got["clicks"]
    return {"race_s": round(finished_at - started, 2), "updates": got["updates"], "long_tasks": len(long),
            "long_task_ms_total": round(sum(long)),
            "longest_task_ms": round(max(long, default=0.0), 1),
            "tasks_over_200ms": sum(1 for d in long if d > LONG_MS), "clicks": clicks, "clicks_answered": len(answered),
            "slowest_click_ms": round(max(answered, default=0.0), 1),
            "median_click_ms": round(sorted(answered)[len(answered) // 2], 1) if answered else None}


def bench(runs: int = RUNS) -> dict[str, Any]:
    """Races lesson 13 `runs` times in the page in headless Chromium; {"skipped": reason} without playwright or
    Chromium."""
    try:
        from playwright.sync_api import Error as PlaywrightError
        from playwright.sync_api import sync_playwright
    except ImportError:
        return dict(NO_PLAYWRIGHT)
    path = chromium()
    if not path:
        return dict(NO_CHROMIUM)
    out: dict[str, Any] = {"lesson": LESSON + 1, "viewport": "1366x768", "runs": runs, "targets": {
        "longest_task_ms": LONG_MS, "slowest_click_ms": CLICK_MS}, "load_average": os.getloadavg()[0]}
    with tempfile.TemporaryDirectory() as tmp, page_app(Path(tmp)) as port:
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=path, args=["--no-sandbox"])
                try:
                    out["chromium"] = browser.version
                    page = browser.new_page(viewport={"width": 1366, "height": 768})
                    page.set_default_timeout(180_000)
                    page.goto(f"http://127.0.0.1:{port}/")
                    page.wait_for_selector(f"{PLAYER}[data-status='idle'], {PLAYER}[data-mode='replay']")
                    page.click("#lesson-pick input")
                    page.click(f"#lesson-pick [role=option][aria-label^='{LESSON + 1}. ']")
                    page.wait_for_function("document.querySelector('#lesson-text').textContent"
                                           f".includes('Lesson {LESSON + 1} of')")
                    out["each"] = [one_run(page) for _ in range(runs)]
                finally:
                    browser.close()
        except PlaywrightError as e:
            return {**out, "skipped": f"Chromium could not run the page: {str(e).splitlines()[0]}"}
    worst = max(out["each"], key=lambda r: (r["longest_task_ms"], r["slowest_click_ms"]))
    out["worst_run"] = worst
    out["meets_targets"] = all(r["longest_task_ms"] <= LONG_MS and r["slowest_click_ms"] <= CLICK_MS
                               and r["clicks_answered"] == r["clicks"] for r in out["each"])
    return out


if __name__ == "__main__":
    import json

    print(json.dumps(bench(), indent=2))
