"""Sweeps over the built-in twins: steps vs time and quality, length vs time, threshold vs tokens per pass and quality.

The page's sweep charts and `python -m app bench --only sweeps` run the same plans through the same helpers
(app/measure/quality.py, also behind the engine bench), so the charts and the bench agree within noise.
Each point is one setting run on every prompt, REPEATS times over; a row holds the swept value, the series, the
median over those runs of the mean wall seconds per answer (with the fastest and slowest run, `seconds_min` and
`seconds_max`, drawn as the chart's error bars), forward passes, tokens per forward pass, perplexity under the AR twin,
distinct-2 and the texts. `CONVERGE_SWEEPS` (JSON, merged over DEFAULTS) changes the points for both.
The pass-cost sweep (milliseconds of one forward pass against the positions it recomputes) lives in
app/measure/pass_cost.py; its options are DEFAULTS["pass_cost"] and the bench reports it beside these three.
"""

from __future__ import annotations

import copy
import json
import math
import os
import statistics
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Callable, Iterator, Sequence

from app.engine.autoregressive import ARSettings
from app.engine.diffusion import DiffusionSettings
from app.errors import UserError
from app.measure import pass_cost
from app.measure.quality import PROMPTS, run_ar, run_diffusion, samples

if TYPE_CHECKING:
    import plotly.graph_objects as go

SWEEPS = ("steps", "length", "threshold")
REPEATS = 3  # runs of each point whose median time is charted (passes and perplexity are the same every run)
DEFAULTS: dict[str, Any] = {
    "prompts": list(PROMPTS),
    "steps": {"points": [8, 16, 32, 64], "length": 64},
    "length": {"points": [32, 64, 128], "steps": 32, "lookahead": 32},
    "threshold": {"points": [None, 0.9, 0.7, 0.5, 0.3], "length": 64},
    # hf: a Hugging Face source (hf-ar:ID, hf-diffusion:ID) measured beside the twin, on `device`
    "pass_cost": {"points": list(pass_cost.POINTS), "hf": None, "device": "auto"},
}
SWEEP_NOTES = {
    "steps": "In medians of {runs} runs (the bars span the fastest to the slowest), "
             "from {lo} to {hi} steps for answers of {length} tokens, diffusion took {time_ratio}x the time "
             "({s_lo} s to {s_hi} s) and its perplexity under the AR twin {ppl} (lower is better); "
             "the AR twin took {ar_s} s at perplexity {ar_p}.",
    "length": "In medians of {runs} runs (the bars span the fastest to the slowest), from {lo} to {hi} tokens, "
              "diffusion took {d_ratio}x the time at a fixed {d_nfe} forward passes"
              "{lookahead}, while the AR twin took {a_ratio}x the time as its passes went from {a_nfe_lo} to "
              "{a_nfe_hi}.",
    "threshold": "From {first} to {last}, the diffusion twin's tokens per forward pass {tpf} (the AR twin "
                 "always makes 1) and its perplexity under the AR twin {ppl} (lower is better).",
}
OKABE_ITO = {"blue": "#0072B2", "orange": "#E69F00", "green": "#009E73", "vermillion": "#D55E00",
             "sky": "#56B4E9", "purple": "#CC79A7", "yellow": "#F0E442", "black": "#000000"}
SERIES = {  # label, colour, marker, dash
    "diffusion": ("diffusion twin", OKABE_ITO["blue"], "circle", "solid"),
    "diffusion_lookahead": ("diffusion twin, short lookahead", OKABE_ITO["green"], "diamond", "dot"),
    "ar": ("AR twin (KV cache)", OKABE_ITO["orange"], "square", "dash"),
}
Progress = Callable[[int, int, str], None]
Models = tuple[Any, Any, Any]  # diffusion twin, AR twin, tokenizer


@dataclass(frozen=True)
class Point:
    """One measurement of a sweep: which series, the swept value (None: threshold off or the AR reference)."""

    axis: str
    series: str
    x: Any
    settings: DiffusionSettings | ARSettings
    what: str


