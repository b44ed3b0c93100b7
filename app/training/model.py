"""The twins' shared architecture in torch (pre-norm GPT blocks, learned positions, tied embeddings), its weights
under the numpy engine's names, and the file a trained twin is written to."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, n_embd: int, n_head: int, dropout: float = 0.0):
        super().__init__()
        self.n_head = n_head
        self.drop = nn.Dropout(dropout)
        self.ln1 = nn.LayerNorm(n_embd)
        self.qkv = nn.Linear(n_embd, 3 * n_embd)
        self.proj = nn.Linear(n_embd, n_embd)
        self.ln2 = nn.LayerNorm(n_embd)
        self.fc = nn.Linear(n_embd, 4 * n_embd)
        self.fc_proj = nn.Linear(4 * n_embd, n_embd)

    def forward(self, x: torch.Tensor, causal: bool) -> torch.Tensor:
        B, T, C = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
        shape = (B, T, self.n_head, C // self.n_head)
        q, k, v = (t.view(shape).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        x = x + self.drop(self.proj(y.transpose(1, 2).reshape(B, T, C)))
        return x + self.drop(self.fc_proj(F.gelu(self.fc(self.ln2(x)), approximate="tanh")))


class TorchTransformer(nn.Module):
    """The twins' shared architecture: pre-norm GPT blocks, learned positions, tied embeddings."""

    def __init__(self, vocab_size: int, n_layer: int, n_head: int, n_embd: int, max_len: int, dropout: float = 0.0):
        super().__init__()
        self.wte = nn.Embedding(vocab_size, n_embd)
        self.wpe = nn.Embedding(max_len, n_embd)
        self.drop = nn.Dropout(dropout)
        self.h = nn.ModuleList(Block(n_embd, n_head, dropout) for _ in range(n_layer))
        self.ln_f = nn.LayerNorm(n_embd)
        self.apply(self._init)
        for name, p in self.named_parameters():
            if name.endswith("proj.weight"):
                nn.init.normal_(p, std=0.02 / math.sqrt(2 * n_layer))

    @staticmethod
    def _init(m: nn.Module) -> None:
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, std=0.02)
        if isinstance(m, nn.Linear) and m.bias is not None:
            nn.init.zeros_(m.bias)

    def forward(self, ids: torch.Tensor, causal: bool) -> torch.Tensor:
        x = self.drop(self.wte(ids) + self.wpe(torch.arange(ids.shape[1], device=ids.device)))
        for block in self.h:
            x = block(x, causal)
        return self.ln_f(x) @ self.wte.weight.T


def export_state(model: TorchTransformer) -> dict[str, np.ndarray]:
    """The weights under the names the numpy engine reads (tied head: only `wte.weight`)."""
    return {k: v.detach().float().cpu().numpy() for k, v in model.state_dict().items()}


def torch_forward(weights: dict[str, np.ndarray], config, ids: np.ndarray) -> np.ndarray:
    """Reference forward in plain torch eager on numpy weights: (T,) ids -> (T, V) raw logits
    (unshifted: row i is the model's output at position i). Used by the parity test and the bench."""
    model = TorchTransformer(config.vocab_size, config.n_layer, config.n_head, config.n_embd, config.max_len)
    model.load_state_dict({k: torch.from_numpy(np.asarray(v, dtype=np.float32)) for k, v in weights.items()})
    model.eval()
    with torch.no_grad():
        out = model(torch.from_numpy(np.asarray(ids, dtype=np.int64))[None], config.causal)
    return out[0].numpy()


def save_twin(model: TorchTransformer, out: Path, twin: str, config: dict, stats: dict) -> None:
    """Writes `<twin>.safetensors` (float16) and `<twin>.json` (config + training stats)."""
    from safetensors.numpy import save_file

    out.mkdir(parents=True, exist_ok=True)
    tensors = {k: v.astype(np.float16) for k, v in export_state(model).items()}
    save_file(tensors, str(out / f"{twin}.safetensors"), metadata={"config": json.dumps(config)})
    (out / f"{twin}.json").write_text(json.dumps({"config": config, "training": stats}, indent=1) + "\n")

