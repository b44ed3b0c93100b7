"""Start from a draft (issue 53): a text the run begins from, with a share of its positions re-noised.

A diffusion side starts from the draft's tokens and re-noises a share of them: re-masked for a masked model, replaced
by noise for a uniform-state one; the rest of the draft stands as written, and the sampler fills (and may revise) the
re-noised positions by its own rule. Which positions: `random` (seeded), `unsure` (the positions whose draft token
the model finds least likely, its surprisal -log p read from one forward pass over the prompt and the draft: on planted
mistakes in held-out drafts it finds far more of them than the entropy there, which a visible token barely moves) or a
span `START:END` of answer tokens (the share then applies
within the span: 100% re-noises all of it). An autoregressive side cannot revise in place: it keeps the draft up to
the first re-noised position as its prompt's continuation and writes the rest again (`kept_prefix`).

What a recording keeps (docs/recording.md): the header's `draft` (`Revision.to_json`), each side's plan in its
source's header entry (`Plan.to_json`), and per frame `revision`, one letter a token (`letters`).
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import Any

import numpy as np

from app.errors import UserError

WHERE = ("random", "unsure")  # and a span, written START:END
KEPT, EDITED, RENOISED, BEYOND = "k", "e", "r", "."  # a frame's `revision` letters


@dataclass(frozen=True)
class Revision:
    """What the user asked: start from `text`, re-noise `share` (0 to 1) of its tokens, chosen by `where`."""

    text: str
    share: float = 0.3
    where: str = "random"
    seed: int = 0

    def __post_init__(self) -> None:
        if not self.text.strip():
            raise UserError("The draft is empty: type the text to start from, or start from nothing.")
        if not 0.0 <= float(self.share) <= 1.0:
            raise UserError(f"Re-noise share {self.share} is not between 0 and 1 (0% to 100%): pick one in that range.")
        if self.where not in WHERE:
            parse_span(self.where)  # raises a UserError naming the fix
        if isinstance(self.seed, bool) or not isinstance(self.seed, numbers.Integral) or self.seed < 0:
            raise UserError("The draft's seed must be a whole number of at least 0.")

    def continuing(self, prompt: str) -> str:
        """The draft as it continues `prompt` in one text: a space between them where neither has one and the draft
        starts with a letter or digit, so "She went" after "...Lily." is the word " She", as a model writes it."""
        text = self.text
        if prompt and not prompt[-1].isspace() and text[:1].isalnum():
            return " " + text
        return text

    def to_json(self) -> dict[str, Any]:
        """The header's `draft`: what was asked, so a recording says what it started from."""
        return {"text": self.text, "share": float(self.share), "where": self.where, "seed": int(self.seed)}


@dataclass(frozen=True)
class Plan:
    """One side's start: the draft as this side's tokens, the positions it re-noises, and how it revises:
    `revise` (in place), `prefix` (an AR side keeps `kept_prefix` tokens and writes the rest) or `cannot`
    (with `note`, one sentence naming the source)."""

    tokens: tuple[int, ...]
    renoised: tuple[int, ...]
    mode: str = "revise"
    kept_prefix: int | None = None
    note: str = ""
    nfe: int = 0  # the forward passes spent choosing the positions (`unsure`), counted in the side's nfe
    seconds: float = 0.0  # ... and the time they took, on the side's own clock (its stream's Clock starts there)

    def to_json(self, display: list[str] | None = None) -> dict[str, Any]:
        """A side's `draft` in the header: its draft tokens (display strings when given), what it re-noises, how."""
        out: dict[str, Any] = {"mode": self.mode, "renoised": list(self.renoised), "length": len(self.tokens)}
        if display is not None:
            out["tokens"] = list(display)
        if self.kept_prefix is not None:
            out["kept_prefix"] = self.kept_prefix
        if self.note:
            out["note"] = self.note
        if self.nfe:
            out["nfe"] = self.nfe
        return out

    @property
    def kept(self) -> np.ndarray:
        """Which draft positions stand as written at the start (not re-noised), one flag a draft token."""
        out = np.ones(len(self.tokens), dtype=bool)
        out[list(self.renoised)] = False
        return out


