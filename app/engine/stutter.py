"""The diffusion sampler's stutter guards: no guess that repeats a written neighbour or completes a repeated run of
n tokens (applied to a pass's logits), and, of the rows one pass would commit together, none that would repeat its
neighbour or a run with the rows taken before it (they could not see each other)."""

from __future__ import annotations

import re

import numpy as np


def wordless(texts: list[str]) -> np.ndarray:
    """Per token (its text, by id), True where it holds no letter or digit (newlines, spaces, punctuation): a repeat of
    one is layout ("\n\n" is two newline tokens, "!!" two marks), not a repeated word, so the guard lets it repeat."""
    return np.array([not re.search(r"\w", t) for t in texts], dtype=bool)


def _guarded(token: int, eos_id: int, repeatable: np.ndarray | None) -> bool:
    """Whether the guard keeps this token from repeating: not end-of-text (an answer that ended is end-of-text to its
    end), nor a token the model declares repeatable (`wordless`)."""
    return token != eos_id and not (repeatable is not None and token < len(repeatable) and repeatable[token])


def no_repeat(z: np.ndarray, x: np.ndarray, masked: np.ndarray, prompt_len: int, lo: int, eos_id: int,
              repeatable: np.ndarray | None = None) -> None:
    """The stutter guard's first half: no block row may guess the token of a written neighbour (the answer's
    first position: the prompt's last token), unless that token may repeat (`_guarded`)."""
    for r in range(len(z)):
        for nb in (lo + r - 1, lo + r + 1):
            if nb >= len(masked) or (nb >= 0 and masked[nb]):
                continue
            token = int(x[prompt_len + nb])
            if _guarded(token, eos_id, repeatable):
                z[r, token] = -np.inf


def no_repeat_ngram(z: np.ndarray, x: np.ndarray, masked: np.ndarray, prompt_len: int, lo: int, n: int,
                    eos_id: int) -> None:
    """No block row may take a token that would complete a run of n tokens the prompt or answer already has: for each
    run of n positions through the row whose other positions are written, the tokens that would repeat a written run
    are out (end-of-text runs excepted). Positions commit in any order, so runs to the row's right count too."""
    tokens = x.tolist()
    written = [True] * prompt_len + (~masked).tolist()
    done = [i for i in range(len(tokens) - n + 1) if all(written[i:i + n]) and eos_id not in tokens[i:i + n]]
    holes: dict[tuple[int, tuple[int, ...]], set[int]] = {}  # (place in the run, the run without it) -> its tokens
    for i in done:
        run = tokens[i:i + n]
        for j in range(n):
            holes.setdefault((j, tuple(run[:j] + run[j + 1:])), set()).add(run[j])
    for r in range(len(z)):
        pos = prompt_len + lo + r
        through = []  # the runs through this row whose other positions are written: (start, place of the row)
        for j in range(n):
            start = pos - j
            others = [k for k in range(start, start + n) if k != pos]
            if start >= 0 and start + n <= len(tokens) and all(written[k] for k in others):
                through.append((start, j))
                for token in holes.get((j, tuple(tokens[k] for k in others)), ()):
                    z[r, token] = -np.inf
        if len(through) > 1:  # one token could also make two of these runs alike ("4 4 _ 4" at runs of three)
            for token in {tokens[k] for start, _ in through for k in range(start, start + n) if k != pos}:
                runs = [tuple(token if k == pos else tokens[k] for k in range(start, start + n))
                        for start, _ in through]
                if len(set(runs)) < len(runs) and token != eos_id:
                    z[r, token] = -np.inf


def fresh_runs(pick: np.ndarray, chosen: np.ndarray, x: np.ndarray, masked: np.ndarray, prompt_len: int, lo: int,
               n: int, eos_id: int) -> np.ndarray:
    """The second half of no-repeated-runs: rows one pass commits together could not see each other, so they are taken
    left to right and a row that would make a run of n tokens repeat with the rows taken before it stays masked (the
    first is always taken: the first half already kept it from repeating the written text)."""
    tokens = x.tolist()
    written = [True] * prompt_len + (~masked).tolist()

    def repeats() -> int:
        runs = [tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1)
                if all(written[i:i + n]) and eos_id not in tokens[i:i + n]]
        return len(runs) - len(set(runs))

    keep: list[int] = []
    before = repeats()  # a prompt may repeat itself: only new repeats count
    for r in sorted(int(r) for r in pick):
        pos = prompt_len + lo + r
        tokens[pos], written[pos] = int(chosen[r]), True
        now = repeats()
        if keep and now > before:
            tokens[pos], written[pos] = int(x[pos]), False
            continue
        keep.append(r)
        before = now
    return np.asarray(keep, dtype=np.int64)


def apart(pick: np.ndarray, chosen: np.ndarray, eos_id: int, repeatable: np.ndarray | None = None) -> np.ndarray:
    """The guard's second half: of two rows side by side that one pass would commit with the same guess, only the
    left is committed (they could not see each other); the right stays masked and is guessed again."""
    keep = [r for r in pick
            if not (r - 1 in pick and chosen[r] == chosen[r - 1] and _guarded(int(chosen[r]), eos_id, repeatable))]
    return np.asarray(keep, dtype=np.int64)
