"""Masked-diffusion sampling over any MaskedLM: the answer starts fully masked and is unmasked step by step.

One loop covers LLaDA's sampler (linear schedule, semi-autoregressive blocks, float64 Gumbel noise), Dream's position
scores (margin, entropy), Fast-dLLM's confidence-threshold parallel decoding (and its factor rule) with a prefix cache
where the model keeps one, and ReMDM-style remasking. Every step yields a `Step` so a player can show the whole process.
`generate` is a loop over `begin`, `next_block`, `forward` (one pass and what the rule would commit) and `commit`, which
app/engine/stepper.py also drives, one commit at a time, for a learner choosing the commits.
"""

# long: one masked sampler: its settings, its Run, how a run starts (all masked, pins, a draft), each pass and each
# commit; its parts read and write the one Run, and app/engine/stepper.py drives them one by one.

from __future__ import annotations

import math
import threading
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Iterator

import numpy as np

from app.engine import stutter
from app.engine.base import Judge, MaskedLM
from app.engine.commit_filter import features
from app.engine.draft import Plan
from app.engine.options import TWIN_NO_REPEAT_NGRAM, TWIN_STUTTER_GUARD, check, no_repeat_ngram, option, stutter_guard
from app.engine.repeats import NoRepeatNGram
from app.engine.sampling import BLOCKS, LENGTHS, check_blocks, check_prompt, top_candidates
from app.errors import UserError

SCORINGS = ("confidence", "margin", "entropy", "random")
SCHEDULES = ("even", "dream", "dllm")  # how many positions a step commits: spread evenly (LLaDA), Dream's 1 - s/t, or
# dllm's linear schedule (1/k of those left, rounded, steps that round to none skipped)
DREAM_EPS = 1e-3  # Dream's generation_config eps: its time runs from 1 down to this