def defaults() -> dict[str, Any]:
    """The page's and the bench's sweep options: DEFAULTS, with CONVERGE_SWEEPS (JSON) merged over each sweep."""
    out = copy.deepcopy(DEFAULTS)
    raw = os.environ.get("CONVERGE_SWEEPS")
    if raw:
        try:
            extra = json.loads(raw)
        except ValueError as e:
            raise UserError(f"CONVERGE_SWEEPS is not valid JSON ({e}).") from None
        for key, value in extra.items():
            if isinstance(out.get(key), dict) and isinstance(value, dict):
                out[key].update(value)
            else:
                out[key] = value
    return out


def _block(length: int) -> int:
    """Blocks of 32 tokens where the length allows it, else the largest block that divides the length."""
    return math.gcd(length, 32)


def plan(axis: str, points: Sequence[Any], length: int = 64, steps: int | None = None,
         lookahead: int = 0) -> list[Point]:
    """The measurements of one sweep, in order, with their settings checked before anything runs."""
    out: list[Point] = []
    if axis == "steps":
        for n in points:
            s = DiffusionSettings(gen_length=length, steps=n, block_length=_block(length), threshold=None,
                                  stop_at_eos=False)
            out.append(Point(axis, "diffusion", n, s, f"diffusion at {n} steps"))
        out.append(Point(axis, "ar", None, ARSettings(gen_length=length, stop_at_eos=False), f"AR at {length} tokens"))
    elif axis == "length":
        for n in points:
            s = DiffusionSettings(gen_length=n, steps=steps or 32, block_length=_block(n), threshold=None,
                                  stop_at_eos=False)
            out.append(Point(axis, "diffusion", n, s, f"diffusion at {n} tokens"))
            if lookahead:
                out.append(Point(axis, "diffusion_lookahead", n, replace(s, lookahead=lookahead),
                                 f"diffusion at {n} tokens, lookahead of {lookahead}"))
            out.append(Point(axis, "ar", n, ARSettings(gen_length=n, stop_at_eos=False), f"AR at {n} tokens"))
    elif axis == "threshold":
        base = DiffusionSettings(gen_length=length, steps=steps or length, block_length=_block(length), threshold=None)
        for th in points:
            out.append(Point(axis, "diffusion", th, replace(base, threshold=th), f"diffusion, {_threshold(th)}"))
    else:
        raise ValueError(f"unknown sweep {axis!r}: choose one of {', '.join(SWEEPS)}")
    for p in out:
        p.settings.validate()
    return out


def load(models_dir: str | None = None) -> Models:
    """The twins and their tokenizer (loaded once per process by app.sources.local.twin)."""
    from app.sources.local import twin

    dm, tok = twin("diffusion", models_dir)
    am, _ = twin("ar", models_dir)
    return dm, am, tok


def warm(models: Models, prompt_ids: list[int]) -> None:
    """One tiny untimed run of each twin, so the first point does not pay for first-call costs."""
    dm, am, _ = models
    run_diffusion(dm, prompt_ids, DiffusionSettings(gen_length=8, steps=2, block_length=8))
    run_ar(am, prompt_ids, ARSettings(gen_length=4))


def measure(point: Point, prompt_ids: Sequence[list[int]], models: Models, repeats: int = REPEATS) -> dict[str, Any]:
    """One row: the point's series and swept value, then samples() over every prompt, its time the median of
    `repeats` runs over every prompt (each run's time the mean per answer), with the fastest and slowest."""
    dm, am, tok = models
    kind = "ar" if point.series == "ar" else "diffusion"
    model = am if kind == "ar" else dm
    row = {"series": point.series, point.axis: point.x, **samples(kind, model, am, tok, prompt_ids, point.settings)}
    times = [row["seconds"]]
    for _ in range(max(1, repeats) - 1):
        run: Callable[..., tuple[list[int], int, float]] = run_ar if kind == "ar" else run_diffusion
        times.append(sum(run(model, p, point.settings)[2] for p in prompt_ids) / len(prompt_ids))
    row.update(seconds=statistics.median(times), seconds_min=min(times), seconds_max=max(times), runs=len(times))
    return row


