"""The Sweeps area: one button, one chart and one what-to-notice sentence per sweep, measured live on the twins.

Each handler walks the sweep's plan and yields the chart after every point, so it fills in as points finish,
with the point being measured named under it. Sweeps have their own queue ("sweep", its budget in
app/ui/budgets.py), so races cannot starve sweeps nor sweeps races; like a race side on a built-in model, a sweep
holds one CPU slot (app/race/compute.py, first come first served) while it measures. The points are
app.measure.sweeps.defaults(), the same as `python -m app bench --only sweeps`. The pass-cost chart
(app/measure/pass_cost.py) times one forward pass of the twin, and of a Hugging Face model the user names, on this
machine.
"""

from __future__ import annotations

import copy
import threading
from typing import Any, Callable, Iterator

import gradio as gr

from app.errors import UserError
from app.hf.models import DEVICES
from app.measure import pass_cost, sweeps
from app.race.compute import COMPUTE
from app.serving.policy import LOCAL, Policy
from app.ui.budgets import queued
from app.ui.events import HIDDEN, QUIET
from app.ui.visitor import Visitor, allowed_source, visitor_source

TITLES = {"steps": "Steps vs quality and time", "length": "Generation length vs time",
          "threshold": "Threshold vs tokens per forward pass and quality"}