@dataclass
class DiffusionSettings:
    """How to unmask. `steps` is the budget over the whole answer, spread evenly over the blocks. Each setting is
    declared once (app/engine/options.py): its range and help serve validation, the page and the CLI alike.

    threshold / factor judge the model's own confidence whichever `scoring` orders the scheduled commits; remask
    reopens a token committed earlier in the block with probability remask x (1 - its confidence then); dual_cache
    takes the suffix's keys/values from the block-start refresh (exact at a block's first step, approximate after).
    """

    gen_length: int = option(128, "Answer length (tokens)", min=1, presets=LENGTHS, cli="length")
    steps: int = option(128, "Steps (total over blocks)", min=1, max="gen_length", step=1, follows="gen_length",
                        help="At most the answer length; fewer steps commit more tokens per step.")
    block_length: int = option(32, "Block length", min=1, max="gen_length", presets=BLOCKS, clamp=True,
                               help="Blocks are decoded left to right; one as long as the answer is pure diffusion.")
    scoring: str = option("confidence", "Scoring (which positions to commit first)", choices=SCORINGS,
                          help="With random, the confidence colours mean nothing about the order.")
    schedule: str = option("even", "Schedule (how many to commit each step)", choices=SCHEDULES,
                           help="even: the block's masked positions spread evenly over its steps (LLaDA); dream: "
                                "a share 1 - s/t of those still masked, time t falling linearly from 1 (Dream); dllm: "
                                "a share 1/k of those still masked with k steps left, rounded, a step that rounds to "
                                "none skipped, each block given steps / blocks rounded up (dllm's MDLM and BD3LM "
                                "samplers).")
    temperature: float = option(0.0, "Temperature", min=0.0, max=2.0, step=0.05)
    top_k: int = option(0, "Top-k (0 = off)", min=0, max=1000, step=1,
                        help="Choose and score among each position's k likeliest tokens only; Dream's "
                             "diffusion_generate does so with transformers' default of 50, even at temperature 0.")
    threshold: float | None = option(0.9, "Parallel threshold", min=0.0, max=1.0, step=0.05, off=True,
                                     help="Also commit every position at least this confident (Fast-dLLM).")
    factor: float | None = option(None, "Parallel factor", min=0.0, max=4.0, step=0.25, off=True, replaces="threshold",
                                  help="Commit the largest n whose n-th confidence is >= 1 - f/(n+1) (Fast-dLLM).")
    filter: float | None = option(None, "Learned commit filter", min=0.0, max=1.0, step=0.05, off=True,
                                  help="Also commit every position the model's learned filter (the built-in twin "
                                       "ships one) scores at least this sure (Learn2PD); lower is more parallel.")
    remask: float = option(0.0, "Remasking", min=0.0, max=1.0, step=0.05,
                           help="Chance to reopen an earlier token of the block, scaled by its doubt (ReMDM).")
    eos_discount: float = option(1.0, "End-of-text score factor", min=0.0, max=1.0, step=0.05,
                                 help="Below 1 delays committing end-of-text (shows less EOS flooding).")
    no_repeat: bool = stutter_guard(False)
    no_repeat_ngram: int = no_repeat_ngram(0)
    min_gap: int = option(1, "Commit spacing (1 = off)", min=1, max=16, step=1,
                          help="The least distance between two positions one pass commits: the extra commits "
                               "(threshold, factor, filter), surest first, wait for a later pass when one already "
                               "taken is nearer. Positions committed together cannot see each other, and neighbours "
                               "depend on each other most (DUS's dilated spacing). It costs tokens per pass; the "
                               "built-in twin, which learned to commit neighbours together, gets no likelier text "
                               "for it.")
    min_length: int = option(0, "Shortest answer (tokens)", min=0, max="gen_length", step=1,
                             help="End-of-text cannot be written before this many answer tokens (1: never an empty "
                                  "answer).")
    stop_at_eos: bool = option(True, "Stop early (once the answer is complete)",
                               help="End as soon as an end-of-text is committed with everything before it filled in.")
    prefix_cache: bool = option(True, "Prefix cache", help="Reuse the keys/values left of the block within a block, "
                                "where the model keeps them (the built-in twin; BD3LM's block attention).")
    dual_cache: bool = option(True, "Dual cache", help="With the prefix cache: also reuse the masked suffix, "
                                                       "so a step recomputes only its block (the built-in twin).")
    lookahead: int = option(0, "Lookahead (0 = whole answer)", min=0, max=256, step=8,
                            help="How many masked tokens right of the block the model sees; fewer is faster on long "
                                 "answers.")
    seed: int = option(0, "Seed", min=0, max=9999, step=1)
    pins: tuple[str, ...] = option((), "Pinned text", cli="pin",
                                   help="POSITION:TEXT fixes TEXT at that answer position; the model writes around it.")

    def validate(self) -> "DiffusionSettings":
        """Checks each setting against its declaration, then the rules between settings; raises UserError naming
        the fix. Returns self for chaining."""
        check(self)
        check_blocks(self.gen_length, self.block_length, self.steps)
        if self.threshold is not None and self.factor is not None:
            raise UserError("Choose a confidence threshold or a factor for parallel decoding, not both.")
        return self

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


# The built-in diffusion twin's defaults: LLaDA's (the class defaults, kept for Hugging Face models: greedy, threshold
# 0.9) in entropy order and blocks of 16, the learned commit filter at 0.65 and never an empty answer. The level was
# chosen by `python -m scripts.choose_twin_defaults --trajectory` for the twin of round 5 (the most tokens per pass
# within the fresh-stories issue's quality bounds on prompts the bench does not use; assets/models/MODEL_CARD.md,
# "Sampler defaults"; docs/twins.md). Its guards against repetition are the ones every twin runs alike: no repeated
# run of TWIN_NO_REPEAT_NGRAM tokens (app/engine/repeats.py) and the stutter guard at TWIN_STUTTER_GUARD
# (app/engine/stutter.py), which the AR twin runs left to right (`python -m scripts.twin_guard --compare`).
TWIN_DIFFUSION = DiffusionSettings(block_length=16, scoring="entropy", temperature=0.0, filter=0.65,
                                   no_repeat=TWIN_STUTTER_GUARD, no_repeat_ngram=TWIN_NO_REPEAT_NGRAM, min_length=1)


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
    refreshes: int = 0  # of nfe, the block-start passes that fill the cache


