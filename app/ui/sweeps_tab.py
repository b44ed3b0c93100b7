"""The Sweeps area: one button, one chart and one what-to-notice sentence per sweep, measured live on the twins.

Each handler walks the sweep's plan and yields the chart after every point, so it fills in as points finish,
with the point being measured named under it. Sweeps have their own queue ("sweep", SWEEP_CONCURRENCY at once), so
races cannot starve sweeps nor sweeps races; like a race side on a built-in model, a sweep holds one CPU slot
(app/compute.py, first come first served) while it measures. The points are app.sweeps.defaults(), the same as
`python -m app bench --only sweeps`.
"""

from __future__ import annotations

import copy
import threading
from typing import Any, Callable, Iterator

import gradio as gr

from app import sweeps
from app.compute import COMPUTE
from app.sources.base import SourceError

SWEEP_CONCURRENCY = 1  # sweeps at once across all users: each holds a CPU slot for minutes
TITLES = {"steps": "Steps vs quality and time", "length": "Generation length vs time",
          "threshold": "Threshold vs tokens per forward pass and quality"}
INTRO = ("Each chart is measured live on this machine with the built-in twins: every point runs once per prompt "
         "(greedy) and the chart fills in as points finish. Times are wall seconds on this CPU, so a race running "
         "at the same time slows them; `python -m app bench --only sweeps` measures the same points.")


def describe(axis: str, options: dict[str, Any], prompts: list[str]) -> str:
    """What a sweep measures, from its options, so the reader knows the settings behind the chart."""
    points = options["points"]
    each = f"{len(prompts)} prompt{'s' if len(prompts) != 1 else ''} per point, greedy"
    if axis == "steps":
        return (f"Diffusion at {', '.join(map(str, points))} steps for {options.get('length', 64)} tokens "
                f"(threshold off, the whole length generated), then the AR twin at the same length; {each}.")
    if axis == "length":
        look = options.get("lookahead", 32)
        extra = (f", again with a lookahead of {look} tokens (the model sees only {look} masked positions past "
                 "the current block)," if look else "")
        return (f"Diffusion at a fixed {options.get('steps', 32)} steps{extra} and the AR twin at "
                f"{', '.join(map(str, points))} tokens (the whole length generated); {each}.")
    labels = ", ".join("off" if p is None else f"{p:g}" for p in points)
    length = options.get("length", 64)
    steps = options.get("steps") or length
    return (f"Diffusion at {length} tokens with a budget of {steps} steps and the confidence threshold at {labels} "
            f"(off: the schedule alone, {length / steps:g} token{'' if length == steps else 's'} per step); tokens "
            f"counted up to end-of-text; {each}.")


def run_handler(axis: str, options: dict[str, Any], prompts: list[str]) -> Callable[[], Iterator[tuple[Any, str]]]:
    """The click handler of one sweep: yields (chart, caption) before each point and once at the end."""
    extra = {k: v for k, v in options.items() if k != "points"}

    def run() -> Iterator[tuple[Any, str]]:
        if COMPUTE.busy(1):
            yield sweeps.figure(axis, []), "Waiting for a free CPU: races with built-in models are running..."
        if not COMPUTE.acquire(1, threading.Event()):  # one CPU slot, like a race side, so timings are not thrashed
            return
        try:
            yield sweeps.figure(axis, []), "Loading the twins..."
            for rows, done, total, what in sweeps.iter_sweep(axis, options["points"], prompts, **extra):
                if done < total:
                    yield sweeps.figure(axis, rows), f"Measuring {what} ({done + 1} of {total})..."
                else:
                    yield sweeps.figure(axis, rows), f"**What to notice:** {sweeps.note(axis, rows)}"
        except SourceError as e:
            yield gr.skip(), f"The sweep could not run: {e}"
        finally:
            COMPUTE.release(1)

    return run


def sweeps_tab(settings: dict[str, Any] | None = None) -> None:
    """Builds the Sweeps area inside the open gr.Blocks; `settings` overrides app.sweeps.defaults() (for tests)."""
    warning = ""
    try:
        cfg = sweeps.defaults()
    except SourceError as e:
        cfg, warning = copy.deepcopy(sweeps.DEFAULTS), f"\n\n{e} The built-in points are used instead."
    for key, value in (settings or {}).items():
        cfg[key] = {**cfg[key], **value} if isinstance(cfg.get(key), dict) and isinstance(value, dict) else value
    gr.Markdown(INTRO + warning, elem_id="sweeps-intro")
    for axis in sweeps.SWEEPS:
        with gr.Column(elem_id=f"sweep-{axis}-area"):
            gr.Markdown(f"### {TITLES[axis]}\n{describe(axis, cfg[axis], cfg['prompts'])}")
            button = gr.Button(f"Run {axis} sweep", elem_id=f"sweep-{axis}")
            plot = gr.Plot(label=TITLES[axis], show_label=False, elem_id=f"sweep-{axis}-plot")
            caption = gr.Markdown(f"Not measured yet: press **Run {axis} sweep**.", elem_id=f"sweep-{axis}-note")
        button.click(run_handler(axis, cfg[axis], cfg["prompts"]), outputs=[plot, caption],
                     concurrency_limit=SWEEP_CONCURRENCY, concurrency_id="sweep", show_progress="hidden",
                     api_name=False)