def iter_sweep(axis: str, points: Sequence[Any], prompts: Sequence[str] = PROMPTS, models: Models | None = None,
               repeats: int = REPEATS, **options: Any) -> Iterator[tuple[list[dict[str, Any]], int, int, str]]:
    """Yields (rows so far, points done, points in all, what runs next) before each point and once at the end."""
    todo = plan(axis, points, **options)
    models = models or load()
    prompt_ids = [models[2].encode(p) for p in prompts]
    if not prompt_ids:
        raise UserError("A sweep needs at least one prompt.")
    warm(models, prompt_ids[0])
    rows: list[dict[str, Any]] = []
    for i, p in enumerate(todo):
        yield list(rows), i, len(todo), p.what
        rows.append(measure(p, prompt_ids, models, repeats))
    yield list(rows), len(todo), len(todo), "done"


def _collect(steps: Iterator[tuple[list[dict[str, Any]], int, int, str]],
             progress: Progress | None) -> list[dict[str, Any]]:
    """Runs a sweep to its end, reporting each step to `progress`; returns the last rows."""
    rows: list[dict[str, Any]] = []
    for rows, done, total, what in steps:  # noqa: B007 - rows after the loop: the last step's
        if progress:
            progress(done, total, what)
    return rows


def steps_sweep(points: Sequence[int] = (8, 16, 32, 64), prompts: Sequence[str] = PROMPTS,
                progress: Progress | None = None, *, length: int = 64,
                models: Models | None = None) -> list[dict[str, Any]]:
    """Diffusion at each step count for one length (threshold off, full length), then the AR twin at that length."""
    return _collect(iter_sweep("steps", points, prompts, models, length=length), progress)


def length_sweep(points: Sequence[int] = (32, 64, 128), prompts: Sequence[str] = PROMPTS,
                 progress: Progress | None = None, *, steps: int = 32, lookahead: int = 32,
                 models: Models | None = None) -> list[dict[str, Any]]:
    """At each length: diffusion at a fixed step count, the same with a short lookahead (0: skip), and the AR twin."""
    return _collect(iter_sweep("length", points, prompts, models, steps=steps, lookahead=lookahead), progress)


def threshold_sweep(points: Sequence[float | None] = (None, 0.9, 0.7, 0.5, 0.3), prompts: Sequence[str] = PROMPTS,
                    progress: Progress | None = None, *, length: int = 64, steps: int | None = None,
                    models: Models | None = None) -> list[dict[str, Any]]:
    """Diffusion at each confidence threshold (None: off, one token per step), steps = length unless given."""
    return _collect(iter_sweep("threshold", points, prompts, models, length=length, steps=steps), progress)


SWEEP_FUNCTIONS: dict[str, Callable[..., list[dict[str, Any]]]] = {
    "steps": steps_sweep, "length": length_sweep, "threshold": threshold_sweep}


def run_sweep(axis: str, options: dict[str, Any], prompts: Sequence[str] = PROMPTS,
              progress: Progress | None = None, models: Models | None = None) -> list[dict[str, Any]]:
    """One sweep from an options dict as in DEFAULTS ({"points": [...], other keyword options})."""
    extra = {k: v for k, v in options.items() if k != "points"}
    return SWEEP_FUNCTIONS[axis](options["points"], prompts, progress, models=models, **extra)


def _threshold(th: float | None) -> str:
    return "threshold off" if th is None else f"threshold {th:g}"


def _n(value: float | None) -> str:
    """A figure to 3 significant digits, as the notes quote it."""
    return "n/a" if value is None else f"{value:.3g}"


def _change(a: float | None, b: float | None) -> str:
    """'went from A to B', or 'stayed at A' when both read the same to 3 significant digits."""
    return f"stayed at {_n(a)}" if _n(a) == _n(b) else f"went from {_n(a)} to {_n(b)}"