def answer_length(ids: np.ndarray, masked: np.ndarray, eos_id: int) -> int:
    """Tokens before the first committed end-of-text (the whole answer when there is none)."""
    hits = np.flatnonzero((ids == eos_id) & ~masked)
    return int(hits[0]) if len(hits) else len(ids)


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


def spaced(scheduled: np.ndarray, extra: np.ndarray, sure: np.ndarray, min_gap: int) -> np.ndarray:
    """The rows one pass commits: the schedule's rows, then the extra rows surest first, each only if no row already
    taken is nearer than `min_gap` (1: all of them). Why: rows committed together cannot see each other and a row
    depends on its neighbours most, so neighbours committed together are where joint errors ("book book") come from.
    As DUS's spacing post-filter for adaptive samplers (Luxembourg et al. 2025, `apply_spacing_filter` in
    github.com/omerlux/DUS), but with a fixed gap and the schedule's own rows always kept."""
    if min_gap <= 1:
        return np.union1d(scheduled, extra).astype(np.int64)
    taken = [int(r) for r in scheduled]
    for r in extra[np.argsort(-sure[extra], kind="stable")]:
        if all(abs(int(r) - t) >= min_gap for t in taken):
            taken.append(int(r))
    return np.unique(np.asarray(taken, dtype=np.int64))


def dream_count(masked: int, i: int, steps: int, eps: float = DREAM_EPS) -> int:
    """How many of `masked` positions step `i` of `steps` commits under Dream's schedule: int(masked x (1 - s/t)) with
    t, s consecutive points of linspace(1, eps, steps + 1), in float32 as Dream's torch code computes it; the last
    step (or any later one a learner takes) commits all. Why: Dream's diffusion_generate counts so."""
    if i >= steps - 1:
        return masked
    f32 = np.float32
    step = (f32(eps) - f32(1.0)) / f32(steps)  # torch.linspace: from the start in the first half, from the end after

    def point(k: int) -> np.float32:
        return f32(1.0) + step * f32(k) if k < (steps + 1) // 2 else f32(eps) - step * f32(steps - k)

    return int(f32(masked) * (f32(1.0) - point(i + 1) / point(i)))


def dllm_counts(masked: int, steps: int) -> list[int]:
    """How many of a block's `masked` positions each of its passes commits under dllm's linear schedule: step j of
    `steps` commits round(left x (1 - s/t)), s/t computed in float32 as dllm's LinearAlphaScheduler does, rounded half
    to even as torch.round; steps that commit none are dropped. Why: dllm's get_num_transfer_tokens counts so."""
    f32 = np.float32
    left, counts = masked, []
    for j in range(steps):
        t, s = (steps - j) / steps, (steps - 1 - j) / steps
        ratio = (f32(1) - (f32(1) - f32(s))) / (f32(1) - (f32(1) - f32(t)))
        n = min(int(np.round(np.float64(left) * (1.0 - float(ratio)))), left)
        left -= n
        if n:
            counts.append(n)
        if not left:
            break
    return counts


def honoured(model: MaskedLM, settings: DiffusionSettings) -> DiffusionSettings:
    """The settings as `model` runs them: the prefix cache only where it keeps one (`caches`), the dual cache only with
    it and where offered. Why: a cache the model cannot keep (Hugging Face masked LMs) is not run, counted or shown."""
    prefix = settings.prefix_cache and model.caches
    dual = prefix and settings.dual_cache and model.dual_cache
    return replace(settings, prefix_cache=prefix, dual_cache=dual)


def block_cache(model: MaskedLM, x: np.ndarray, start: int) -> Any:
    """Keys/values of x[:start] for this block (Fast-dLLM PrefixCache), in one pass. Where the model can, they are
    computed with the whole sequence in view, so the block's first step equals the uncached one."""
    if model.exact_prefix:
        return model.prefix_cache(x, upto=start)
    return model.prefix_cache(x[:start])


