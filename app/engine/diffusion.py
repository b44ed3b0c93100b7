"""Masked-diffusion sampling over any MaskedLM: the answer starts fully masked and is unmasked step by step.

One loop covers LLaDA's sampler (linear schedule, semi-autoregressive blocks, float64 Gumbel noise),
Dream's position scores (margin, entropy), Fast-dLLM's confidence-threshold parallel decoding (and its
factor rule) with a prefix cache, and ReMDM-style remasking. Every step yields a `Step` so a player can
show the whole process.
"""

from __future__ import annotations

import math
import threading
from dataclasses import asdict, dataclass, field
from typing import Any, Iterator

import numpy as np

from app.engine.base import MaskedLM
from app.engine.commit_filter import features
from app.engine.options import check, option
from app.errors import SourceError

SCORINGS = ("confidence", "margin", "entropy", "random")
LENGTHS = (32, 64, 128, 256)  # the answer lengths the page offers (any is valid)
BLOCKS = (8, 16, 32, 64, 128, 256)
TOP_CANDIDATES = 3  # candidates kept per committed or remasked position, for the token inspector


@dataclass
class DiffusionSettings:
    """How to unmask. `steps` is the budget over the whole answer, spread evenly over the blocks. Each setting is
    declared once (app/engine/options.py): its range and help serve validation, the page and the CLI alike.

    threshold / factor judge the model's own confidence whichever `scoring` orders the scheduled commits; remask
    reopens a token committed earlier in the block with probability remask x (1 - its confidence then); dual_cache
    takes the suffix's keys/values from the block-start refresh (exact at a block's first step, approximate after).
    """

    gen_length: int = option(128, "Answer length (tokens)", min=1, presets=LENGTHS, cli="length")
    steps: int = option(128, "Steps (total over blocks)", min=1, max="gen_length", step=1,
                        help="At most the answer length; fewer steps commit more tokens per step.")
    block_length: int = option(32, "Block length", min=1, presets=BLOCKS,
                               help="Blocks are decoded left to right; one as long as the answer is pure diffusion.")
    scoring: str = option("confidence", "Scoring (which positions to commit first)", choices=SCORINGS,
                          help="With random, the confidence colours mean nothing about the order.")
    temperature: float = option(0.0, "Temperature", min=0.0, max=2.0, step=0.05)
    threshold: float | None = option(0.9, "Parallel threshold", min=0.0, max=1.0, step=0.05, off=True,
                                     help="Also commit every position at least this confident (Fast-dLLM).")
    factor: float | None = option(None, "Parallel factor", min=0.0, max=4.0, step=0.25, off=True,
                                  help="Commit the largest n whose n-th confidence is >= 1 - f/(n+1) (Fast-dLLM).")
    filter: float | None = option(None, "Learned commit filter", min=0.0, max=1.0, step=0.05, off=True,
                                  help="Also commit every position the model's learned filter (the built-in twin "
                                       "ships one) scores at least this sure (Learn2PD); lower is more parallel.")
    remask: float = option(0.0, "Remasking", min=0.0, max=1.0, step=0.05,
                           help="Chance to reopen an earlier token of the block, scaled by its doubt (ReMDM).")
    eos_discount: float = option(1.0, "End-of-text score factor", min=0.0, max=1.0, step=0.05,
                                 help="Below 1 delays committing end-of-text (shows less EOS flooding).")
    stop_at_eos: bool = option(True, "Stop early (once the answer is complete)",
                               help="End as soon as an end-of-text is committed with everything before it filled in.")
    prefix_cache: bool = option(True, "Prefix cache", help="Reuse the keys/values left of the block within a block.")
    dual_cache: bool = option(True, "Dual cache", help="With the prefix cache: also reuse the masked suffix, "
                                                       "so a step recomputes only its block.")
    lookahead: int = option(0, "Lookahead (0 = whole answer)", min=0, max=256, step=8,
                            help="How many masked tokens right of the block the model sees; fewer is faster on long "
                                 "answers.")
    seed: int = option(0, "Seed", min=0, max=9999, step=1)
    pins: tuple[str, ...] = option((), "Pinned text", cli="pin",
                                   help="POSITION:TEXT fixes TEXT at that answer position; the model writes around it.")

    def validate(self) -> "DiffusionSettings":
        """Checks each setting against its declaration, then the rules between settings; raises SourceError naming
        the fix. Returns self for chaining."""
        check(self)
        n = self.gen_length
        if n % self.block_length:
            near = min((d for d in range(1, n + 1) if n % d == 0), key=lambda d: abs(d - self.block_length))
            raise SourceError(f"Block length {self.block_length} does not divide the generation length {n}: "
                              f"use a block length such as {near}, or change the length.")
        blocks = n // self.block_length
        if self.steps < blocks:
            raise SourceError(f"{self.steps} steps cannot cover {blocks} blocks (at least one step each): "
                              f"raise steps to {blocks} or use longer blocks.")
        if self.threshold is not None and self.factor is not None:
            raise SourceError("Choose a confidence threshold or a factor for parallel decoding, not both.")
        return self

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Step:
    """The answer region after one step. Positions are answer-relative (0 = first generated token)."""

    step: int
    ids: np.ndarray
    masked: np.ndarray
    confidence: np.ndarray
    committed: list[int] = field(default_factory=list)
    remasked: list[int] = field(default_factory=list)
    nfe: int = 0
    done: bool = False
    candidates: dict[int, list[tuple[int, float]]] = field(default_factory=dict)
    refreshes: int = 0  # of nfe, the block-start passes over the whole sequence


