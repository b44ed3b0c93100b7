"""The twins' ONNX graphs (app/site/graph.py) compute what the numpy network computes, through the same caches.

Tolerance: every logit within 1e-4 of numpy's (they reach about 25 in size; float32 matmuls summed in another order
differ by about 3e-5), and the same top token at every row. Each pass is checked as the samplers make it: the AR
twin's prefill and cached decodes, the diffusion twin's block-start refresh and a DualCache step of the block.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from app.engine.model import load_twin
from app.site import graph

ort = pytest.importorskip("onnxruntime", reason="onnxruntime (requirements-test.txt) checks the graphs")
pytest.importorskip("onnx", reason="the onnx package (requirements.txt) builds the graphs")
ATOL = 1e-4


def _session(kind: str, tmp_path: Path) -> tuple[object, object, object]:
    model, tok = load_twin(kind)
    path = graph.write(model.net, tmp_path / f"{kind}.onnx", kind)
    return model, tok, ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])


def _run(session: object, ids: np.ndarray, pos0: int, k: np.ndarray, v: np.ndarray) -> list[np.ndarray]:
    feed = {"ids": np.asarray(ids, dtype=np.int64), "pos0": np.array(pos0, dtype=np.int64), "past_k": k, "past_v": v}
    return session.run(None, feed)


def _close(got: np.ndarray, want: np.ndarray) -> None:
    assert got.shape == want.shape
    assert np.abs(got - want).max() < ATOL
    assert (got.argmax(-1) == want.argmax(-1)).all()


def test_the_ar_graph_equals_numpy_at_prefill_and_each_cached_decode(tmp_path: Path) -> None:
    model, tok, session = _session("ar", tmp_path)
    prompt = tok.encode("The little robot looked at the sea and")
    cache, want = model.prefill(prompt)
    empty = np.zeros((4, 4, 0, 64), np.float32)
    logits, k, v = _run(session, [model.eos_id, *prompt], 0, empty, empty)
    _close(logits[-1], want)
    for _ in range(5):
        token = int(want.argmax())
        want = model.decode(cache, token)
        logits, k, v = _run(session, [token], k.shape[2], k, v)
        _close(logits[-1], want)
    assert np.abs(k - cache.k[:, :, : cache.n]).max() < ATOL


def test_the_diffusion_graph_equals_numpy_at_a_refresh_and_a_dual_cache_step(tmp_path: Path) -> None:
    model, tok, session = _session("diffusion", tmp_path)
    prompt = tok.encode("A girl found a key under")
    ids = np.array(prompt + [model.mask_id] * 48)
    start, stop = len(prompt), len(prompt) + 16
    cache, want = model.refresh(ids, start)
    seq = np.array([model.eos_id, *ids])
    empty = np.zeros((4, 4, 0, 64), np.float32)
    logits, k, v = _run(session, seq, 0, empty, empty)
    _close(logits[start:len(ids)], want)
    ids[start:start + 5] = want[:5].argmax(-1)  # a few commits, then the block's next step through the cache
    seq = np.array([model.eos_id, *ids])
    want = model.logits(ids, cache, start, stop)
    logits, k, v = _run(session, seq[start:stop + 1], start, k, v)
    _close(logits[: stop - start], want)
    assert k.shape[2] == len(seq)