@dataclass
class Run:
    """The sampler between two forward passes: everything the next pass and commit need from those before.

    Positions are answer-relative; `x` is the prompt then the answer (mask ids where masked). `passes` counts
    the passes taken in the current `block`; a block's `cache` goes with it. app/engine/stepper.py copies a Run
    to let a learner choose the commits, so nothing here may be shared with another Run but the model and judge."""

    s: DiffusionSettings
    x: np.ndarray
    prompt_len: int
    masked: np.ndarray
    conf: np.ndarray
    pinned: np.ndarray
    guess: np.ndarray  # the commit filter's view: each position's top token at the last pass
    held: np.ndarray  # ... and for how many passes in a row it has not changed
    judge: Judge | None
    rng: np.random.Generator
    block: int = 0
    passes: int = 0
    cache: Any = None
    nfe: int = 0
    step: int = 0
    refreshes: int = 0
    done: bool = False
    drafted: np.ndarray | None = None  # a revision's draft tokens still standing as the draft wrote them

    @property
    def bounds(self) -> tuple[int, int]:
        """The current block's answer-relative [lo, hi)."""
        B = self.s.block_length
        return self.block * B, (self.block + 1) * B

    @property
    def budget(self) -> int:
        """The current block's share of the steps."""
        n_blocks = self.s.gen_length // self.s.block_length
        return self.s.steps // n_blocks + (1 if self.block < self.s.steps % n_blocks else 0)

    def snapshot(self) -> Step:
        """The answer as it stands, with nothing committed yet (the all-masked start)."""
        P = self.prompt_len
        return Step(self.step, self.x[P:].copy(), self.masked.copy(), self.conf.copy())


@dataclass
class Pass:
    """One forward pass over the current block: the model's distribution and guess at each of its positions
    (block-relative rows), and the rows the configured rule commits from them."""

    probs: np.ndarray
    chosen: np.ndarray
    rule: np.ndarray

    @property
    def sure(self) -> np.ndarray:
        """The probability of each row's guess: its confidence."""
        return self.probs[np.arange(len(self.chosen)), self.chosen]


def begin(model: MaskedLM, prompt_ids: list[int] | np.ndarray, settings: DiffusionSettings,
          pins: dict[int, int] | None = None, commit_filter: Judge | None = None, draft: Plan | None = None) -> Run:
    """A run before its first pass: the answer all masked but for the pins, or a revision's `draft` (app/engine/
    draft.py) committed but for its re-noised positions; settings (`honoured`) and prompt checked."""
    s = honoured(model, settings.validate())
    prompt = check_prompt(prompt_ids, s.gen_length, model.max_len)
    judge = commit_filter or (model.commit_filter if s.filter is not None else None)
    if s.filter is not None and judge is None:
        raise UserError("This model has no learned commit filter (only the built-in diffusion twin ships one): "
                        "turn the filter off, or use a threshold.")
    P, L = len(prompt), s.gen_length
    run = Run(s, np.concatenate([prompt, np.full(L, model.mask_id, dtype=np.int64)]), P, np.ones(L, dtype=bool),
              np.zeros(L, dtype=np.float64), np.zeros(L, dtype=bool), np.full(L, -1, dtype=np.int64),
              np.zeros(L, dtype=np.int64), judge, np.random.default_rng(s.seed))
    for pos, token in (pins or {}).items():
        run.x[P + pos], run.masked[pos], run.conf[pos], run.pinned[pos] = token, False, 1.0, True
    if draft is not None:
        start_from(model, run, draft)
    return run


def start_from(model: MaskedLM, run: Run, draft: Plan) -> None:
    """Lays a revision's draft on the answer: its tokens committed (not pinned: the sampler may remask them as its
    settings say), its re-noised positions masked, past its end masked; the passes that chose them counted."""
    n, P = len(draft.tokens), run.prompt_len
    if n > run.s.gen_length:
        raise UserError(f"The draft is {n} tokens but the answer is {run.s.gen_length}: "
                        f"raise the answer length to {n} or more, or shorten the draft.")
    if run.pinned.any():
        raise UserError("Pins and a draft both fix text before the run: start from the draft or pin text, not both.")
    kept = draft.kept
    run.x[P : P + n] = np.where(kept, np.asarray(draft.tokens, dtype=np.int64), model.mask_id)
    run.masked[:n] = ~kept
    run.conf[:n] = np.where(kept, 1.0, 0.0)
    run.drafted = np.zeros(run.s.gen_length, dtype=bool)
    run.drafted[:n] = kept
    run.nfe = draft.nfe