def parse_span(where: str) -> tuple[int, int]:
    """`START:END` (answer tokens, END exclusive) as a pair; a UserError naming the fix when it is not that."""
    head, sep, tail = str(where).partition(":")
    if not sep or not head.strip().isdigit() or not tail.strip().isdigit() or int(head) >= int(tail):
        raise UserError(f"Re-noise where {where!r} is not random, unsure or START:END with START below END "
                        "(answer tokens counted from 0), like 4:12.")
    return int(head), int(tail)


def choose(n: int, revision: Revision, uncertainty: np.ndarray | None = None) -> tuple[int, ...]:
    """The positions of a draft of `n` tokens to re-noise, sorted: `round(share x candidates)` of them, the
    candidates being every position or the span's; `unsure` takes the highest `uncertainty` (surprisal) first, ties
    to the left, and needs it; `random` and a span draw with the revision's seed."""
    if revision.where in WHERE:
        candidates = np.arange(n)
    else:
        lo, hi = parse_span(revision.where)
        if lo >= n:
            raise UserError(f"Re-noise span {revision.where} starts past the draft's {n} tokens: "
                            f"mark a span that starts before {n}.")
        candidates = np.arange(lo, min(hi, n))
    count = int(round(float(revision.share) * len(candidates)))
    if count == 0:
        return ()
    if revision.where == "unsure":
        if uncertainty is None or len(uncertainty) != n:
            raise ValueError("unsure needs one uncertainty a draft position")
        order = np.argsort(-np.asarray(uncertainty, dtype=np.float64), kind="stable")
        picked = order[:count]
    else:
        picked = np.random.default_rng(revision.seed).choice(candidates, size=count, replace=False)
    return tuple(sorted(int(p) for p in picked))


def letters(draft: list[str] | tuple[str, ...], renoised: set[int] | tuple[int, ...], tokens: list[str],
            open_: list[bool]) -> str:
    """A frame's `revision`: for each token, `r` a re-noised position still open (mask or noise), `k` the draft's
    own token, `e` a token the draft did not have there (edited), `.` past the draft's end."""
    gone = set(renoised)
    out = []
    for i, token in enumerate(tokens):
        if i >= len(draft):
            out.append(BEYOND)
        elif open_[i] and i in gone:
            out.append(RENOISED)
        else:
            out.append(KEPT if token == draft[i] else EDITED)
    return "".join(out)


def _surprisal(logits: np.ndarray, tokens: np.ndarray) -> np.ndarray:
    z = np.asarray(logits, dtype=np.float64)
    z = z - z.max(axis=-1, keepdims=True)
    log_p = z - np.log(np.exp(z).sum(axis=-1, keepdims=True))
    return -log_p[np.arange(len(tokens)), tokens]


def surprisal(model: Any, prompt_ids: list[int] | np.ndarray, draft_ids: list[int] | tuple[int, ...]) -> np.ndarray:
    """Each draft token's surprisal (-log p, nats) under a bidirectional model (a MaskedLM, app/engine/base.py) that
    sees the prompt and the whole draft: one call of the network, `unsure`'s one forward pass."""
    ids = np.asarray([*list(prompt_ids), *draft_ids], dtype=np.int64)
    P, n = len(ids) - len(draft_ids), len(draft_ids)
    logits = np.asarray(model.logits(ids))[P : P + n, : model.vocab_size]
    return _surprisal(logits, np.asarray(draft_ids, dtype=np.int64))


def causal_surprisal(model: Any, prompt_ids: list[int] | np.ndarray,
                     draft_ids: list[int] | tuple[int, ...]) -> np.ndarray:
    """Each draft token's surprisal under a left-to-right model (a CausalLM) reading the draft after the prompt:
    its prefill and one cached decode per further token, so one pass a draft token."""
    cache, logits = model.prefill(np.asarray(prompt_ids, dtype=np.int64))
    rows = [np.asarray(logits)[: model.vocab_size]]
    for token in list(draft_ids)[:-1]:
        rows.append(np.asarray(model.decode(cache, int(token)))[: model.vocab_size])
    return _surprisal(np.stack(rows), np.asarray(draft_ids, dtype=np.int64))
