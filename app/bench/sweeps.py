"""The sweeps section of `python -m app bench`: the page's default sweeps through the page's own helpers, so the
charts and the bench agree within noise, with the pass-cost points beside them."""

from __future__ import annotations

from typing import Any

from app.bench import pass_cost
from app.errors import UserError
from app.measure.sweeps import SWEEPS, defaults, load, note, run_sweep


def bench(models_dir: str | None = None) -> dict[str, Any]:
    """The `sweeps` section of `python -m app bench`: exactly the page's default sweeps, rows and notes, and the
    pass-cost points (with a Hugging Face model when CONVERGE_SWEEPS names one under pass_cost.hf)."""
    try:
        cfg = defaults()
        models = load(models_dir)
    except UserError as e:
        return {"skipped": str(e)}
    out: dict[str, Any] = {"prompts": cfg["prompts"]}
    for axis in SWEEPS:
        rows = run_sweep(axis, cfg[axis], cfg["prompts"], models=models)
        out[axis] = {"options": cfg[axis], "rows": rows, "note": note(axis, rows)}
    out["pass_cost"] = pass_cost.bench(**cfg["pass_cost"])
    return out