def top_candidates(probs: np.ndarray, k: int = TOP_CANDIDATES) -> list[tuple[int, float]]:
    """The k most probable (token id, probability) pairs of one distribution, best first."""
    idx = np.argpartition(probs, -k)[-k:] if len(probs) > k else np.arange(len(probs))
    idx = idx[np.argsort(-probs[idx], kind="stable")]
    return [(int(i), float(probs[i])) for i in idx]


def answer_length(ids: np.ndarray, masked: np.ndarray, eos_id: int) -> int:
    """Tokens before the first committed end-of-text (the whole answer when there is none)."""
    hits = np.flatnonzero((ids == eos_id) & ~masked)
    return int(hits[0]) if len(hits) else len(ids)


def check_prompt(prompt_ids: list[int] | np.ndarray, gen_length: int, max_len: int) -> np.ndarray:
    """The prompt as int64, or a SourceError when it is empty or leaves no room for the answer."""
    ids = np.asarray(prompt_ids, dtype=np.int64).reshape(-1)
    if len(ids) == 0:
        raise SourceError("The prompt is empty: type a prompt.")
    if len(ids) + gen_length > max_len:
        room = max_len - len(ids)
        if room < 1:
            raise SourceError(f"The prompt is {len(ids)} tokens but the model's context is {max_len}: shorten the prompt.")
        raise SourceError(f"Prompt ({len(ids)} tokens) plus answer length ({gen_length}) exceeds the model's context "
                          f"of {max_len} tokens: shorten the prompt or set the length to at most {room}.")
    return ids


def _scores(probs: np.ndarray, chosen: np.ndarray, scoring: str, rng: np.random.Generator) -> np.ndarray:
    """A score in [0, 1] per candidate: higher is committed first."""
    if scoring == "confidence":
        return probs[np.arange(len(chosen)), chosen]
    if scoring == "margin":
        top2 = np.partition(probs, -2, axis=-1)[:, -2:]
        return top2[:, 1] - top2[:, 0]
    if scoring == "entropy":  # exp(-entropy): same order as Dream's negative entropy, but in [0, 1]
        return np.exp(np.sum(probs * np.log(np.clip(probs, 1e-300, None)), axis=-1))
    return rng.random(len(chosen))


