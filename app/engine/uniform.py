"""Uniform-state diffusion sampling over any MaskedLM: the answer starts as random tokens, never masks.

The sampler DiffusionGemma shows, on the built-in uniform twin (`train.py --twin uniform`, UDLM/DUO's forward
process): the answer canvas starts as ordinary tokens drawn at random (seeded); each step one call of the network over
the prompt and the whole canvas predicts every position of the current block; the positions DiffusionGemma's entropy
bound rule picks (`accept_rows`) are accepted and stay, at least the least uncertain one; the block's other
positions are re-noised with fresh random tokens; until every position of the block is accepted or its share of the
steps is spent, when the last pass accepts its guess everywhere. Blocks go left to right; the blocks after the current
one hold the noise they started with. Four rules from issue 51, each a setting: the guard against repeated runs
both twins share (app/engine/repeats.py), the stutter guard (no position accepts an accepted neighbour's token),
DiffusionGemma's stability stop (a pass whose guesses at the open positions held still accepts the whole block) and
its falling temperature. Every step yields a `UniformStep` (canvas, which
positions are accepted and which are still noise), so a view can draw the noise as noise.
"""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import asdict, dataclass, field
from typing import Any, Iterator

import numpy as np

from app.engine import stutter
from app.engine.base import MaskedLM
from app.engine.draft import Plan
from app.engine.options import TWIN_NO_REPEAT_NGRAM, TWIN_STUTTER_GUARD, check, no_repeat_ngram, option, stutter_guard
from app.engine.repeats import NoRepeatNGram
from app.engine.sampling import BLOCKS, LENGTHS, check_blocks, check_prompt, top_candidates
from app.errors import UserError


@dataclass
class UniformSettings:
    """How to denoise a canvas of random tokens. `steps` is the budget over the whole answer, spread evenly over the
    blocks (the first blocks take the remainder). Each setting is declared once (app/engine/options.py)."""

    gen_length: int = option(128, "Answer length (tokens)", min=1, presets=LENGTHS, cli="length")
    steps: int = option(128, "Steps (total over blocks)", min=1, max="gen_length", step=1, follows="gen_length",
                        help="At most the answer length; when a block's share is spent, its last pass accepts the "
                             "model's guess at every position still noise.")
    block_length: int = option(32, "Block length", min=1, max="gen_length", presets=BLOCKS, clamp=True,
                               help="Blocks are denoised left to right; one as long as the answer is pure diffusion.")
    entropy_bound: float | None = option(0.5, "Entropy bound (nats)", min=0.0, max=50.0, step=0.1, off=True,
                                         help="Accept the least uncertain positions while their entropies, summed "
                                              "less the largest, stay within this (DiffusionGemma's rule; at least "
                                              "one); off: one position a pass, the most confident.")
    temperature: float = option(0.0, "Temperature", min=0.0, max=2.0, step=0.05,
                                help="0 accepts each position's likeliest token; above 0 samples it.")
    no_repeat_ngram: int = no_repeat_ngram(TWIN_NO_REPEAT_NGRAM)
    final_temperature: float | None = option(None, "Final temperature", min=0.0, max=2.0, step=0.05, off=True,
                                             help="The temperature falls linearly from Temperature to this over "
                                                  "each block's steps (DiffusionGemma's generate(): 0.8 to 0.4); "
                                                  "off: it stays.")
    no_repeat: bool = stutter_guard(TWIN_STUTTER_GUARD)
    stable_passes: int = option(1, "Stability stop (passes, 0 = off)", min=0, max=16, step=1,
                                help="Accept the whole block at once when the model's guesses at its open positions "
                                     "have not changed for this many passes (DiffusionGemma's stability_threshold).")
    stop_at_eos: bool = option(True, "Stop early (once the answer is complete)",
                               help="End after a block in which an end-of-text was accepted.")
    seed: int = option(0, "Seed", min=0, max=9999, step=1, help="Draws the starting canvas and every re-noising.")

    def validate(self) -> "UniformSettings":
        """Checks each setting against its declaration, then the rules between settings; raises UserError naming
        the fix. Returns self for chaining."""
        check(self)
        check_blocks(self.gen_length, self.block_length, self.steps)
        return self

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class UniformStep:
    """The answer canvas after one step. Positions are answer-relative (0 = first generated token). `accepted`
    marks the positions that stay; every other position holds a random token (noise), never a mask."""

    step: int
    ids: np.ndarray
    accepted: np.ndarray
    entropy: np.ndarray  # each position's predictive entropy (nats) at the step's pass; nan where not predicted
    block: tuple[int, int] = (0, 0)
    newly: list[int] = field(default_factory=list)  # the positions this step accepted
    nfe: int = 0
    done: bool = False
    candidates: dict[int, list[tuple[int, float]]] = field(default_factory=dict)  # the accepted positions' top few

    @property
    def noise(self) -> np.ndarray:
        """The positions still holding random tokens."""
        return ~self.accepted