def next_block(run: Run) -> bool:
    """Moves on to the first block from the current one that still has a masked position (a new block starts
    without a cache); False when every block is settled."""
    n_blocks = run.s.gen_length // run.s.block_length
    while run.block < n_blocks:
        lo, hi = run.bounds
        if run.masked[lo:hi].any():
            return True
        run.block, run.passes, run.cache = run.block + 1, 0, None
    return False


def forward(model: MaskedLM, run: Run) -> Pass:
    """One call of the network for the current block (counted in nfe): the block's distributions and guesses,
    the confidence shown for every masked position, and the rows the configured rule would commit."""
    s, P, L = run.s, run.prompt_len, run.s.gen_length
    lo, hi = run.bounds
    start = P + lo
    end = P + (min(L, hi + s.lookahead) if s.lookahead else L)  # what the model sees this block
    logits = np.asarray(_network(model, run, start, end))[:, : model.vocab_size]
    probs, chosen, p_chosen = _guesses(model, run, logits, end)
    return Pass(probs, chosen, _rule(model, run, probs, chosen, p_chosen))


def _network(model: MaskedLM, run: Run, start: int, end: int) -> Any:
    """The network's logits from `start` on, over what the model sees up to `end`, through the block's cache when
    the settings keep one (made at the block's first pass)."""
    s, P, hi, view = run.s, run.prompt_len, run.bounds[1], run.x[:end]
    fused = s.prefix_cache and model.fused_refresh  # the settings are `honoured` ones
    if run.passes == 0 and fused:  # one pass: the cache for this block and its first step
        run.cache, logits = model.refresh(view, start)
        run.refreshes += 1
    elif not s.prefix_cache:  # the whole sequence, and only the rows from `start` on come back
        logits = model.logits(view, None, start)
    else:
        if run.passes == 0:  # a call of the network of its own, over the prefix: it counts as a pass
            run.cache = block_cache(model, view, start)
            run.nfe += 1
            run.refreshes += 1
        if s.dual_cache:  # only the block is recomputed; the suffix comes from the cache
            logits = model.logits(view, run.cache, start, stop=P + hi)
        else:
            logits = model.logits(view, run.cache, start)
    run.nfe += 1
    run.step += 1
    run.passes += 1
    return logits


def _written(run: Run) -> list[bool]:
    """Which positions of the prompt and answer hold a token: the prompt and every unmasked answer position."""
    return [True] * run.prompt_len + (~run.masked).tolist()


