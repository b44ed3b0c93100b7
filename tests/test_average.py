"""The weighted mean of two diffusion twins' weights (WiSE-FT): what it computes, what its log keeps, what the page
says of it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from app.training.average import mean_weights


def test_the_mean_takes_the_newer_twins_share_of_each_tensor_and_refuses_another_architecture() -> None:
    new, old = {"w": np.full((2, 2), 3.0, dtype=np.float16)}, {"w": np.full((2, 2), 1.0, dtype=np.float16)}
    assert np.allclose(mean_weights(new, old, 0.75)["w"], 2.5)
    with pytest.raises(ValueError, match="same architecture"):
        mean_weights(new, {"w": np.ones((2, 3))}, 0.5)


def test_the_mean_twin_loads_keeps_its_chain_and_the_page_says_how_it_was_made(tmp_path: Path) -> None:
    pytest.importorskip("torch", reason="the held-out figures need torch, the optional training extra")
    from safetensors.numpy import load_file

    from app.engine.model import DEFAULT_MODELS_DIR, load_twin
    from app.measure.quality import CORPUS, TRAINING_FILES
    from app.training import average
    from app.ui.about import chain, twins_note

    files = [str(CORPUS / f) for f in TRAINING_FILES]
    if not all(Path(f).is_file() for f in files):
        pytest.skip("the training stories (../shared/corpus) are not beside the repository")
    out = tmp_path / "mean"
    average.main(["--new", str(DEFAULT_MODELS_DIR), "--old", str(DEFAULT_MODELS_DIR), "--weight", "0.6",
                  "--corpus", *files, "--out", str(out), "--val-windows", "4"])
    shipped, mean = (load_file(str(f / "diffusion.safetensors")) for f in (DEFAULT_MODELS_DIR, out))
    assert all(np.array_equal(shipped[k], mean[k]) for k in shipped)  # a twin averaged with itself is itself
    log = json.loads((out / "diffusion.json").read_text())["training"]
    before = json.loads((DEFAULT_MODELS_DIR / "diffusion.json").read_text())["training"]
    assert log["averaged"]["weight"] == 0.6 and log["tokens_this_run"] == 0 and chain(log)[1:] == chain(before)
    assert log["held_out"]["nelbo_estimate"] > 0
    load_twin("diffusion", out)
    _, details = twins_note(out)
    assert "60% its own and 40% those of the twin it was before" in details
