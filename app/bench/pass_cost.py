"""The pass-cost part of the sweeps section of `python -m app bench`: one forward pass of the twin (and of a named
Hugging Face model) against how many positions it recomputes, timed as the page's pass-cost chart times it."""

from __future__ import annotations

from typing import Any, Sequence

from app.errors import UserError
from app.measure.pass_cost import (
    POINTS,
    REPEATS,
    TWIN,
    hf_pass,
    hf_points,
    load_hf,
    note,
    run_points,
    twin_pass,
    twin_points,
)
from app.sources.base import make_source
from app.sources.local import twin


def bench(points: Sequence[int] = POINTS, hf: str | None = None, device: str = "auto",
          repeats: int = REPEATS) -> dict[str, Any]:
    """The pass-cost part of `python -m app bench --only sweeps`: the twin's points and, when `hf` names a
    Hugging Face source, that model's points on its device, each with its note."""
    out: dict[str, Any] = {"points": list(points), "repeats": repeats}
    try:
        model, _ = twin("diffusion")
    except UserError as e:
        return {**out, "skipped": str(e)}
    rows = run_points(lambda n: twin_pass(model, n), twin_points(model, points), repeats)
    out["twin"] = {"label": TWIN, "rows": rows, "note": note(rows)}
    if hf:
        try:
            # the host's own command: no visitor policy
            net, vocab, max_len, dev, label = load_hf(hf, device, make_source)
        except UserError as e:
            out["hf"] = {"skipped": str(e)}
            return out
        rows = run_points(lambda n: hf_pass(net, n, vocab, dev), hf_points(max_len, points), repeats)
        out["hf"] = {"label": label, "rows": rows, "note": note(rows, label)}
    return out
