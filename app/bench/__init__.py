"""The bench room: every speed and quality figure docs/figures.md quotes, measured in one run of `python -m app bench`
(app/cli/bench.py). One module per section, each importing the domain it measures (analysis, engine, race, sweeps,
lessons, exports, the player), never imported by it, so measuring code stays out of the code it measures.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable

# each section: the module of this room whose `bench()` measures it, imported only when that section runs
SECTIONS = {
    "pipeline": "app.bench.pipeline",
    "engine": "app.bench.engine",
    "twins": "app.bench.twins",
    "uniform": "app.bench.uniform",
    "race": "app.bench.race",
    "sweeps": "app.bench.sweeps",
    "lessons": "app.bench.lessons",
    "export": "app.bench.video",
    "player": "app.bench.player",
    "live": "app.bench.live",
    "browser": "app.bench.browser",
    "served": "app.bench.served",
    "caps": "app.bench.caps",
    "budgets": "app.bench.budgets",
    "disk": "app.bench.disk",
    "diffusion-gemma": "app.bench.diffusion_gemma",
    "revise": "app.bench.revise",
    "board": "app.bench.board",
}


def missing_twins(folder: str) -> str | None:
    """One sentence saying why the twins section cannot run on a --models folder (None when it can): what load_twin
    finds missing or corrupt, or no commit filter, which load_twin leaves optional but the page's defaults use (a
    candidate from app.training.train has none until fit_filter fits one). The twins stay loaded for the section."""
    from app.engine.model import load_twin
    from app.errors import UserError

    try:
        dm = load_twin("diffusion", folder)[0]
        for kind in ("ar", "referee"):
            load_twin(kind, folder)
    except UserError as e:
        return str(e)
    if dm.commit_filter is None:
        return (f"{folder} has no diffusion.filter.safetensors (fit the filter first: python -m "
                "app.training.fit_filter --models DIR --corpus ../shared/corpus/tinystories-*.txt).")
    return None


def section(name: str) -> Callable[..., dict[str, Any]]:
    """The `bench` function of the named section's module (twins' and uniform's take a models folder)."""
    return importlib.import_module(SECTIONS[name]).bench
