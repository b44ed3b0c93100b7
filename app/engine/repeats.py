"""The one guard against repetition every twin sampler runs alike: no token may complete a run of n tokens the prompt or
answer already has (transformers' NoRepeatNGramLogitsProcessor, `no_repeat_ngram_size`), as a small processor over a
sequence whose positions may be written in any order.

A left-to-right sampler writes every position before the next one, so the only run through the next position ends
there and the rule is exactly transformers'. A diffusion sampler writes positions in any order and leaves gaps: there
a token is banned at a position when, with it, some run of n contiguous written positions through that position would
equal a run of n contiguous written positions elsewhere (runs with an unwritten gap do not count yet; runs holding
end-of-text never count). Rows one pass writes together could not see each other, so `fresh` then keeps, left to
right, only those that make no new repeated run with the rows kept before them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence, Union

import numpy as np

Ints = Union[Sequence[int], np.ndarray]  # token ids, rows or positions: a list or an array


@dataclass(frozen=True)
class NoRepeatNGram:
    """The processor: `n` tokens a run (0 or 1: off), end-of-text `eos_id` never counted in a run. Why a class: the AR,
    masked and uniform samplers build it once from their settings and call the same two methods."""

    n: int
    eos_id: int

    @property
    def on(self) -> bool:
        """Whether the guard bans anything (runs of one token would ban every token seen: transformers' 1 is odd)."""
        return self.n >= 2

    def _done(self, tokens: Sequence[int], written: Sequence[bool]) -> list[int]:
        """Starts of the runs of n contiguous written positions without end-of-text."""
        n = self.n
        return [i for i in range(len(tokens) - n + 1) if all(written[i:i + n]) and self.eos_id not in tokens[i:i + n]]

    def ban(self, z: np.ndarray, tokens: Sequence[int], written: Sequence[bool], positions: Sequence[int]) -> None:
        """Sets to -inf, in each row r of the logits `z`, every token that written at `positions[r]` of `tokens` (the
        prompt then the answer, `written` saying which positions hold a token) would complete a run of n tokens that
        already occurs, or make two runs through that position alike ("4 4 _ 4" at runs of three)."""
        if not self.on:
            return
        n, tokens = self.n, list(tokens)
        holes: dict[tuple[int, tuple[int, ...]], set[int]] = {}  # (place in the run, the run without it) -> tokens
        for i in self._done(tokens, written):
            run = tokens[i:i + n]
            for j in range(n):
                holes.setdefault((j, tuple(run[:j] + run[j + 1:])), set()).add(run[j])
        for r, pos in enumerate(positions):
            through = []  # starts of the runs through this position whose other positions are written
            for j in range(n):
                start = pos - j
                others = [k for k in range(start, start + n) if k != pos]
                if start >= 0 and start + n <= len(tokens) and all(written[k] for k in others):
                    through.append(start)
                    for token in holes.get((j, tuple(tokens[k] for k in others)), ()):
                        z[r, token] = -np.inf
            if len(through) > 1:
                for token in {tokens[k] for start in through for k in range(start, start + n) if k != pos}:
                    runs = [tuple(token if k == pos else tokens[k] for k in range(start, start + n))
                            for start in through]
                    if len(set(runs)) < len(runs) and token != self.eos_id:
                        z[r, token] = -np.inf

    def repeats(self, tokens: Sequence[int], written: Sequence[bool]) -> int:
        """How many written runs of n tokens repeat an earlier one."""
        runs = [tuple(tokens[i:i + self.n]) for i in self._done(tokens, written)]
        return len(runs) - len(set(runs))

    def fresh(self, rows: Ints, chosen: Ints, tokens: Sequence[int], written: Sequence[bool],
              positions: Sequence[int]) -> np.ndarray:
        """Of the rows one pass would write together (row r: token `chosen[r]` at `positions[r]`), those kept, taken
        left to right: a row that would make a run repeat with the rows kept before it waits (the first is always
        kept: `ban` already kept it from repeating the written text; a prompt that repeats itself is no new repeat)."""
        if not self.on:
            return np.asarray(sorted(int(r) for r in rows), dtype=np.int64)
        tokens, written = list(tokens), list(written)
        keep: list[int] = []
        before = self.repeats(tokens, written)
        for r in sorted(int(r) for r in rows):
            pos = positions[r]
            old = (tokens[pos], written[pos])
            tokens[pos], written[pos] = int(chosen[r]), True
            now = self.repeats(tokens, written)
            if keep and now > before:
                tokens[pos], written[pos] = old
                continue
            keep.append(r)
            before = now
        return np.asarray(keep, dtype=np.int64)
