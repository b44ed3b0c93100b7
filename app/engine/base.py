"""The two small interfaces the samplers drive, so one sampler serves the numpy twins and Hugging Face models alike."""

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


class MaskedLM(Protocol):
    """A bidirectional model: logits for every position of a sequence that may hold mask ids.

    Row i of the result is the distribution of the token AT position i (a Dream-style model whose
    outputs are shifted by one is unshifted by its wrapper, so samplers never see the shift).
    """

    vocab_size: int
    mask_id: int
    eos_id: int
    max_len: int
    # the caches it offers, declared so the sampler need not probe its methods (app/engine/diffusion.py `honoured`):
    caches: bool  # prefix_cache keeps keys/values that later passes reuse; without, each pass runs the whole sequence
    exact_prefix: bool  # prefix_cache(ids, upto=P) runs all of ids, so a block's first cached step is exact
    dual_cache: bool  # logits(..., stop=) recomputes only the block and reuses the cached suffix (DualCache)

    def logits(self, ids: np.ndarray, cache: Any | None = None, start: int = 0) -> np.ndarray:
        """ids: (T,) int64. Returns (T - start, V) float32 logits for positions start..T-1.

        `cache` (from `prefix_cache`) holds keys/values of ids[:start], computed once per block so
        that each step recomputes only the positions from `start` on (Fast-dLLM's PrefixCache).
        """
        ...

    def prefix_cache(self, ids: np.ndarray) -> Any:
        """Keys/values of a settled prefix, for `logits(..., cache=, start=len(ids))`, in one call of the network (a
        pass); called only on a model that `caches`."""
        ...


class CausalLM(Protocol):
    """A left-to-right model with a KV cache."""

    vocab_size: int
    eos_id: int
    max_len: int

    def prefill(self, ids: np.ndarray) -> tuple[Any, np.ndarray]:
        """Runs the prompt; returns (cache, logits of the next token, shape (V,))."""
        ...

    def decode(self, cache: Any, token: int) -> np.ndarray:
        """Appends one token to the cache; returns the next token's logits, shape (V,)."""
        ...
