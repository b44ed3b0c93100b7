"""Left-to-right sampling over any CausalLM with a KV cache: one forward pass and one Step per token."""

from __future__ import annotations

import threading
from dataclasses import asdict, dataclass
from typing import Any, Iterator

import numpy as np

from app.engine import stutter
from app.engine.base import CausalLM
from app.engine.options import TWIN_NO_REPEAT_NGRAM, TWIN_STUTTER_GUARD, check, no_repeat_ngram, option, stutter_guard
from app.engine.repeats import NoRepeatNGram
from app.engine.sampling import LENGTHS, check_prompt, top_candidates


@dataclass
class ARSettings:
    """Greedy when temperature is 0; otherwise temperature sampling, optionally cut to the top_k tokens
    and then to the smallest set whose probability reaches top_p (each setting declared in app/engine/options.py)."""

    gen_length: int = option(128, "Max answer length (tokens)", min=1, presets=LENGTHS, cli="length")
    temperature: float = option(0.0, "Temperature (0 = greedy)", min=0.0, max=2.0, step=0.05)
    top_k: int = option(0, "Top-k (0 = off)", min=0, max=200, step=1, help="Sample among the k most likely tokens.")
    top_p: float = option(1.0, "Top-p", min=0.05, max=1.0, step=0.05,
                          help="Then among the fewest tokens whose probability reaches p (nucleus sampling).")
    no_repeat: bool = stutter_guard(False)
    no_repeat_ngram: int = no_repeat_ngram(0)
    min_length: int = option(0, "Shortest answer (tokens)", min=0, max="gen_length", step=1,
                             help="End-of-text cannot be written before this many answer tokens (1: never an empty "
                                  "answer).")
    stop_at_eos: bool = option(True, "Stop at end-of-text")
    seed: int = option(0, "Seed", min=0, max=9999, step=1)

    def validate(self) -> "ARSettings":
        """Checks each setting against its declaration (app/engine/options.py); raises UserError naming the fix."""
        check(self)
        return self

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


# The built-in AR twin's defaults: greedy, with the guards against repetition every twin runs alike (no repeated run,
# app/engine/repeats.py; the stutter guard, app/engine/stutter.py) and never an empty answer, as the masked twin (the
# class defaults, off, are Hugging Face's, kept for hf-ar models).
TWIN_AR = ARSettings(no_repeat=TWIN_STUTTER_GUARD, no_repeat_ngram=TWIN_NO_REPEAT_NGRAM, min_length=1)


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
    guard = NoRepeatNGram(s.no_repeat_ngram, model.eos_id)
    for i in range(s.gen_length):
        if cancel is not None and cancel.is_set():
            return
        if cache is None:
            cache, logits = model.prefill(prompt)
        else:
            logits = model.decode(cache, ids[-1])
        z = np.array(logits, dtype=np.float64)[: model.vocab_size]
        if i < s.min_length:
            z[model.eos_id] = -np.inf
        if s.no_repeat:  # the stutter guard left to right: never the token just written
            written = ids[-1] if ids else (int(prompt[-1]) if len(prompt) else None)
            stutter.no_repeat_left(z, written, model.eos_id, model.repeatable)
        if guard.on:  # the next position is the only one unwritten: transformers' rule exactly
            seq = [*prompt.tolist(), *ids, -1]
            guard.ban(z[None], seq, [True] * (len(seq) - 1) + [False], [len(seq) - 1])
        token, p, probs = pick(z, s, rng)
        if s.stop_at_eos and token == model.eos_id:
            yield ARStep(i + 1, list(ids), list(confidence), i + 1, done=True)
            return
        ids.append(token)
        confidence.append(p)
        yield ARStep(i + 1, list(ids), list(confidence), i + 1, done=i + 1 == s.gen_length,
                     candidates=top_candidates(probs))
