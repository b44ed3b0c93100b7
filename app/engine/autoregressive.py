"""Left-to-right sampling over any CausalLM with a KV cache: one forward pass and one Step per token."""

from __future__ import annotations

import threading
from dataclasses import asdict, dataclass
from typing import Any, Iterator

import numpy as np

from app.engine.base import CausalLM
from app.engine.diffusion import check_prompt, top_candidates
from app.errors import SourceError


@dataclass
class ARSettings:
    """Greedy when temperature is 0; otherwise temperature sampling, optionally cut to the top_k tokens
    and then to the smallest set whose probability reaches top_p."""

    gen_length: int = 128
    temperature: float = 0.0
    top_k: int = 0
    top_p: float = 1.0
    stop_at_eos: bool = True
    seed: int = 0

    def validate(self) -> "ARSettings":
        """Checks the ranges; raises SourceError naming the fix."""
        if not isinstance(self.gen_length, int) or self.gen_length < 1:
            raise SourceError(f"Generation length must be a positive whole number of tokens, not {self.gen_length!r}.")
        if not 0.0 <= self.temperature <= 10.0:
            raise SourceError(f"Temperature must be between 0 and 10, not {self.temperature!r}.")
        if not isinstance(self.top_k, int) or self.top_k < 0:
            raise SourceError(f"Top-k must be 0 (off) or a positive whole number, not {self.top_k!r}.")
        if not 0.0 < self.top_p <= 1.0:
            raise SourceError(f"Top-p must be above 0 and at most 1, not {self.top_p!r}.")
        return self

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class ARStep:
    """The answer so far: token ids, the probability each had when it was picked, and forward passes."""

    step: int
    ids: list[int]
    confidence: list[float]
    nfe: int
    done: bool = False
    candidates: list[tuple[int, float]] | None = None  # the top next tokens the model weighed at this step


def pick(logits: np.ndarray, s: ARSettings, rng: np.random.Generator) -> tuple[int, float, np.ndarray]:
    """One token from next-token logits; returns (id, its probability under the model's softmax, that softmax)."""
    z = np.asarray(logits, dtype=np.float64)
    probs = np.exp(z - z.max())
    probs /= probs.sum()
    if s.temperature == 0:
        token = int(np.argmax(z))
        return token, float(probs[token]), probs
    q = np.exp((z - z.max()) / s.temperature)
    q /= q.sum()
    order = np.argsort(-q, kind="stable")
    keep = len(order) if s.top_k == 0 else min(s.top_k, len(order))
    if s.top_p < 1.0:
        keep = min(keep, int(np.searchsorted(np.cumsum(q[order]), s.top_p)) + 1)
    kept = order[:keep]
    token = int(rng.choice(kept, p=q[kept] / q[kept].sum()))
    return token, float(probs[token]), probs


def generate(model: CausalLM, prompt_ids: list[int] | np.ndarray, settings: ARSettings,
             cancel: threading.Event | None = None) -> Iterator[ARStep]:
    """Prefill once, then one cached decode per further token; stops at end-of-text (not shown) or the length."""
    s = settings.validate()
    prompt = check_prompt(prompt_ids, s.gen_length, model.max_len)
    rng = np.random.default_rng(s.seed)
    ids: list[int] = []
    confidence: list[float] = []
    cache = None
    for i in range(s.gen_length):
        if cancel is not None and cancel.is_set():
            return
        if cache is None:
            cache, logits = model.prefill(prompt)
        else:
            logits = model.decode(cache, ids[-1])
        token, p, probs = pick(np.asarray(logits)[: model.vocab_size], s, rng)
        if s.stop_at_eos and token == model.eos_id:
            yield ARStep(i + 1, list(ids), list(confidence), i + 1, done=True)
            return
        ids.append(token)
        confidence.append(p)
        yield ARStep(i + 1, list(ids), list(confidence), i + 1, done=i + 1 == s.gen_length,
                     candidates=top_candidates(probs))
