"""What both samplers share: the answer and block lengths the page offers, the prompt check, the top candidates.

One list of lengths serves the race and "Be the sampler" (app/ui/sampler_ui.py offers its short end, since a learner
commits every token by hand); any other length in range is valid too.
"""

from __future__ import annotations

import numpy as np

from app.errors import UserError, counted

LENGTHS = (16, 32, 64, 128, 256)  # the answer lengths the page offers (any is valid)
BLOCKS = (8, 16, 32, 64, 128, 256)  # the block lengths the page offers (any that divides the length is valid)
TOP_CANDIDATES = 3  # candidates kept per committed or remasked position, for the token inspector


def top_candidates(probs: np.ndarray, k: int = TOP_CANDIDATES) -> list[tuple[int, float]]:
    """The k most probable (token id, probability) pairs of one distribution, best first."""
    idx = np.argpartition(probs, -k)[-k:] if len(probs) > k else np.arange(len(probs))
    idx = idx[np.argsort(-probs[idx], kind="stable")]
    return [(int(i), float(probs[i])) for i in idx]


def check_prompt(prompt_ids: list[int] | np.ndarray, gen_length: int, max_len: int) -> np.ndarray:
    """The prompt as int64, or a UserError when it is empty or leaves no room for the answer."""
    ids = np.asarray(prompt_ids, dtype=np.int64).reshape(-1)
    if len(ids) == 0:
        raise UserError("The prompt is empty: type a prompt.")
    if len(ids) + gen_length > max_len:
        room = max_len - len(ids)
        if room < 1:
            raise UserError(f"The prompt is {counted(len(ids), 'token')} but the model's context is {max_len}: "
                            "shorten the prompt.")
        raise UserError(f"Prompt ({counted(len(ids), 'token')}) plus answer length ({gen_length}) exceeds the "
                        f"model's context of {max_len} tokens: shorten the prompt or set the length to at most {room}.")
    return ids


def check_blocks(gen_length: int, block_length: int, steps: int) -> None:
    """Raises UserError naming the fix when blocks of `block_length` do not tile `gen_length`, or `steps` cannot give
    each block one step (both block samplers' rule)."""
    n = gen_length
    if n % block_length:
        near = min((d for d in range(1, n + 1) if n % d == 0), key=lambda d: abs(d - block_length))
        raise UserError(f"Block length {block_length} does not divide the generation length {n}: "
                        f"use a block length such as {near}, or change the length.")
    blocks = n // block_length
    if steps < blocks:
        raise UserError(f"{steps} steps cannot cover {blocks} blocks (at least one step each): "
                        f"raise steps to {blocks} or use longer blocks.")
