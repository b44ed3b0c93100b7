"""The stutter guard (never a token next to the same token), beside the guard against repeated runs every twin
sampler shares (app/engine/repeats.py): in the masked sampler no guess that repeats a written neighbour (applied to a
pass's logits), and, of two rows side by side that one pass would commit with the same guess, only the left (they
could not see each other); in the AR sampler its left-to-right form, never the token just written."""

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


def no_repeat_left(z: np.ndarray, left: int | None, eos_id: int, repeatable: np.ndarray | None = None) -> None:
    """The guard left to right (the AR sampler): the next token's logits `z` may not take the token just written
    (`left`: the answer's last token, or the prompt's last before the first; None: nothing written), unless that
    token may repeat (`_guarded`). Left to right a position's only written neighbour is its left one."""
    if left is not None and _guarded(left, eos_id, repeatable):
        z[left] = -np.inf


def apart(pick: np.ndarray, chosen: np.ndarray, eos_id: int, repeatable: np.ndarray | None = None) -> np.ndarray:
    """The guard's second half: of two rows side by side that one pass would commit with the same guess, only the
    left is committed (they could not see each other); the right stays masked and is guessed again."""
    keep = [r for r in pick
            if not (r - 1 in pick and chosen[r] == chosen[r - 1] and _guarded(int(chosen[r]), eos_id, repeatable))]
    return np.asarray(keep, dtype=np.int64)
