"""How the bench and the sweep charts measure a setting: one sample at a time, timed, scored under the AR twin.

Quality is the perplexity of the generated answers under the AR twin, pooled over the prompts' tokens
(easy to game by repetition, so distinct-2 of words and the texts themselves sit beside it). Tokens are
counted up to end-of-text; seconds are wall time per sample on this machine.
"""

from __future__ import annotations

import math
import time
from typing import Any, Callable, Sequence

import numpy as np

from app.engine import autoregressive, diffusion
from app.engine.autoregressive import ARSettings
from app.engine.diffusion import DiffusionSettings

PROMPTS = (
    "Once upon a time, there was a little girl named Lily.",
    "Tom had a big red ball. One day,",
    "The cat and the dog were friends. They",
)


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    """fn's result and the wall seconds it took."""
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def run_diffusion(model: Any, prompt_ids: list[int], s: DiffusionSettings) -> tuple[list[int], int, float]:
    """(answer ids up to end-of-text, forward passes, wall seconds) for one sample."""
    last, seconds = timed(lambda: list(diffusion.generate(model, prompt_ids, s))[-1])
    n = diffusion.answer_length(last.ids, last.masked, model.eos_id)
    return [int(i) for i in last.ids[:n]], last.nfe, seconds


def run_ar(model: Any, prompt_ids: list[int], s: ARSettings) -> tuple[list[int], int, float]:
    """(answer ids, forward passes, wall seconds) for one sample of the AR sampler."""
    last, seconds = timed(lambda: list(autoregressive.generate(model, prompt_ids, s))[-1])
    return last.ids, last.nfe, seconds


def nll(ar: Any, prompt_ids: list[int], answer: list[int]) -> float:
    """Summed negative log-likelihood (nats) of the answer given the prompt, under the AR twin."""
    if not answer:
        return 0.0
    seq = np.array([ar.eos_id, *prompt_ids, *answer], dtype=np.int64)
    logits = ar.net.forward(seq, causal=True).astype(np.float64)
    rows = logits[len(prompt_ids): len(prompt_ids) + len(answer)]
    rows -= rows.max(axis=-1, keepdims=True)
    logp = rows[np.arange(len(answer)), answer] - np.log(np.exp(rows).sum(axis=-1))
    return float(-logp.sum())


def distinct2(text: str) -> float | None:
    """Unique word bigrams over all word bigrams (1.0: no repetition)."""
    words = text.split()
    pairs = list(zip(words, words[1:]))
    return len(set(pairs)) / len(pairs) if pairs else None


def mean(values: Sequence[float | None]) -> float | None:
    """The mean of the values that are there, to 3 decimals (None when none are)."""
    kept = [v for v in values if v is not None]
    return round(sum(kept) / len(kept), 3) if kept else None


def samples(kind: str, model: Any, am: Any, tok: Any, prompts: Sequence[list[int]], s: Any) -> dict[str, Any]:
    """Runs one setting on every prompt: tokens, passes, seconds, perplexity, distinct-2 and the texts."""
    runs = []
    for p in prompts:
        ids, nfe, sec = run_diffusion(model, p, s) if kind == "diffusion" else run_ar(model, p, s)
        text = tok.decode(ids)
        runs.append({"tokens": len(ids), "nfe": nfe, "seconds": sec, "nll": nll(am, p, ids),
                     "distinct2": distinct2(text), "text": text})
    tokens, nfe = sum(r["tokens"] for r in runs), sum(r["nfe"] for r in runs)
    return {"kind": kind, "settings": s.to_json(), "tokens": round(tokens / len(runs), 1),
            "nfe": round(nfe / len(runs), 1), "tokens_per_forward": round(tokens / nfe, 2) if nfe else None,
            "seconds": mean([r["seconds"] for r in runs]),
            "ppl": round(math.exp(sum(r["nll"] for r in runs) / tokens), 2) if tokens else None,
            "distinct2": mean([r["distinct2"] for r in runs]), "samples": [r["text"] for r in runs]}