INTRO = ("Each chart is measured live on this machine with the built-in twins: every point runs on every prompt "
         f"(greedy), {sweeps.REPEATS} times over, and the chart fills in as points finish. Times are the median of "
         "those runs in wall seconds on this CPU, with bars from the fastest to the slowest run; a race running "
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


def twins(policy: Policy) -> sweeps.Models:
    """The built-in twins and their tokenizer, made through the page's one policy check like every other model."""
    diffusion: Any = allowed_source(Visitor(policy), "local-diffusion")
    ar: Any = allowed_source(Visitor(policy), "local-ar")
    return diffusion.model, ar.model, diffusion.tok


def run_handler(axis: str, options: dict[str, Any], prompts: list[str], policy: Policy = LOCAL
                ) -> Callable[[], Iterator[tuple[Any, str]]]:
    """The click handler of one sweep: yields (chart, caption) before each point and once at the end."""
    extra = {k: v for k, v in options.items() if k != "points"}

    def run() -> Iterator[tuple[Any, str]]:
        if COMPUTE.busy(1):
            yield sweeps.figure(axis, []), "Waiting for a free CPU: races with built-in models are running..."
        if not COMPUTE.acquire(1, threading.Event()):  # one CPU slot, like a race side, so timings are not thrashed
            return
        try:
            yield sweeps.figure(axis, []), "Loading the twins..."
            for rows, done, total, what in sweeps.iter_sweep(axis, options["points"], prompts, twins(policy), **extra):
                if done < total:
                    yield sweeps.figure(axis, rows), f"Measuring {what} ({done + 1} of {total})..."
                else:
                    yield sweeps.figure(axis, rows), f"**What to notice:** {sweeps.note(axis, rows)}"
        except UserError as e:
            yield gr.skip(), f"The sweep could not run: {e}"
        finally:
            COMPUTE.release(1)

    return run


PASS_COST_INTRO = (
    "### The cost of one forward pass\nMilliseconds of one pass against the positions it recomputes, measured "
    "here: the built-in diffusion twin as its sampler runs a block step (a cache of 320 positions, the block "
    "recomputed), and optionally a Hugging Face model you name, one forward on its own device. On a GPU a pass "
    "over a few dozen positions costs about what a pass over one does (reading the weights is the bottleneck: "
    "memory-bound), which is why diffusion's many tokens per pass win there; on a CPU the arithmetic is the "
    "bottleneck (compute-bound) and the line climbs.")


def pass_cost_handler(points: list[int], policy: Policy = LOCAL) -> Callable[[str, str], Iterator[tuple[Any, str]]]:
    """The pass-cost button: the twin's points, then the named Hugging Face model's (if any), the chart after each;
    both made through the page's one policy check (app/ui/visitor.py), as a race makes its sides."""
    def run(hf: str, device: str) -> Iterator[tuple[Any, str]]:
        colours = [sweeps.OKABE_ITO["blue"], sweeps.OKABE_ITO["vermillion"]]
        series: dict[str, list[dict[str, Any]]] = {}
        notes: list[str] = []
        hf = (hf or "").strip()
        if COMPUTE.busy(1):
            yield pass_cost.figure({}, colours), "Waiting for a free CPU: races with built-in models are running..."
        if not COMPUTE.acquire(1, threading.Event()):
            return
        try:
            model = twins(policy)[0]
            todo = pass_cost.twin_points(model, points)
            for rows, done in pass_cost.iter_rounds(lambda n: pass_cost.twin_pass(model, n), todo):
                series[pass_cost.TWIN] = rows
                if done < pass_cost.REPEATS:
                    yield (pass_cost.figure(series, colours),
                           f"Timing the twin: round {done + 1} of {pass_cost.REPEATS}...")
            notes.append(pass_cost.note(series[pass_cost.TWIN]))
            if hf:
                yield pass_cost.figure(series, colours), f"Loading {hf}..."
                net, vocab, max_len, dev, label = pass_cost.load_hf(hf, device, visitor_source(Visitor(policy)))
                todo = pass_cost.hf_points(max_len, points)
                for rows, done in pass_cost.iter_rounds(lambda n: pass_cost.hf_pass(net, n, vocab, dev), todo):
                    series[label] = rows
                    if done < pass_cost.REPEATS:
                        yield (pass_cost.figure(series, colours),
                               f"Timing {label}: round {done + 1} of {pass_cost.REPEATS}...")
                notes.append(pass_cost.note(series[label], label))
            yield pass_cost.figure(series, colours), "**What to notice:** " + " ".join(n for n in notes if n)
        except UserError as e:
            yield gr.skip(), " ".join([f"**What to notice:** {notes[0]}" if notes else "",
                                       f"The pass-cost sweep could not run: {e}"]).strip()
        finally:
            COMPUTE.release(1)

    return run


def sweeps_tab(settings: dict[str, Any] | None = None, policy: Policy = LOCAL) -> None:
    """Builds the Sweeps area inside the open gr.Blocks under the page's `policy`; `settings` overrides
    app.measure.sweeps.defaults() (for tests)."""
    warning = ""
    try:
        cfg = sweeps.defaults()
    except UserError as e:
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
        button.click(run_handler(axis, cfg[axis], cfg["prompts"], policy), outputs=[plot, caption],
                     **queued("sweep"), **QUIET)
    with gr.Column(elem_id="sweep-pass-cost-area"):
        gr.Markdown(PASS_COST_INTRO)
        with gr.Row():
            hf = gr.Textbox(label="Also time a Hugging Face model (optional)", placeholder="hf-ar:gpt2",
                            value=cfg["pass_cost"].get("hf") or "", elem_id="sweep-pass-cost-hf", scale=3)
            device = gr.Dropdown(label="Its device", choices=list(DEVICES),
                                 value=cfg["pass_cost"].get("device", "auto"), elem_id="sweep-pass-cost-device",
                                 scale=1)
        button = gr.Button("Run pass-cost sweep", elem_id="sweep-pass-cost")
        plot = gr.Plot(label="The cost of one forward pass", show_label=False, elem_id="sweep-pass-cost-plot")
        caption = gr.Markdown("Not measured yet: press **Run pass-cost sweep**.", elem_id="sweep-pass-cost-note")
    button.click(pass_cost_handler(list(cfg["pass_cost"]["points"]), policy), inputs=[hf, device],
                 outputs=[plot, caption], **queued("sweep"), **HIDDEN,
                 api_name=False)