def noise_ids(model: MaskedLM) -> np.ndarray:
    """The ordinary tokens the noise is drawn from: every id but mask, end-of-text and pad (where the model has one)."""
    special = {model.mask_id, model.eos_id, model.pad_id}
    return np.array([i for i in range(model.vocab_size) if i not in special], dtype=np.int64)


def _entropy(probs: np.ndarray) -> np.ndarray:
    return -np.sum(probs * np.log(np.clip(probs, 1e-300, None)), axis=-1)


def _softmax(logits: np.ndarray, temperature: float) -> np.ndarray:
    z = logits.astype(np.float64) / max(temperature, 1e-6) if temperature > 0 else logits.astype(np.float64)
    z -= z.max(axis=-1, keepdims=True)
    p = np.exp(z)
    return p / p.sum(axis=-1, keepdims=True)


def budgets(s: UniformSettings) -> list[int]:
    """Each block's share of the steps: spread evenly, the first blocks taking the remainder."""
    n = s.gen_length // s.block_length
    return [s.steps // n + (1 if b < s.steps % n else 0) for b in range(n)]


def accept_rows(entropy: np.ndarray, sure: np.ndarray, bound: float | None, last: bool) -> np.ndarray:
    """Which rows of the block's open positions a pass accepts: all on the block's last step; otherwise the entropy
    bound rule of DiffusionGemma's sampler (transformers' `EntropyBoundSampler.accept_canvas`, arXiv 2505.24857):
    the k lowest-entropy positions whose entropies, summed less the largest of them, are at most `bound`, so always
    at least one; without a bound, the single most confident (ties: the leftmost)."""
    if last:
        return np.arange(len(entropy))
    if bound is None:
        return np.array([int(np.argmax(sure))])
    order = np.argsort(entropy, kind="stable")
    ranked = entropy[order]
    return np.sort(order[np.cumsum(ranked) - ranked <= bound])


def temperature_at(s: UniformSettings, k: int, budget: int) -> float:
    """Pass k's temperature in a block of `budget` passes: Temperature, or with a final temperature a straight fall
    from Temperature at the first pass to it at the last (DiffusionGemma's linear schedule)."""
    if s.final_temperature is None or budget <= 1:
        return s.temperature
    return s.temperature + (s.final_temperature - s.temperature) * k / (budget - 1)


def _pass(model: MaskedLM, x: np.ndarray, P: int, lo: int, hi: int, open_: np.ndarray, accepted: np.ndarray,
          temperature: float, guard: bool, rng: np.random.Generator, runs: NoRepeatNGram | None = None
          ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """One call of the network over all of `x`; for the block's open positions: (entropy of the model's
    distribution, the token chosen, its probability under that distribution, the distribution, the raw likeliest
    token). With `guard`, no open position may take an accepted neighbour's token (app/engine/stutter.py); `runs`
    bans a token that would complete a run the prompt and accepted tokens already hold (noise is no text). Greedy at
    temperature 0, else sampled from the distribution at that temperature."""
    z = model.logits(x)[P + lo : P + hi].astype(np.float64)
    raw = z.argmax(axis=-1)[open_ - lo]
    if guard:
        stutter.no_repeat(z, x, ~accepted, P, lo, model.eos_id, model.repeatable)
    logits = z[open_ - lo]
    if runs is not None:
        runs.ban(logits, x.tolist(), [True] * P + accepted.tolist(), (P + open_).tolist())
    probs = _softmax(logits, 1.0)
    if temperature > 0:
        tempered = _softmax(logits, temperature)
        chosen = np.array([rng.choice(len(p), p=p) for p in tempered], dtype=np.int64)
    else:
        chosen = probs.argmax(axis=-1)
    return _entropy(probs), chosen, probs[np.arange(len(open_)), chosen], probs, raw


def unrepeated(picked: np.ndarray, chosen: np.ndarray, probs: np.ndarray, model: MaskedLM) -> np.ndarray:
    """The guard on a block's last pass, which must accept every open position: left to right, a position whose
    guess repeats the guess just accepted at its left takes its next likeliest token instead (they could not see
    each other). `picked` are the positions, `chosen` and `probs` their guesses and distributions; returns the
    guesses."""
    out = chosen.copy()
    for r in range(1, len(picked)):
        if picked[r] == picked[r - 1] + 1 and out[r] == out[r - 1] and stutter._guarded(
                int(out[r]), model.eos_id, model.repeatable):
            p = probs[r].copy()
            p[out[r]] = -1.0
            out[r] = int(p.argmax())
    return out


def unrun(runs: NoRepeatNGram, open_: np.ndarray, chosen: np.ndarray, probs: np.ndarray, x: np.ndarray, P: int,
          accepted: np.ndarray) -> np.ndarray:
    """The guard against repeated runs on a pass that accepts every open position (the block's last, or a stable
    one): left to right, a guess that would complete a run the text already holds, the guesses accepted with it to
    its left included, takes its likeliest allowed token instead. Returns the guesses."""
    out = chosen.copy()
    if not runs.on:
        return out
    tokens, written = x.tolist(), [True] * P + accepted.tolist()
    for r, pos in enumerate(open_.tolist()):
        row = probs[r : r + 1].copy()
        runs.ban(row, tokens, written, [P + pos])
        if row[0, out[r]] == -np.inf:
            out[r] = int(row[0].argmax())
        tokens[P + pos], written[P + pos] = int(out[r]), True
    return out


def stable(history: deque, guess: np.ndarray, open_: np.ndarray, passes: int) -> bool:
    """The stability stop: whether the model's likeliest tokens at the open positions are the same as at each of
    the last `passes` passes (DiffusionGemma's StableAndConfidentStoppingCriteria, without its confidence half,
    which a model this small never meets). `history` holds earlier passes' guesses by answer position."""
    if not passes or len(history) < passes:
        return False
    return all(np.array_equal(h[open_], guess) for h in list(history)[-passes:])


def canvas(model: MaskedLM, prompt: np.ndarray, L: int, rng: np.random.Generator, pool: np.ndarray,
           draft: Plan | None) -> tuple[np.ndarray, np.ndarray, int]:
    """The start: the prompt then L random tokens, none accepted, no pass taken; or, from a revision's `draft`, its
    tokens laid on the noise (`start_from`) and the passes that chose its re-noised positions."""
    x = np.concatenate([prompt, rng.choice(pool, size=L)])
    if draft is None:
        return x, np.zeros(L, dtype=bool), 0
    return x, start_from(model, x, len(prompt), L, draft), draft.nfe


def start_from(model: MaskedLM, x: np.ndarray, P: int, L: int, draft: Plan) -> np.ndarray:
    """Lays a revision's draft on the noise canvas `x` (in place): its tokens accepted, its re-noised positions and
    those past its end left as the noise drawn; returns which positions are accepted."""
    n = len(draft.tokens)
    if n > L:
        raise UserError(f"The draft is {n} tokens but the answer is {L}: "
                        f"raise the answer length to {n} or more, or shorten the draft.")
    accepted = np.zeros(L, dtype=bool)
    accepted[:n] = draft.kept
    x[P : P + n] = np.where(draft.kept, np.asarray(draft.tokens, dtype=np.int64), x[P : P + n])
    return accepted


def generate(model: MaskedLM, prompt_ids: list[int] | np.ndarray, settings: UniformSettings,
             cancel: threading.Event | None = None, draft: Plan | None = None) -> Iterator[UniformStep]:
    """Yields the all-noise start (or a `draft`'s, `canvas`), then one UniformStep per call of the network, the last
    done; nfe counts every call, each over the prompt and the whole canvas (no cache: every position may change)."""
    s = settings.validate()
    prompt = check_prompt(prompt_ids, s.gen_length, model.max_len)
    P, L = len(prompt), s.gen_length
    rng, pool = np.random.default_rng(s.seed), noise_ids(model)
    x, accepted, nfe = canvas(model, prompt, L, rng, pool, draft)
    runs = NoRepeatNGram(s.no_repeat_ngram, model.eos_id)
    yield UniformStep(0, x[P:].copy(), accepted.copy(), np.full(L, np.nan), nfe=nfe)
    shares = budgets(s)
    for b, budget in enumerate(shares):
        lo, hi = b * s.block_length, (b + 1) * s.block_length
        if accepted[lo:hi].all():  # a block the draft filled takes no pass; the answer may end in it
            if b == len(shares) - 1 or (s.stop_at_eos and bool(np.any(x[P : P + hi] == model.eos_id))):
                yield UniformStep(nfe, x[P:].copy(), accepted.copy(), np.full(L, np.nan), (lo, hi), [], nfe, True)
                return
            continue
        history: deque = deque(maxlen=max(1, s.stable_passes))
        for k in range(budget):
            if cancel is not None and cancel.is_set():
                return
            open_ = lo + np.flatnonzero(~accepted[lo:hi])
            temperature = temperature_at(s, k, budget)
            ent, chosen, sure, probs, raw = _pass(model, x, P, lo, hi, open_, accepted, temperature, s.no_repeat, rng,
                                                  runs)
            nfe += 1
            entropy = np.full(L, np.nan)
            entropy[open_] = ent
            settled = stable(history, raw, open_, s.stable_passes)
            last = k == budget - 1 or settled
            if settled:
                chosen = probs.argmax(axis=-1)  # the guesses that held still
            rows = accept_rows(ent, sure, s.entropy_bound, last)
            if not last:  # rows accepted together could not see each other (the last pass accepts all)
                rows = runs.fresh(rows, chosen, x.tolist(), [True] * P + accepted.tolist(), (P + open_).tolist())
            if s.no_repeat and last:
                chosen = unrepeated(open_, chosen, probs, model)
            if last:  # every open position at once: each guess checked against the text written to its left
                chosen = unrun(runs, open_, chosen, probs, x, P, accepted)
            elif s.no_repeat:
                rows = np.searchsorted(open_, stutter.apart(open_[rows], _by_position(open_, chosen, L),
                                                            model.eos_id, model.repeatable))
            x[P + open_[rows]] = chosen[rows]
            accepted[open_[rows]] = True
            still = lo + np.flatnonzero(~accepted[lo:hi])
            x[P + still] = rng.choice(pool, size=len(still))  # re-noised: fresh random tokens
            guess = np.full(L, -1)
            guess[open_] = raw
            history.append(guess)
            ended = not len(still) and (b == len(shares) - 1 or (
                s.stop_at_eos and bool(np.any(x[P : P + hi] == model.eos_id))))
            considered = {int(open_[r]): top_candidates(probs[r]) for r in rows}  # what the model weighed there
            yield UniformStep(nfe, x[P:].copy(), accepted.copy(), entropy, (lo, hi), sorted(open_[rows].tolist()),
                              nfe, ended, considered)
            if ended:
                return
            if not len(still):
                break


def _by_position(open_: np.ndarray, chosen: np.ndarray, L: int) -> np.ndarray:
    """The open positions' guesses laid out by answer position (-1 elsewhere), as stutter.apart reads them."""
    out = np.full(L, -1)
    out[open_] = chosen
    return out


def decode(model: MaskedLM, prompt_ids: list[int] | np.ndarray, settings: UniformSettings) -> UniformStep:
    """The last step of `generate`: the finished canvas and the number of passes it took."""
    return deque(generate(model, prompt_ids, settings), maxlen=1)[0]


def answer(step: UniformStep, eos_id: int) -> np.ndarray:
    """The answer's tokens: the canvas before the first end-of-text."""
    hits = np.flatnonzero(step.ids == eos_id)
    return step.ids[: hits[0]] if len(hits) else step.ids
