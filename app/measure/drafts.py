"""Drafts with planted mistakes, and how many of them a revision repaired (issue 53: the revise bench and lesson).

A draft is a text a model did not write (a held-out story's own words), with a share of its words replaced by other
words of the same text (a word swapped in from elsewhere, as a wrong name or a slip would be), seeded. A revision
repairs a planted word when its answer no longer has that word where the draft had it, and restores it when the
original word is back; the answer is aligned with the draft word by word (difflib), so a model that writes a word
in more or fewer tokens is still read at the right place.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

import numpy as np

WORD = re.compile(r"[A-Za-z]+(?:'[A-Za-z]+)?")  # the words a mistake may be planted in (not numbers or punctuation)


@dataclass(frozen=True)
class Planted:
    """A draft: `text` with `mistakes`, each (word index in `words(text)`, the original word, the planted word)."""

    original: str
    text: str
    mistakes: tuple[tuple[int, str, str], ...]

    @property
    def share(self) -> float:
        """The share of the text's words that were replaced."""
        n = len(words(self.original))
        return len(self.mistakes) / n if n else 0.0


def words(text: str) -> list[str]:
    """The words of a text, in order (letters and inner apostrophes)."""
    return WORD.findall(text)


def plant(text: str, share: float, seed: int = 0) -> Planted:
    """`text` with round(share x words) of its words replaced, each by another word of the same text that differs
    from it (case aside), drawn with `seed`; a word keeps its capital when it had one."""
    spans = [m.span() for m in WORD.finditer(text)]
    pool = sorted({text[a:b].lower() for a, b in spans})
    rng = np.random.default_rng(seed)
    count = int(round(share * len(spans)))
    chosen = sorted(int(i) for i in rng.choice(len(spans), size=min(count, len(spans)), replace=False))
    out, last, mistakes = [], 0, []
    for i in chosen:
        a, b = spans[i]
        old = text[a:b]
        others = [w for w in pool if w != old.lower()]
        if not others:
            continue
        new = others[int(rng.integers(len(others)))]
        new = new.capitalize() if old[0].isupper() else new
        out.append(text[last:a] + new)
        last = b
        mistakes.append((i, old, new))
    return Planted(text, "".join(out) + text[last:], tuple(mistakes))


def aligned(draft: list[str], answer: list[str]) -> dict[int, int | None]:
    """For each draft word index, the answer word index it aligns with (None where the answer dropped it)."""
    out: dict[int, int | None] = {}
    ops = difflib.SequenceMatcher(a=[w.lower() for w in draft], b=[w.lower() for w in answer], autojunk=False)
    for tag, i1, i2, j1, j2 in ops.get_opcodes():
        for k in range(i1, i2):
            if tag == "equal":
                out[k] = j1 + (k - i1)
            elif tag == "replace":
                j = j1 + (k - i1) * (j2 - j1) // (i2 - i1)
                out[k] = j if j < j2 else None
            else:
                out[k] = None
    return out


def repairs(planted: Planted, answer: str) -> tuple[int, int]:
    """(repaired, restored): planted words the answer no longer has where the draft had them, and of those the ones
    whose original word is back."""
    draft, got = words(planted.text), words(answer)
    where = aligned(draft, got)
    repaired = restored = 0
    for i, old, new in planted.mistakes:
        j = where.get(i)
        now = got[j].lower() if j is not None else None
        if now != new.lower():
            repaired += 1
            restored += int(now == old.lower())
    return repaired, restored