def _guesses(model: MaskedLM, run: Run, logits: np.ndarray, end: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The block's distributions, guesses and their probabilities under the settings' constraints (no mask, no early
    end, the stutter guards, top-k, temperature); the confidence each masked position shows is set on the way."""
    s, P = run.s, run.prompt_len
    lo, hi = run.bounds
    masked, conf = run.masked, run.conf
    last_pin = int(np.flatnonzero(run.pinned)[-1]) if run.pinned.any() else 0
    z = logits[: hi - lo].astype(np.float64)  # the block's rows: the only ones that can commit
    z[:, model.mask_id] = -np.inf
    ends_after = max(last_pin, s.min_length)  # the answer cannot end before its pins or its shortest length
    z[: max(0, min(hi, ends_after) - lo), model.eos_id] = -np.inf
    if s.no_repeat:
        stutter.no_repeat(z, run.x, masked, P, lo, model.eos_id, model.repeatable)
    if s.no_repeat_ngram:
        NoRepeatNGram(s.no_repeat_ngram, model.eos_id).ban(z, run.x.tolist(), _written(run), range(P + lo, P + hi))
    if 0 < s.top_k < z.shape[1]:  # as Dream's top_k_logits: below each row's k-th largest logit is out
        kth = np.partition(z, -s.top_k, axis=-1)[:, -s.top_k][:, None]
        z = np.where(z < kth, -np.inf, z)
    probs = np.exp(z - z.max(axis=-1, keepdims=True))
    probs /= probs.sum(axis=-1, keepdims=True)
    if s.temperature > 0:  # Gumbel-max in float64 (LLaDA: low precision noise hurts quality)
        u = run.rng.random(z.shape)
        chosen = np.argmax(z / s.temperature - np.log(-np.log(np.clip(u, 1e-300, 1.0))), axis=-1)
    else:
        chosen = np.argmax(z, axis=-1)
    p_chosen = probs[np.arange(len(chosen)), chosen]
    conf[lo:hi][masked[lo:hi]] = p_chosen[masked[lo:hi]]  # masked cells show their top candidate
    right = np.flatnonzero(masked[hi:end - P]) if len(logits) > hi - lo else np.zeros(0, dtype=np.int64)
    if len(right):  # to the right of the block, for display only: the top candidate's probability
        r = logits[hi - lo + right]
        r = np.exp(r - r.max(axis=-1, keepdims=True))
        conf[hi + right] = 1.0 / r.sum(axis=-1)
    return probs, chosen, p_chosen


def _rule(model: MaskedLM, run: Run, probs: np.ndarray, chosen: np.ndarray, p_chosen: np.ndarray) -> np.ndarray:
    """The block's rows the configured rule commits at this pass: the schedule's share by score, every row sure
    enough, the learned filter's picks; then the stutter guards."""
    s, P = run.s, run.prompt_len
    lo, hi = run.bounds
    masked = run.masked
    cand = np.flatnonzero(masked[lo:hi])  # block-relative rows
    scores = _scores(probs[cand], chosen[cand], s.scoring, run.rng)
    sure = p_chosen[cand]
    if s.eos_discount < 1.0:
        is_eos = chosen[cand] == model.eos_id
        scores = np.where(is_eos, scores * s.eos_discount, scores)
        sure = np.where(is_eos, sure * s.eos_discount, sure)
    if s.schedule == "dream":
        minimum = dream_count(len(cand), run.passes - 1, run.budget)
    elif s.schedule == "dllm":  # planned from the block's masked count at its start, with dllm's per-block budget
        plan = dllm_counts(int((~run.pinned[lo:hi]).sum()), math.ceil(s.steps / (s.gen_length // s.block_length)))
        minimum = plan[run.passes - 1] if run.passes <= len(plan) else len(cand)
    else:
        minimum = math.ceil(len(cand) / max(1, run.budget - (run.passes - 1)))  # a learner may take more passes
    # the scoring picks the scheduled commits; threshold / factor judge the model's own confidence whatever the order
    # (a random score or exp(-entropy) above 0.9 is not Fast-dLLM's rule) and add every position sure enough
    scheduled = cand[np.argsort(-scores, kind="stable")[:minimum]]
    extra = cand[np.argsort(-sure, kind="stable")[:_parallel(sure, s)]]
    if run.judge is not None:
        run.held[lo:hi] = np.where(chosen == run.guess[lo:hi], run.held[lo:hi] + 1, 0)
        run.guess[lo:hi] = chosen
        rows = features(probs, chosen, run.x[P + lo:P + hi], masked[lo:hi], model.eos_id, run.held[lo:hi])[cand]
        safe = np.asarray(run.judge.observe(rows, lo + cand, chosen[cand]))
        if s.eos_discount < 1.0:  # the factor holds end-of-text back from the filter too, not only the schedule
            safe = np.where(chosen[cand] == model.eos_id, safe * s.eos_discount, safe)
        if s.filter is not None:
            extra = np.union1d(extra, cand[safe >= s.filter])
    pick = spaced(scheduled, extra, p_chosen, s.min_gap)
    if s.no_repeat:
        pick = stutter.apart(pick, chosen, model.eos_id, model.repeatable)
    if s.no_repeat_ngram:
        pick = NoRepeatNGram(s.no_repeat_ngram, model.eos_id).fresh(pick, chosen, run.x.tolist(), _written(run),
                                                                     range(P + lo, P + hi))
    return pick


def commit(model: MaskedLM, run: Run, now: Pass, rows: np.ndarray, tokens: np.ndarray | None = None,
           remask: bool = True) -> Step:
    """Commits block-relative `rows` of the pass `now` (their guesses, or `tokens`), then, with `remask` and the
    settings' remask, may reopen earlier commits of the block; returns the Step (done once the answer is)."""
    s, P, L = run.s, run.prompt_len, run.s.gen_length
    lo, hi = run.bounds
    rows = np.asarray(rows, dtype=np.int64)
    tokens = now.chosen[rows] if tokens is None else np.asarray(tokens, dtype=np.int64)
    commit = lo + rows
    run.x[P + commit] = tokens
    run.masked[commit] = False
    run.conf[commit] = now.probs[rows, tokens]
    if run.drafted is not None:  # a draft token's confidence is the model's belief in it now, which remask reads
        run.drafted[commit] = False
        mine = np.flatnonzero(run.drafted[lo:hi] & ~run.masked[lo:hi])
        run.conf[lo + mine] = now.probs[mine, run.x[P + lo + mine]]

    reopened = np.array([], dtype=np.int64)
    if remask and s.remask > 0 and run.budget - (run.passes - 1) > 1:
        earlier = np.setdiff1d(np.flatnonzero(~run.masked[lo:hi] & ~run.pinned[lo:hi]) + lo, commit)
        chance = s.remask * (1.0 - run.conf[earlier])
        reopened = earlier[run.rng.random(len(earlier)) < chance]
        run.x[P + reopened] = model.mask_id
        run.masked[reopened] = True
        if run.drafted is not None:
            run.drafted[reopened] = False
        run.conf[reopened] = now.sure[reopened - lo]

    # what the model weighed at the moments that matter for the inspector: commits and reopenings
    candidates = {int(pos): top_candidates(now.probs[pos - lo]) for pos in (*commit, *reopened)}
    n_ans = answer_length(run.x[P:], run.masked, model.eos_id)
    done = s.stop_at_eos and n_ans < L and not run.masked[:n_ans].any()
    run.done = bool(done or not run.masked.any())
    return Step(run.step, run.x[P:].copy(), run.masked.copy(), run.conf.copy(), sorted(commit.tolist()),
                sorted(reopened.tolist()), run.nfe, run.done, candidates, run.refreshes)


def generate(model: MaskedLM, prompt_ids: list[int] | np.ndarray, settings: DiffusionSettings,
             cancel: threading.Event | None = None, pins: dict[int, int] | None = None,
             commit_filter: Judge | None = None, draft: Plan | None = None) -> Iterator[Step]:
    """Yields the all-masked start, then one Step per forward pass; the last has done=True.

    `pins` ({answer position: token id}, app/engine/pins.py) are given from the start: never masked,
    committed or remasked, so the model writes around them (infilling). A `draft` (a revision's Plan) starts the
    answer from its tokens, committed, with its re-noised positions masked: the sampler fills those (and, with
    remask, may reopen a draft token it doubts); a block the draft fills takes no pass.

    With `settings.filter`, the model's own commit filter (or `commit_filter`: anything with the
    `observe(feature rows, positions, guesses) -> scores` of app/engine/commit_filter.py) adds the positions it
    scores at least that sure.

    nfe counts every call of the network. With the prefix cache and a model with a `fused_refresh`, each block starts
    with one pass over the whole sequence that both refreshes the cache and gives the block's first step its logits
    (as in Fast-dLLM), so every step is exactly one pass; `refreshes` counts those block-start passes. A model without
    one (BD3LM's block cache) fills its cache at each block start in a pass of its own, counted in nfe and
    refreshes too; without the cache (off, or a model that keeps none: `honoured`) each step is one whole pass."""
    run = begin(model, prompt_ids, settings, pins, commit_filter, draft)
    yield replace(run.snapshot(), nfe=run.nfe)
    while next_block(run):
        if cancel is not None and cancel.is_set():
            return
        now = forward(model, run)
        yield commit(model, run, now, now.rule)
        if run.done:
            return
    if not run.done:  # a draft with nothing left to fill: the answer is the draft, in no pass
        run.done = True
        yield replace(run.snapshot(), nfe=run.nfe, done=True)
