"""Be the sampler: a diffusion run stepped by hand, one commit at a time, with the learner choosing what to commit.

`start` runs the first forward pass; each `advance` commits from the pass in hand (the learner's picks, or the
configured rule's when they let the model choose) and runs the next pass, so the page can show the model's top
candidates for every masked position of the current block before each choice. The pass, the rule and the commit
are app/engine/diffusion.py's own (a run the model steps alone equals `generate`); a State is never changed after
it is made, so a page can keep one per visitor and a failed step leaves the last one as it was.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np

from app.engine.base import MaskedLM
from app.engine.diffusion import DiffusionSettings, Pass, Run, Step, begin, commit, forward, next_block
from app.engine.sampling import top_candidates
from app.errors import UserError

USER, MODEL = "user", "model"  # who chose a step's commits
SHOWN = 5  # candidates offered per masked position


@dataclass(frozen=True)
class State:
    """A run between two commits: the latest Step, who chose its commits, and the pass the next commit takes
    from (None once the answer is done)."""

    run: Run
    step: Step
    chosen_by: str | None
    now: Pass | None

    @property
    def done(self) -> bool:
        return self.now is None

    @property
    def open(self) -> list[int]:
        """The masked positions of the current block: the ones a commit can choose from, in order."""
        if self.now is None:
            return []
        lo, hi = self.run.bounds
        return [lo + int(r) for r in np.flatnonzero(self.run.masked[lo:hi])]

    def candidates(self, k: int = SHOWN) -> dict[int, list[tuple[int, float]]]:
        """For each open position, the model's k likeliest tokens (id, probability), best first."""
        lo = self.run.bounds[0]
        return {pos: top_candidates(self.now.probs[pos - lo], k) for pos in self.open} if self.now else {}

    def confidence(self) -> dict[int, float]:
        """For each open position, the probability of the model's own guess there (what it would commit)."""
        lo = self.run.bounds[0]
        return {pos: float(self.now.sure[pos - lo]) for pos in self.open} if self.now else {}

    def guesses(self) -> dict[int, int]:
        """For each open position, the token the model would commit there (its guess, sampled at a temperature)."""
        lo = self.run.bounds[0]
        return {pos: int(self.now.chosen[pos - lo]) for pos in self.open} if self.now else {}

    def rule(self) -> list[int]:
        """The positions the configured rule would commit now: what "let the model choose" commits."""
        lo = self.run.bounds[0]
        return sorted(lo + int(r) for r in self.now.rule) if self.now else []


def _after(model: MaskedLM, run: Run, step: Step, chosen_by: str | None) -> State:
    """The State after a commit: the next pass in hand, unless the answer is done."""
    if run.done or not next_block(run):
        return State(run, step, chosen_by, None)
    return State(run, step, chosen_by, forward(model, run))


def start(model: MaskedLM, prompt_ids: list[int] | np.ndarray, settings: DiffusionSettings,
          pins: dict[int, int] | None = None) -> State:
    """The all-masked start (pins in place) and the first forward pass, ready for the first commit."""
    run = begin(model, prompt_ids, settings, pins)
    return _after(model, run, run.snapshot(), None)


def _checked(state: State, now: Pass, picks: dict[int, int | None], vocab_size: int) -> tuple[np.ndarray, np.ndarray]:
    """The picks as block-relative rows and tokens; a UserError naming the fix for any the pass cannot take."""
    if not picks:
        raise UserError("Pick at least one masked position to commit, or let the model choose.")
    lo, hi = state.run.bounds
    open_ = set(state.open)
    rows, tokens = [], []
    for pos, token in sorted(picks.items()):
        if pos not in open_:
            raise UserError(f"Position {pos} is not a masked position of the current block ({lo} to {hi - 1}): "
                            "pick one of those.")
        row = pos - lo
        token = int(now.chosen[row]) if token is None else int(token)
        if not 0 <= token < vocab_size or now.probs[row, token] <= 0:
            raise UserError(f"The model rules out token {token} at position {pos}: pick one of its candidates.")
        rows.append(row)
        tokens.append(token)
    return np.array(rows, dtype=np.int64), np.array(tokens, dtype=np.int64)


def advance(model: MaskedLM, state: State, picks: dict[int, int | None] | None = None) -> State:
    """Commits, then runs the next pass. `picks` ({answer position: token id, or None for the model's guess}) are
    the learner's: exactly those are committed, nothing is reopened. Without picks the model chooses by the
    configured rule (scoring, threshold, filter and remasking), as `generate` would."""
    now = state.now  # read only: commit takes its rows and probabilities
    if now is None:
        raise UserError("The answer is complete: start a new run.")
    chosen = picks is not None
    if picks is not None:
        rows, tokens = _checked(state, now, picks, model.vocab_size)
    run = copy.deepcopy(state.run, memo={id(state.run.judge): state.run.judge, id(state.run.s): state.run.s})
    step = commit(model, run, now, rows, tokens, remask=False) if chosen else commit(model, run, now, now.rule)
    return _after(model, run, step, USER if chosen else MODEL)
