"""The small interfaces the samplers drive, so one sampler serves the numpy twins and Hugging Face models alike, and
the one base that gives a masked model's optional parts their defaults."""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np


class Tokenizer(Protocol):
    eos_id: int
    mask_id: int | None

    def encode(self, text: str) -> list[int]: ...

    def decode(self, ids: list[int]) -> str: ...

    def token_strings(self, ids: list[int]) -> list[str]:
        """One display string per id, concatenating to decode(ids) (byte-level pieces merged where needed)."""
        ...


class Judge(Protocol):
    """A learned commit filter (app/engine/commit_filter.py): how sure it is that each guess may be committed."""

    def observe(self, rows: np.ndarray, positions: np.ndarray, guesses: np.ndarray) -> np.ndarray:
        """One score in [0, 1] per feature row (`features`), for the guesses at those answer positions."""
        ...


class MaskedLM(Protocol):
    """A bidirectional model: logits for every position of a sequence that may hold mask ids.

    Row i of the result is the distribution of the token AT position i (a Dream-style model whose
    outputs are shifted by one is unshifted by its wrapper, so samplers never see the shift).
    """

    vocab_size: int
    mask_id: int
    eos_id: int
    max_len: int
    # what it offers beyond `logits`, declared so the samplers need not probe (app/engine/diffusion.py `honoured`);
    # `MaskedLMBase` below offers none of it, and a model that inherits it declares only what it offers:
    caches: bool  # prefix_cache keeps keys/values that later passes reuse; without, each pass runs the whole sequence
    exact_prefix: bool  # prefix_cache(ids, upto=P) runs all of ids, so a block's first cached step is exact
    dual_cache: bool  # logits(..., stop=) recomputes only the block and reuses the cached suffix (DualCache)
    fused_refresh: bool  # refresh(ids, start) fills a block's cache and gives its first step's logits in one pass
    commit_filter: Judge | None  # the learned commit filter fitted to it, which `filter` needs
    repeatable: np.ndarray | None  # tokens the stutter guard lets repeat (stutter.wordless); None: all but end-of-text
    pad_id: int | None  # padding, never drawn as noise by the uniform sampler (app/engine/uniform.py)

    def logits(self, ids: np.ndarray, cache: Any | None = None, start: int = 0,
               stop: int | None = None) -> np.ndarray:
        """ids: (T,) int64. Returns (T - start, V) float32 logits for positions start..T-1.

        `cache` (from `prefix_cache`) holds keys/values of ids[:start], computed once per block so
        that each step recomputes only the positions from `start` on (Fast-dLLM's PrefixCache). `stop` is given only
        to a model with a `dual_cache`: rows start..stop-1 only, the rest from the cache.
        """
        ...

    def prefix_cache(self, ids: np.ndarray, upto: int | None = None) -> Any:
        """Keys/values of a settled prefix, for `logits(..., cache=, start=len(ids))`, in one call of the network (a
        pass); called only on a model that `caches`, and with `upto` (the prefix's length, all of ids run) only on
        one with an `exact_prefix`."""
        ...

    def refresh(self, ids: np.ndarray, start: int, stop: int | None = None) -> tuple[Any, np.ndarray]:
        """(the cache prefix_cache(ids, upto=start) gives, the logits of rows start..stop-1) from one pass; called
        only on a model with a `fused_refresh`."""
        ...


class MaskedLMBase:
    """The defaults of a MaskedLM's optional parts: no cache, no commit filter, no padding, every token guarded.
    Why: a model inherits this and sets only what it offers, so callers read every part without probing."""

    caches = False
    exact_prefix = False
    dual_cache = False
    fused_refresh = False
    commit_filter: Judge | None = None
    repeatable: np.ndarray | None = None
    pad_id: int | None = None

    def prefix_cache(self, ids: np.ndarray, upto: int | None = None) -> Any:
        """Refused: this model keeps no cache (`caches` is False)."""
        raise NotImplementedError(f"{type(self).__name__} keeps no prefix cache")

    def refresh(self, ids: np.ndarray, start: int, stop: int | None = None) -> tuple[Any, np.ndarray]:
        """Refused: this model has no one-pass refresh (`fused_refresh` is False)."""
        raise NotImplementedError(f"{type(self).__name__} has no one-pass refresh")


class CausalLM(Protocol):
    """A left-to-right model with a KV cache."""

    vocab_size: int
    eos_id: int
    max_len: int
    repeatable: np.ndarray | None  # tokens the stutter guard lets repeat (stutter.wordless); None: all but end-of-text

    def prefill(self, ids: np.ndarray) -> tuple[Any, np.ndarray]:
        """Runs the prompt; returns (cache, logits of the next token, shape (V,))."""
        ...

    def decode(self, cache: Any, token: int) -> np.ndarray:
        """Appends one token to the cache; returns the next token's logits, shape (V,)."""
        ...
