"""The cost of one forward pass against the positions it recomputes (1 to 256), measured on this machine.

Why it matters: a diffusion model wins by fixing many tokens per pass, which pays only where a pass over many
positions costs about as much as a pass over one (a GPU at small batches, memory-bound); on a CPU the
arithmetic grows with the positions (compute-bound). The built-in diffusion twin is timed exactly as its
sampler runs a DualCache step: `logits(ids, cache, start, stop)` recomputes the N positions start..stop-1
(and the last prefix token, whose output scores position start) against a cache of the whole
320-position sequence, output head included. A Hugging Face model is timed as its adapter runs a step:
one forward over N positions on its own device, synchronised on a GPU. After one untimed pass of each, the
points are timed round-robin, one pass of each per round, so a load that comes and goes on a shared machine
hits every point alike; each point is the median of its rounds, with the worst beside it. The page's chart
and `python -m app bench --only sweeps` time the same points the same way.
"""

from __future__ import annotations

import statistics
import time
from typing import TYPE_CHECKING, Any, Callable, Iterator, Sequence

import numpy as np

if TYPE_CHECKING:
    import plotly.graph_objects as go

POINTS = (1, 2, 4, 8, 16, 32, 64, 128, 256)
REPEATS = 15  # timed passes per point
PROMPT = 16  # positions before the recomputed ones, as a short prompt
TWIN = "built-in diffusion twin (numpy, CPU)"
Pass = Callable[[], Any]


def twin_pass(model: Any, n: int) -> Pass:
    """One DualCache step of the twin recomputing `n` positions, its cache built once, as the sampler builds it."""
    T = model.max_len  # the longest sequence the twin takes: the cache covers all of it
    if not 1 <= n < T - PROMPT:
        raise ValueError(f"the twin can recompute 1 to {T - PROMPT - 1} positions, not {n}")
    ids = np.random.default_rng(0).integers(3, model.vocab_size, size=T)
    cache = model.prefix_cache(ids, upto=PROMPT)
    return lambda: model.logits(ids, cache, PROMPT, PROMPT + n)


def hf_pass(model: Any, n: int, vocab_size: int, device: str) -> Pass:
    """One forward of a transformers model over `n` positions on `device`, waiting for the GPU to finish."""
    import torch

    ids = torch.as_tensor(np.random.default_rng(0).integers(10, vocab_size, size=(1, n)), device=device)
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)

    def run() -> Any:
        with torch.inference_mode():
            out = model(input_ids=ids).logits
        sync()
        return out

    return run


def _rows(points: Sequence[int], samples: Sequence[list[float]]) -> list[dict[str, Any]]:
    return [{"positions": n, "ms": round(statistics.median(ms), 3), "ms_worst": round(max(ms), 3)}
            for n, ms in zip(points, samples) if ms]


def iter_rounds(make: Callable[[int], Pass], points: Sequence[int], repeats: int = REPEATS
                ) -> Iterator[tuple[list[dict[str, Any]], int]]:
    """Yields (rows from the rounds so far, rounds done) after the untimed pass of every point and after each round;
    a row is positions, ms (median) and ms_worst."""
    runs = [make(n) for n in points]
    for run in runs:
        run()
    samples: list[list[float]] = [[] for _ in points]
    yield [], 0
    for r in range(repeats):
        for run, ms in zip(runs, samples):
            start = time.perf_counter()
            run()
            ms.append((time.perf_counter() - start) * 1000)
        yield _rows(points, samples), r + 1


def run_points(make: Callable[[int], Pass], points: Sequence[int], repeats: int = REPEATS) -> list[dict[str, Any]]:
    """Every point's row after all the rounds."""
    rows: list[dict[str, Any]] = []
    for rows, _ in iter_rounds(make, points, repeats):  # noqa: B007 - rows after the loop: the last round's
        pass
    return rows


def twin_points(model: Any, points: Sequence[int] = POINTS) -> list[int]:
    """The points the twin can take (at most its sequence length less the prompt)."""
    return [n for n in points if n < model.max_len - PROMPT]


def load_hf(spec: str, device: str, make: Callable[..., Any]) -> tuple[Any, int, int, str, str]:
    """(torch model, vocabulary size, positions it takes, device, label) of a Hugging Face source such as
    `hf-ar:gpt2`, made by `make(spec, **settings)` (the page's policy-checked factory, or make_source on the command
    line), as a race makes it; raises UserError with the sentence to show."""
    from app.errors import UserError

    if not spec.startswith(("hf-ar:", "hf-diffusion:")):
        raise UserError(f"Name a Hugging Face source such as hf-ar:MODEL or hf-diffusion:MODEL, not {spec[:80]!r}.")
    source = make(spec, device=device)
    wrapper = source.model
    placement = wrapper.placement
    return (wrapper.model, wrapper.vocab_size, wrapper.max_len, placement["device"],
            f"{spec.partition(':')[2]} ({placement['device']}, {placement['dtype']})")


def hf_points(max_len: int, points: Sequence[int] = POINTS) -> list[int]:
    return [n for n in points if n <= max_len]


def note(rows: Sequence[dict[str, Any]], label: str = TWIN) -> str:
    """One sentence from the points: what a 32-token pass (or the largest measured) costs against a 1-token pass."""
    by = {r["positions"]: r["ms"] for r in rows}
    if 1 not in by or len(by) < 2 or not by[1]:
        return ""
    big = 32 if 32 in by else max(by)
    top = max(by)
    sentence = (f"On this machine, for the {label}, a {big}-token pass costs {by[big] / by[1]:.1f}x a 1-token pass "
                f"({by[big]:.2f} ms against {by[1]:.2f} ms)")
    if top != big:
        sentence += f", and a {top}-token pass {by[top] / by[1]:.1f}x"
    return sentence + (f": {big} tokens in one pass save {(1 - by[big] / (big * by[1])) * 100:.0f}% of {big} "
                       "one-token passes.")


def figure(series: dict[str, list[dict[str, Any]]], colours: Sequence[str]) -> "go.Figure":
    """Milliseconds per pass against positions recomputed (log-log), one line per model in `colours` (with its own
    marker and dash, so the lines also differ in greyscale)."""
    import plotly.graph_objects as go

    fig = go.Figure()
    for (label, rows), colour, symbol, dash in zip(series.items(), colours, ("circle", "square"), ("solid", "dash")):
        fig.add_trace(go.Scatter(
            x=[r["positions"] for r in rows], y=[r["ms"] for r in rows], name=label, mode="lines+markers",
            hovertext=[f"{r['positions']} positions: median {r['ms']} ms, worst {r['ms_worst']} ms" for r in rows],
            line={"color": colour, "dash": dash, "width": 2.5}, marker={"color": colour, "symbol": symbol, "size": 9}))
    fig.update_xaxes(title_text="positions recomputed in one pass (log scale)", type="log", tickvals=list(POINTS))
    fig.update_yaxes(title_text="milliseconds per pass (log scale)", type="log")
    fig.update_layout(title={"text": "The cost of one forward pass"}, template="plotly_white", height=400,
                      margin={"l": 60, "r": 20, "t": 70, "b": 60},
                      legend={"orientation": "h", "yanchor": "top", "y": -0.22, "x": 0},
                      font={"family": "DejaVu Sans, Arial, sans-serif", "size": 13})
    return fig
