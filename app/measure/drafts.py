"""Drafts with planted mistakes (issue 53): text no model wrote, cut from a held-out story, with a share of its words
replaced at token level, and what a revision did to them. The revise bench (app/bench/revise.py) and the lesson
"Diffusion revises" (app/lessons/guided.py, app/lessons/figures.py) measure the same way.

Planting replaces one word token (a space and letters) by another, so the planted draft has the clean draft's token
count and every position stays aligned with it: a mistake at position i is repaired when the answer's token i differs
from the planted one, restored when it is the clean draft's own.
"""

from __future__ import annotations

import re
from typing import Any, Sequence

import numpy as np

WORD = re.compile(r"^ [A-Za-z]+$")  # a token that is one whole word after a space: what planting replaces


def continuation(tok: Any, story: str, opening: str, n: int) -> list[int] | None:
    """A held-out story's next `n` tokens after its `opening` (the prompt), as the twins' tokenizer spells the rest of
    the story, cut at a token boundary; None when the story is shorter than that."""
    rest = story.strip()[len(opening):]
    ids = list(tok.encode(rest))
    return ids[:n] if len(ids) >= n else None


def plant(tok: Any, draft: Sequence[int], share: float, pool: Sequence[int], seed: int) -> tuple[list[int], list[int]]:
    """The draft with `share` of its word tokens replaced by other words of `pool` (seeded), and where."""
    pieces = tok.token_strings(list(draft))
    words = [i for i, p in enumerate(pieces) if WORD.match(p)]
    rng = np.random.default_rng(seed)
    where = sorted(int(i) for i in rng.choice(words, size=max(1, round(share * len(words))), replace=False))
    planted = list(draft)
    for i in where:
        planted[i] = int(rng.choice([w for w in pool if w != draft[i]]))
    return planted, where


def planted_at(clean: Sequence[Any], planted: Sequence[Any]) -> list[int]:
    """Where a planted draft differs from its clean draft, token by token; both must have one token count."""
    if len(clean) != len(planted):
        raise ValueError(f"a planted draft keeps the clean draft's {len(clean)} tokens, not {len(planted)}")
    return [i for i, (a, b) in enumerate(zip(clean, planted)) if a != b]


def scored(answer: Sequence[Any], planted: Sequence[Any], clean: Sequence[Any],
           where: Sequence[int]) -> dict[str, float]:
    """What one revision did to its draft: the share of tokens kept where they stood, and the shares of the planted
    mistakes changed (repaired) and put back to the clean draft's token (restored). Tokens may be ids or strings."""
    at = lambda i: answer[i] if i < len(answer) else None  # noqa: E731
    return {"kept": sum(at(i) == t for i, t in enumerate(planted)) / len(planted),
            "repaired": sum(at(i) != planted[i] for i in where) / len(where),
            "restored": sum(at(i) == clean[i] for i in where) / len(where)}
