"""The "player" bench section: frame times of the exported HTML player animating two 1,000-token panels.

A synthetic race (a masked-diffusion side unmasking 1,000 positions in 125 steps, some reopened, done at
40% of the time; a side typing 1,000 tokens, one per frame) is exported with app.export.html and played
at 1x in headless Chromium. frame_ms: the intervals between animation frames while it plays (what the
viewer sees; 16.7 ms is 60 fps); paint_ms: the player's own JavaScript time per paint (with the layout it
forces to keep a typing side scrolled to its end); main_thread_*_ms_per_frame: Chromium's own counters of
main-thread work, which a busy machine stretches less than frame intervals. Run twice: the normal layout
(text, heatmaps, chart, metrics) and presenter mode.
"""

from __future__ import annotations

import os
import random
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from app.trace.frames import Frame, RecordingWriter, make_header

CHROMIUM = "/usr/bin/chromium"
NO_CHROMIUM = {"skipped": f"Chromium is not installed at {CHROMIUM} (apt-get install chromium)"}
NO_PLAYWRIGHT = {"skipped": "playwright is not installed (pip install playwright)"}


def chromium() -> str | None:
    """Debian's Chromium, or one on the PATH; None where there is none (a bench section then says it skipped)."""
    return CHROMIUM if os.path.exists(CHROMIUM) else shutil.which("chromium")
TARGET_MS = 1000 / 60

_WORDS = ("the model writes every token at once and keeps the ones it is sure of while the other side "
          "types one word after another from left to right").split()

PLAY = """async (presenter) => {
  const p = window.converge;
  if (p.state.presenter !== presenter) p.setPresenter(presenter);
  p.pause();
  p.setSpeed(1);
  p.seek(0);
  await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
  const paints = [], frames = [];
  p.onPaint = ms => paints.push(ms);
  return await new Promise(resolve => {
    let last = null;
    const step = (now) => {
      if (last !== null) frames.push(now - last);
      last = now;
      if (p.state.playing) requestAnimationFrame(step);
      else { p.onPaint = null; resolve({frames, paints, step: +p.root.dataset.step}); }
    };
    p.play();
    requestAnimationFrame(step);
  });
}"""


def bench_recording(path: str | Path, n_tokens: int = 1000, seconds: float = 6.0, seed: int = 0) -> Path:
    """A race with two n_tokens panels: diffusion (8 positions a step, 1 in 10 steps reopening one) and typing."""
    rng = random.Random(seed)
    final = [rng.choice(_WORDS) + " " for _ in range(n_tokens)]
    writer = RecordingWriter(path, make_header("Benchmark: two 1,000-token panels", {
        "left": {"name": "bench-diffusion", "settings": {}}, "right": {"name": "bench-ar", "settings": {}}}))
    masked = [True] * n_tokens
    order = list(range(n_tokens))
    rng.shuffle(order)
    per = 8
    steps = n_tokens // per
    for step in range(steps):
        for p in order[step * per:(step + 1) * per]:
            masked[p] = False
        if 0 < step < steps - 1 and step % 10 == 0:
            masked[order[step * per - 1]] = True
            order.append(order[step * per - 1])
        if step == steps - 1:
            masked = [False] * n_tokens
        writer.frame("left", Frame(t=0.05 + step * 0.4 * seconds / steps, step=step,
                                   tokens=["" if m else x for x, m in zip(final, masked)], masked=list(masked),
                                   nfe=step + 1, final=step == steps - 1))
    writer.end("left", "done")
    for k in range(n_tokens):
        writer.frame("right", Frame(t=0.1 + k * (seconds - 0.1) / (n_tokens - 1), step=k + 1, tokens=final[:k + 1],
                                    nfe=k + 1, final=k == n_tokens - 1))
    writer.end("right", "done")
    writer.close()
    return Path(path)


def _pct(xs: list[float], q: float) -> float | None:
    if not xs:
        return None
    s = sorted(xs)
    return round(s[min(len(s) - 1, int(q * (len(s) - 1) + 0.5))], 2)


def summarise(frames: list[float], paints: list[float]) -> dict[str, Any]:
    """Percentiles of frame intervals and paint times, and the share of frames slower than 60 fps allows."""
    slow = sum(1 for f in frames if f > TARGET_MS * 1.2)
    return {"frames": len(frames), "frame_ms_p50": _pct(frames, 0.5), "frame_ms_p95": _pct(frames, 0.95),
            "frame_ms_max": _pct(frames, 1.0), "slow_frame_share": round(slow / len(frames), 3) if frames else None,
            "paints": len(paints), "paint_ms_p50": _pct(paints, 0.5), "paint_ms_p95": _pct(paints, 0.95),
            "paint_ms_max": _pct(paints, 1.0)}


def _busy(cdp: Any) -> dict[str, float]:
    """Seconds the page's main thread has spent on tasks, script and layout so far (Chromium's own counters)."""
    metrics = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
    return {"task": metrics.get("TaskDuration", 0.0), "script": metrics.get("ScriptDuration", 0.0),
            "layout": metrics.get("LayoutDuration", 0.0)}


def bench(seconds: float = 6.0, n_tokens: int = 1000) -> dict[str, Any]:
    """Plays the exported player in headless Chromium; {"skipped": reason} where playwright or Chromium is missing."""
    try:
        from playwright.sync_api import Error as PlaywrightError
        from playwright.sync_api import sync_playwright
    except ImportError:
        return dict(NO_PLAYWRIGHT)
    path = chromium()
    if not path:
        return dict(NO_CHROMIUM)
    from app.export.html import export_html

    out: dict[str, Any] = {"tokens_per_panel": n_tokens, "race_seconds": seconds, "speed": 1,
                           "target_frame_ms": round(TARGET_MS, 2)}
    with tempfile.TemporaryDirectory() as tmp:
        rec = bench_recording(Path(tmp) / "bench.jsonl", n_tokens, seconds)
        started = time.perf_counter()
        page_file = export_html(rec, Path(tmp) / "bench.html")
        out["export_seconds"] = round(time.perf_counter() - started, 3)
        out["html_bytes"] = page_file.stat().st_size
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=path, args=["--no-sandbox"])
                try:
                    out["chromium"] = browser.version
                    page = browser.new_page(viewport={"width": 1280, "height": 900})
                    page.goto(page_file.as_uri())
                    page.wait_for_selector("#converge[data-status=done]")
                    cdp = page.context.new_cdp_session(page)
                    cdp.send("Performance.enable")
                    for name, presenter in (("normal", False), ("presenter", True)):
                        before = _busy(cdp)
                        result = page.evaluate(PLAY, presenter)
                        busy = {k: v - before[k] for k, v in _busy(cdp).items()}
                        out[name] = summarise(result["frames"], result["paints"])
                        n = max(1, len(result["frames"]))
                        out[name].update({f"main_thread_{k}_ms_per_frame": round(v * 1000 / n, 2)
                                          for k, v in busy.items()})
                        out[name]["reached_end"] = result["step"] == int(
                            str(page.get_attribute("#converge .cv-range", "max")))
                finally:
                    browser.close()
        except PlaywrightError as e:
            return {**out, "skipped": f"Chromium could not run the player: {str(e).splitlines()[0]}"}
    out.update({k: out["normal"][k] for k in ("frame_ms_p50", "frame_ms_p95", "paint_ms_p95")})
    out["meets_60fps_p95"] = out["frame_ms_p95"] is not None and out["frame_ms_p95"] <= TARGET_MS + 0.5
    return out


if __name__ == "__main__":
    import json

    print(json.dumps(bench(), indent=2))