def _parallel(confidence: np.ndarray, s: DiffusionSettings) -> int:
    """How many of the most confident positions threshold / factor call safe to commit together (0 with neither)."""
    k = 0
    ranked = np.sort(confidence)[::-1]
    if s.threshold is not None:
        k = max(k, int(np.sum(ranked >= s.threshold)))
    if s.factor is not None:
        n = np.arange(1, len(ranked) + 1)
        ok = np.flatnonzero(ranked >= 1.0 - s.factor / (n + 1))
        k = max(k, int(ok[-1]) + 1 if len(ok) else 0)
    return k


def block_cache(model: MaskedLM, x: np.ndarray, start: int) -> Any:
    """Keys/values of x[:start] for this block (Fast-dLLM PrefixCache). Where the model can, they are
    computed with the whole sequence in view, so the block's first step equals the uncached one."""
    if getattr(model, "exact_prefix", False):
        return model.prefix_cache(x, upto=start)
    return model.prefix_cache(x[:start])


def generate(model: MaskedLM, prompt_ids: list[int] | np.ndarray, settings: DiffusionSettings,
             cancel: threading.Event | None = None, pins: dict[int, int] | None = None,
             commit_filter: Any = None) -> Iterator[Step]:
    """Yields the all-masked start, then one Step per forward pass; the last has done=True.

    `pins` ({answer position: token id}, app/engine/pins.py) are given from the start: never masked,
    committed or remasked, so the model writes around them (infilling).

    With `settings.filter`, the model's own commit filter (or `commit_filter`: anything with the
    `observe(feature rows, positions, guesses) -> scores` of app/engine/commit_filter.py) adds the positions it
    scores at least that sure.

    nfe counts every call of the network. With the prefix cache and a model that offers `refresh`, each
    block starts with one pass over the whole sequence that both refreshes the cache and gives the block's
    first step its logits (as in Fast-dLLM), so every step is exactly one pass; `refreshes` counts those
    block-start passes. A model without `refresh` (Hugging Face) runs each step over the whole sequence."""
    s = settings.validate()
    prompt = check_prompt(prompt_ids, s.gen_length, model.max_len)
    judge = commit_filter or (getattr(model, "commit_filter", None) if s.filter is not None else None)
    if s.filter is not None and judge is None:
        raise SourceError("This model has no learned commit filter (only the built-in diffusion twin ships one): "
                          "turn the filter off, or use a threshold.")
    rng = np.random.default_rng(s.seed)
    P, L, B = len(prompt), s.gen_length, s.block_length
    x = np.concatenate([prompt, np.full(L, model.mask_id, dtype=np.int64)])
    masked = np.ones(L, dtype=bool)
    conf = np.zeros(L, dtype=np.float64)
    pinned = np.zeros(L, dtype=bool)
    for pos, token in (pins or {}).items():
        x[P + pos], masked[pos], conf[pos], pinned[pos] = token, False, 1.0, True
    last_pin = int(np.flatnonzero(pinned)[-1]) if pinned.any() else 0
    guess, held = np.full(L, -1, dtype=np.int64), np.zeros(L, dtype=np.int64)  # for the commit filter
    n_blocks = L // B
    nfe = step = refreshes = 0
    dual = s.prefix_cache and s.dual_cache and getattr(model, "dual_cache", False)
    refresh = getattr(model, "refresh", None) if s.prefix_cache else None
    yield Step(step, x[P:].copy(), masked.copy(), conf.copy())

    for b in range(n_blocks):
        lo, hi = b * B, (b + 1) * B  # answer-relative block bounds
        budget = s.steps // n_blocks + (1 if b < s.steps % n_blocks else 0)
        start = P + lo
        end = P + (min(L, hi + s.lookahead) if s.lookahead else L)  # what the model sees this block
        cache = None
        for j in range(budget):
            if cancel is not None and cancel.is_set():
                return
            if not masked[lo:hi].any():
                break
            view = x[:end]
            if j == 0 and refresh is not None:  # one pass: the cache for this block and its first step
                cache, logits = refresh(view, start)
                refreshes += 1
            elif not s.prefix_cache:
                logits = model.logits(view)[start:]
            else:
                if j == 0:
                    cache = block_cache(model, view, start)
                logits = model.logits(view, cache, start, stop=P + hi) if dual else model.logits(view, cache, start)
            nfe += 1
            step += 1
            logits = np.asarray(logits)[:, : model.vocab_size]
            z = logits[: hi - lo].astype(np.float64)  # the block's rows: the only ones that can commit
            z[:, model.mask_id] = -np.inf
            z[: max(0, min(hi, last_pin) - lo), model.eos_id] = -np.inf  # the answer cannot end before its pins
            probs = np.exp(z - z.max(axis=-1, keepdims=True))
            probs /= probs.sum(axis=-1, keepdims=True)
            if s.temperature > 0:  # Gumbel-max in float64 (LLaDA: low precision noise hurts quality)
                u = rng.random(z.shape)
                chosen = np.argmax(z / s.temperature - np.log(-np.log(np.clip(u, 1e-300, 1.0))), axis=-1)
            else:
                chosen = np.argmax(z, axis=-1)
            p_chosen = probs[np.arange(len(chosen)), chosen]
            conf[lo:hi][masked[lo:hi]] = p_chosen[masked[lo:hi]]  # masked cells show their top candidate
            right = np.flatnonzero(masked[hi:end - P]) if len(logits) > hi - lo else []
            if len(right):  # to the right of the block, for display only: the top candidate's probability
                r = logits[hi - lo + right]
                r = np.exp(r - r.max(axis=-1, keepdims=True))
                conf[hi + right] = 1.0 / r.sum(axis=-1)

            cand = np.flatnonzero(masked[lo:hi])  # block-relative rows
            scores = _scores(probs[cand], chosen[cand], s.scoring, rng)
            sure = p_chosen[cand]
            if s.eos_discount < 1.0:
                is_eos = chosen[cand] == model.eos_id
                scores = np.where(is_eos, scores * s.eos_discount, scores)
                sure = np.where(is_eos, sure * s.eos_discount, sure)
            minimum = math.ceil(len(cand) / (budget - j))
            # the scoring picks the scheduled commits; threshold / factor judge the model's own confidence
            # whatever the order (a random score or exp(-entropy) above 0.9 is not Fast-dLLM's rule) and add
            # every position sure enough
            confident = np.argsort(-sure, kind="stable")[:_parallel(sure, s)]
            pick = cand[np.union1d(np.argsort(-scores, kind="stable")[:minimum], confident)]
            if judge is not None:
                held[lo:hi] = np.where(chosen == guess[lo:hi], held[lo:hi] + 1, 0)
                guess[lo:hi] = chosen
                rows = features(probs, chosen, x[P + lo:P + hi], masked[lo:hi], model.eos_id, held[lo:hi])[cand]
                safe = np.asarray(judge.observe(rows, lo + cand, chosen[cand]))
                if s.filter is not None:
                    pick = np.union1d(pick, cand[safe >= s.filter])
            commit = lo + pick
            x[P + commit] = chosen[pick]
            masked[commit] = False
            conf[commit] = p_chosen[pick]

            reopened = np.array([], dtype=np.int64)
            if s.remask > 0 and budget - j > 1:
                earlier = np.setdiff1d(np.flatnonzero(~masked[lo:hi] & ~pinned[lo:hi]) + lo, commit)
                chance = s.remask * (1.0 - conf[earlier])
                reopened = earlier[rng.random(len(earlier)) < chance]
                x[P + reopened] = model.mask_id
                masked[reopened] = True
                conf[reopened] = p_chosen[reopened - lo]

            # what the model weighed at the moments that matter for the inspector: commits and reopenings
            candidates = {int(pos): top_candidates(probs[pos - lo]) for pos in (*commit, *reopened)}
            n_ans = answer_length(x[P:], masked, model.eos_id)
            done = s.stop_at_eos and n_ans < L and not masked[:n_ans].any()
            done = done or not masked.any()
            yield Step(step, x[P:].copy(), masked.copy(), conf.copy(), sorted(commit.tolist()),
                       sorted(reopened.tolist()), nfe, done, candidates, refreshes)
            if done:
                return
