"""The `browser` section of `python -m app bench`: the static site (app/site) racing the twins in headless Chromium.

It builds the site into a temporary folder, serves it on 127.0.0.1 and measures, in Chromium: first load (from
navigation to `window.converge.ready`, a fresh context each time, so nothing comes from the cache), a race of both
sides at 128 tokens as the page runs it (wall seconds), and each side's time a forward pass and passes a second with
that side racing alone (`only`), over several prompts with the worst run; beside them, the Python twins' time a pass
on the same prompts in the same run. Skips with the reason where playwright, Chromium or npm (onnxruntime-web) is
missing.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import os
import shutil
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Iterator

from app.bench.player import CHROMIUM
from app.bench.twins import EVAL_PROMPTS

LENGTH = 128
RACE = """async ([prompt, length]) => {
  const t0 = performance.now();
  const both = await window.converge.race(prompt, {length});
  const wall = (performance.now() - t0) / 1000;
  const alone = {};
  for (const side of ["left", "right"]) {
    const r = (await window.converge.race(prompt, {length, only: side}))[side];
    alone[side] = {nfe: r.nfe, seconds: r.frames[r.frames.length - 1].t};
  }
  return {wall, passes: both.left.nfe + both.right.nfe, alone};
}"""


class _Quiet(http.server.SimpleHTTPRequestHandler):
    extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map, ".wasm": "application/wasm",
                      ".mjs": "text/javascript", ".onnx": "application/octet-stream"}

    def log_message(self, *args: Any) -> None:
        """Silent."""


@contextlib.contextmanager
def serve(folder: Path) -> Iterator[str]:
    """A static server on 127.0.0.1 for `folder`; yields its URL."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(folder)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def spread(xs: list[float], scale: float = 1.0, digits: int = 2, worst: Any = max) -> dict[str, float]:
    """Median and worst of `xs` (the largest, or with `worst=min` the smallest: a rate), times `scale`."""
    return {"median": round(statistics.median(xs) * scale, digits), "worst": round(worst(xs) * scale, digits)}


def python_per_pass(prompts: tuple[str, ...]) -> dict[str, dict[str, float]]:
    """The Python twins' milliseconds a pass on `prompts`, each side alone, as `python -m app generate` runs them."""
    from app.engine import autoregressive, diffusion
    from app.sources.local import make_local_ar, make_local_diffusion

    out: dict[str, list[float]] = {"left": [], "right": []}
    for side, make, engine in (("left", make_local_diffusion, diffusion), ("right", make_local_ar, autoregressive)):
        src = make()
        for prompt in prompts:
            started = time.perf_counter()
            last = list(engine.generate(src.model, src.encode(prompt), src.opts, threading.Event()))[-1]
            out[side].append((time.perf_counter() - started) / max(last.nfe, 1))
    return {side: spread(xs, 1000) for side, xs in out.items()}


def measure(url: str, chromium: str, prompts: tuple[str, ...], loads: int) -> dict[str, Any]:
    """First loads and races of the site at `url` in headless Chromium."""
    from playwright.sync_api import sync_playwright

    out: dict[str, Any] = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        try:
            out["chromium"] = browser.version
            ready, ctx = [], None
            for _ in range(loads):  # a fresh context each time: nothing from the cache
                if ctx is not None:
                    ctx.close()
                ctx = browser.new_context()
                page = ctx.new_page()
                page.set_default_timeout(300_000)
                page.goto(url)
                ready.append(page.evaluate("() => window.converge.ready.then(() => performance.now() / 1000)"))
            races = [page.evaluate(RACE, [prompt, LENGTH]) for prompt in prompts]
        finally:
            browser.close()
    out["first_load_s"] = {**spread(ready), "runs": [round(x, 2) for x in ready]}
    out["race_both_s"] = spread([r["wall"] for r in races])
    out["passes_per_s_both"] = spread([r["passes"] / r["wall"] for r in races], digits=1, worst=min)
    for side in ("left", "right"):
        alone = [r["alone"][side] for r in races]
        out[f"{side}_ms_per_pass"] = spread([a["seconds"] / a["nfe"] for a in alone], 1000)
        out[f"{side}_passes_per_s"] = spread([a["nfe"] / a["seconds"] for a in alone], digits=1, worst=min)
    return out


def site_browser() -> tuple[str, type[Exception]] | str:
    """Chromium's path and Playwright's error class, for a bench that races the site in a browser; or why it cannot
    run here (onnx, Playwright or Chromium missing)."""
    try:
        import onnx  # noqa: F401 - the site's graphs need it
        from playwright.sync_api import Error as PlaywrightError
    except ImportError as e:
        return f"{e.name} is not installed (pip install -r requirements.txt; pip install playwright)"
    chromium = CHROMIUM if os.path.exists(CHROMIUM) else shutil.which("chromium")
    if not chromium:
        return f"Chromium is not installed at {CHROMIUM} (apt-get install chromium)"
    return chromium, PlaywrightError


def bench(prompts: tuple[str, ...] = EVAL_PROMPTS[:6], loads: int = 3) -> dict[str, Any]:
    """The site in headless Chromium beside the Python twins; {"skipped": reason} where it cannot run."""
    found = site_browser()
    if isinstance(found, str):
        return {"skipped": found}
    chromium, PlaywrightError = found
    from app.errors import UserError
    from app.site.build import build_site

    out: dict[str, Any] = {"prompts": len(prompts), "length": LENGTH, "loads": loads,
                           "sides": {"left": "diffusion twin", "right": "AR twin"}}
    with tempfile.TemporaryDirectory() as tmp:
        try:
            site = build_site(Path(tmp) / "site")
        except UserError as e:  # npm missing, or it could not install onnxruntime-web
            return {**out, "skipped": str(e)}
        try:
            with serve(site) as url:
                out.update(measure(url, chromium, prompts, loads))
        except PlaywrightError as e:
            return {**out, "skipped": f"Chromium could not run the site: {str(e).splitlines()[0]}"}
    out["python_ms_per_pass"] = python_per_pass(prompts)
    return out