def _ratio(a: float | None, b: float | None) -> str:
    return _n(a / b) if a is not None and b else "n/a"


def _series(rows: Sequence[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    return [r for r in rows if r["series"] == name]


def note(axis: str, rows: Sequence[dict[str, Any]]) -> str:
    """The sweep's what-to-notice sentence, with every number computed from these rows ('' when too few)."""
    d = _series(rows, "diffusion")
    if len(d) < 2:
        return ""
    lo, hi = d[0], d[-1]
    if axis == "steps":
        ar = _series(rows, "ar")
        if not ar:
            return ""
        return SWEEP_NOTES["steps"].format(
            runs=lo.get("runs", 1), lo=lo["steps"], hi=hi["steps"], length=lo["settings"]["gen_length"],
            time_ratio=_ratio(hi["seconds"], lo["seconds"]), s_lo=_n(lo["seconds"]), s_hi=_n(hi["seconds"]),
            ppl=_change(lo["ppl"], hi["ppl"]), ar_s=_n(ar[0]["seconds"]), ar_p=_n(ar[0]["ppl"]))
    if axis == "length":
        ar, w = _series(rows, "ar"), _series(rows, "diffusion_lookahead")
        if len(ar) < 2:
            return ""
        nfe = sorted({r["nfe"] for r in d})
        lookahead = ""
        if len(w) >= 2:
            lookahead = (f" ({_ratio(w[-1]['seconds'], w[0]['seconds'])}x with a lookahead of "
                         f"{w[0]['settings']['lookahead']} tokens)")
        return SWEEP_NOTES["length"].format(
            runs=lo.get("runs", 1), lo=lo["length"], hi=hi["length"], d_ratio=_ratio(hi["seconds"], lo["seconds"]),
            d_nfe=_n(nfe[0]) if len(nfe) == 1 else f"{_n(nfe[0])} to {_n(nfe[-1])}", lookahead=lookahead,
            a_ratio=_ratio(ar[-1]["seconds"], ar[0]["seconds"]), a_nfe_lo=_n(ar[0]["nfe"]), a_nfe_hi=_n(ar[-1]["nfe"]))
    if axis == "threshold":
        return SWEEP_NOTES["threshold"].format(
            first=_threshold(lo["threshold"]), last=_threshold(hi["threshold"]),
            tpf=_change(lo["tokens_per_forward"], hi["tokens_per_forward"]), ppl=_change(lo["ppl"], hi["ppl"]))
    raise ValueError(f"unknown sweep {axis!r}")


def _spread(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Error bars from each row's median time to its fastest and slowest run."""
    return {"type": "data", "symmetric": False, "thickness": 1.5, "width": 5,
            "array": [r.get("seconds_max", r["seconds"]) - r["seconds"] for r in rows],
            "arrayminus": [r["seconds"] - r.get("seconds_min", r["seconds"]) for r in rows]}


def _trace(go: Any, name: str, x: list[Any], y: list[Any], rows: Sequence[dict[str, Any]] | None = None,
           showlegend: bool = True, label: str | None = None, spread: bool = False) -> Any:
    """One series in its Okabe-Ito colour, marker and dash (so it also reads in greyscale); `spread`: the rows' time
    bars (fastest to slowest run)."""
    text, colour, symbol, dash = SERIES[name]
    hover = None
    if rows is not None:
        hover = [f"{r['seconds']:.3g} s per answer (median of {r.get('runs', 1)} runs, "
                 f"{r.get('seconds_min', r['seconds']):.3g} to {r.get('seconds_max', r['seconds']):.3g} s), "
                 f"{r['nfe']} passes, {r['tokens_per_forward']} tokens per pass, "
                 f"perplexity {r['ppl']}, distinct-2 {r['distinct2']}" for r in rows]
    return go.Scatter(x=x, y=y, name=label or text, legendgroup=name, showlegend=showlegend,
                      error_y={**_spread(rows), "color": colour} if spread and rows is not None else None,
                      mode="lines+markers" if rows is not None else "lines", hovertext=hover,
                      line={"color": colour, "dash": dash, "width": 2.5},
                      marker={"color": colour, "symbol": symbol, "size": 9})


def _reference(go: Any, name: str, x: list[Any], y: float | None, label: str, showlegend: bool) -> Any:
    """A flat line across the swept range for a series that has no swept value (the AR twin)."""
    return _trace(go, name, [x[0], x[-1]] if x else [], [y, y] if x else [], showlegend=showlegend, label=label)


def figure(axis: str, rows: Sequence[dict[str, Any]]) -> "go.Figure":
    """The sweep's chart (empty axes while no row is in), Okabe-Ito colours, axis titles with units."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    d = _series(rows, "diffusion")
    xs = [r[axis] for r in d]
    if axis == "steps":
        length = d[0]["settings"]["gen_length"] if d else None
        fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.14,
                            subplot_titles=("Time per answer", "Quality (lower is better)"))
        for col, key in ((1, "seconds"), (2, "ppl")):
            fig.add_trace(_trace(go, "diffusion", xs, [r[key] for r in d], d, showlegend=col == 1,
                                 spread=key == "seconds"), row=1, col=col)
            for r in _series(rows, "ar"):
                fig.add_trace(_reference(go, "ar", xs, r[key], "AR twin (KV cache), same length", col == 1),
                              row=1, col=col)
            fig.update_xaxes(title_text=f"diffusion steps for {length or 'the'} tokens (log scale)", type="log",
                             tickvals=xs, row=1, col=col)
        fig.update_yaxes(title_text="seconds per answer (s), median", rangemode="tozero", row=1, col=1)
        fig.update_yaxes(title_text="perplexity under the AR twin (log scale)", type="log", row=1, col=2)
        title = "Steps: time and quality"
    elif axis == "length":
        fig = go.Figure()
        for name in ("diffusion", "diffusion_lookahead", "ar"):
            part = _series(rows, name)
            label = None
            if name == "diffusion" and part:
                label = f"diffusion twin, {part[0]['settings']['steps']} steps"
            if name == "diffusion_lookahead" and part:
                label = f"diffusion twin, lookahead of {part[0]['settings']['lookahead']} tokens"
            if part:
                fig.add_trace(_trace(go, name, [r["length"] for r in part], [r["seconds"] for r in part], part,
                                     label=label, spread=True))
        lengths = sorted({r["length"] for r in rows})
        fig.update_xaxes(title_text="generation length (tokens)", tickvals=lengths, rangemode="tozero")
        fig.update_yaxes(title_text="seconds per answer (s), median", rangemode="tozero")
        title = "Length: time per answer"
    elif axis == "threshold":
        labels = ["off" if x is None else f"{x:g}" for x in xs]
        fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.14,
                            subplot_titles=("Parallel decoding", "Quality (lower is better)"))
        fig.add_trace(_trace(go, "diffusion", labels, [r["tokens_per_forward"] for r in d], d), row=1, col=1)
        fig.add_trace(_reference(go, "ar", labels, 1.0, "AR twin: 1 token per pass (by construction)", True),
                      row=1, col=1)
        fig.add_trace(_trace(go, "diffusion", labels, [r["ppl"] for r in d], d, showlegend=False), row=1, col=2)
        for col in (1, 2):
            fig.update_xaxes(title_text="confidence threshold (off: one token per step)", type="category",
                             row=1, col=col)
        fig.update_yaxes(title_text="tokens per forward pass", rangemode="tozero", row=1, col=1)
        fig.update_yaxes(title_text="perplexity under the AR twin", rangemode="tozero", row=1, col=2)
        title = "Threshold: tokens per forward pass and quality"
    else:
        raise ValueError(f"unknown sweep {axis!r}")
    fig.update_layout(title={"text": title}, template="plotly_white", height=400,
                      margin={"l": 60, "r": 20, "t": 70, "b": 60},
                      legend={"orientation": "h", "yanchor": "top", "y": -0.22, "x": 0},
                      font={"family": "DejaVu Sans, Arial, sans-serif", "size": 13})
    return fig
