"""Block diffusion (BD3LM) over a Hugging Face masked model: each block sees only itself and the blocks before it,
whose keys/values are cached (needs torch + transformers).

dllm's BD3LM models (such as Qwen3-0.6B-diffusion-bd3lm) are trained with a block-causal attention mask, and dllm's
BD3LM sampler decodes them block by block: one pass over the settled prefix fills the key/value cache, then each step
runs only the current block against that cache. `HFBlockLM` does the same behind the MaskedLM interface, laid out as
dllm's sampler lays it out so that the answer agrees token for token: the prefix is left-padded with the padding id to a
whole number of blocks, padding is neither query nor key and takes no position, and blocks are counted from the left of
the padded row (so the answer's blocks start right after the prompt).

Started from a draft (issue 53), it decodes through Converge's masked sampler like any masked model; the one pass
that reads where the model is least sure of the draft (`unsure`) is `logits` without a cache: the whole sequence,
laid out the same way, in one block-causal pass.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

from app.engine.base import MaskedLMBase
from app.errors import UserError


def block_layout(x: Any, block: int, pad_id: int) -> tuple[Any, Any]:
    """(attention mask (1, 1, T, T) bool, position ids (1, T)) for the ids x (T,): a query attends to keys in its own
    block or earlier ones, padding (any pad_id) is masked both ways and positions count only what is not padding."""
    import torch

    valid = x != pad_id
    pos = torch.where(valid, torch.cumsum(valid.long(), dim=0) - 1, torch.zeros_like(x))
    blocks = torch.where(valid, torch.arange(len(x), device=x.device) // block, torch.full_like(x, -1))
    mask = (blocks[None, :] <= blocks[:, None]) & (blocks[:, None] >= 0) & (blocks[None, :] >= 0)
    return mask[None, None], pos[None]


class HFBlockLM(MaskedLMBase):
    """MaskedLM over an HFMaskedLM (app/hf/models.py) run as a block diffusion model with blocks of `block` tokens;
    `prefix_cache` is its block cache and `logits` needs it. `placement` is the device and dtype it runs with."""

    caches = True  # its block cache: one pass over the settled prefix a block, counted as one
    pad_id: int  # the tokenizer's padding, which fills the prefix out to whole blocks

    def __init__(self, base: Any, block: int, pad_id: int) -> None:
        if base.shifted:
            raise UserError("Block attention runs models whose outputs align with their positions: set the logit "
                            "shift to auto or aligned.")
        self.base = base
        self.model = base.model
        self.block = int(block)
        self.pad_id = int(pad_id)
        self.mask_id, self.eos_id, self.banned = base.mask_id, base.eos_id, base.banned
        self.vocab_size, self.max_len, self.placement = base.vocab_size, base.max_len, base.placement
        self.shifted = False

    def prefix_cache(self, ids: np.ndarray, upto: int | None = None) -> dict[str, Any]:
        """The settled prefix, left-padded to whole blocks, run once with block-causal attention: its keys/values
        (never given `upto`: the prefix is run on its own)."""
        import torch

        ids = np.asarray(ids, dtype=np.int64)
        x = np.concatenate([np.full((-len(ids)) % self.block, self.pad_id, dtype=np.int64), ids])
        x = torch.as_tensor(x).to(self.placement["device"])
        mask, pos = block_layout(x, self.block, self.pad_id)
        with torch.inference_mode():
            out = self.model(input_ids=x[None], attention_mask=mask, position_ids=pos, use_cache=True)
        return {"past": out.past_key_values, "ids": x}

    def logits(self, ids: np.ndarray, cache: Any | None = None, start: int = 0,
               stop: int | None = None) -> np.ndarray:
        """Logits of the block ids[start:start + block] only, against the cached prefix ids[:start] (never given
        `stop`: the block is all it recomputes); without a cache, of ids[start:] from one block-causal pass over
        all of ids, left-padded to whole blocks as the cache's prefix is (a pass over a draft, `unsure`)."""
        import torch

        if cache is None:
            return self._whole(ids, start)
        block = torch.as_tensor(np.asarray(ids[start:start + self.block], dtype=np.int64)).to(self.placement["device"])
        prefix = cache["ids"]
        mask, pos = block_layout(torch.cat([prefix, block]), self.block, self.pad_id)
        n = len(prefix)
        with torch.inference_mode():
            out = self.model(input_ids=block[None], attention_mask=mask[:, :, n:, :], position_ids=pos[:, n:],
                             past_key_values=copy.deepcopy(cache["past"]), use_cache=False).logits[0].float()
            out[:, [i for i in self.banned if i < out.shape[1]]] = -torch.inf
            return out.cpu().numpy()


    def _whole(self, ids: np.ndarray, start: int) -> np.ndarray:
        """Logits of ids[start:] from one pass over all of ids with the block layout `prefix_cache` gives them."""
        import torch

        ids = np.asarray(ids, dtype=np.int64)
        pad = (-len(ids)) % self.block if start == 0 else (-start) % self.block  # the prompt's blocks as decoded
        x = torch.as_tensor(np.concatenate([np.full(pad, self.pad_id, dtype=np.int64), ids]))
        x = x.to(self.placement["device"])
        mask, pos = block_layout(x, self.block, self.pad_id)
        with torch.inference_mode():
            out = self.model(input_ids=x[None], attention_mask=mask, position_ids=pos).logits[0, pad + start:].float()
            out[:, [i for i in self.banned if i < out.shape[1]]] = -torch.inf
            return out.cpu().numpy()


def block_model(loaded: tuple[Any, Any], block: int) -> tuple[HFBlockLM, Any]:
    """(model, tokenizer) from load_masked with the model run as block diffusion; the padding is the tokenizer's
    (its end-of-text where it has none, as dllm's tokenizers set it)."""
    base, tok = loaded
    pad = tok.tok.pad_token_id
    return HFBlockLM(base, block, base.eos_id if pad is None else pad), tok
