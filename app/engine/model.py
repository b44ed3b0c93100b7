"""The twins' transformer in plain numpy (float32), with the adapters the samplers drive.

One network serves both twins: pre-norm GPT blocks, learned positions, tied embeddings and
Dream-style shifted outputs (the output at position i scores the token at i + 1). Every sequence
is run with a leading end-of-text token as its beginning-of-sequence token, exactly as in
training, so the shift is undone without losing a row: the output at that leading token scores
the first real token. `MaskedDiffusionLM` (bidirectional, with a prefix cache) and `ARLM`
(causal, with a preallocated KV cache) implement the protocols of `app.engine.base`.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np

from app.engine.base import MaskedLMBase
from app.engine.tokenizer import BPETokenizer
from app.errors import UserError

DEFAULT_MODELS_DIR = Path(__file__).resolve().parents[2] / "assets" / "models"
TRAIN_HINT = "python -m app.training.train --twin {kind} --corpus STORIES.txt"


@dataclass
class ModelConfig:
    """Shape and special ids of a twin; `max_len` counts the leading end-of-text position too."""

    vocab_size: int = 4096
    n_layer: int = 4
    n_head: int = 4
    n_embd: int = 256
    max_len: int = 321
    causal: bool = True
    shift: bool = True
    mask_id: int = 1
    eos_id: int = 0
    pad_id: int = 2

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "ModelConfig":
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})


@dataclass
class KVCache:
    """Keys and values per layer, (n_layer, n_head, capacity, head_dim), filled up to `n`."""

    k: np.ndarray
    v: np.ndarray
    n: int = 0


def _normalize(x: np.ndarray, eps: float = 1e-5) -> np.ndarray:
    """LayerNorm without its gain and bias (those are folded into the next matmul)."""
    xc = x - x.mean(-1, keepdims=True)
    var = np.einsum("ij,ij->i", xc, xc) / x.shape[-1]
    xc *= (1.0 / np.sqrt(var + eps))[:, None]
    return xc


def _layer_norm(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float = 1e-5) -> np.ndarray:
    h = _normalize(x, eps)
    h *= w
    h += b
    return h


def _gelu(x: np.ndarray, half: bool = True) -> np.ndarray:
    """tanh-approximate GELU, in place on x; with half=False the final factor 0.5 is left to the caller."""
    c = math.sqrt(2.0 / math.pi)
    inner = x * x
    inner *= 0.044715 * c
    inner += c
    inner *= x
    np.tanh(inner, out=inner)
    inner += 1.0
    x *= inner
    if half:
        x *= 0.5
    return x


def _softmax_inplace(s: np.ndarray) -> np.ndarray:
    s -= s.max(-1, keepdims=True)
    np.exp(s, out=s)
    s /= s.sum(-1, keepdims=True)
    return s


class NumpyTransformer:
    """The forward pass in numpy float32: fused QKV, batched heads, optional KV cache."""

    def __init__(self, config: ModelConfig, weights: dict[str, np.ndarray]):
        self.config = config
        c = config
        C = c.n_embd

        def get(name: str, shape: tuple[int, ...]) -> np.ndarray:
            if name not in weights:
                raise KeyError(f"missing tensor {name}")
            a = np.asarray(weights[name], dtype=np.float32)
            if a.shape != shape:
                raise ValueError(f"tensor {name} has shape {a.shape}, expected {shape}")
            return a

        self.wte = np.ascontiguousarray(get("wte.weight", (c.vocab_size, C)))
        self.head = np.ascontiguousarray(self.wte.T)
        self.wpe = get("wpe.weight", (c.max_len, C))
        self.layers = []
        for i in range(c.n_layer):
            p = f"h.{i}."
            self.layers.append(dict(
                ln1_w=get(p + "ln1.weight", (C,)), ln1_b=get(p + "ln1.bias", (C,)),
                qkv_w=np.ascontiguousarray(get(p + "qkv.weight", (3 * C, C)).T), qkv_b=get(p + "qkv.bias", (3 * C,)),
                proj_w=np.ascontiguousarray(get(p + "proj.weight", (C, C)).T), proj_b=get(p + "proj.bias", (C,)),
                ln2_w=get(p + "ln2.weight", (C,)), ln2_b=get(p + "ln2.bias", (C,)),
                fc_w=np.ascontiguousarray(get(p + "fc.weight", (4 * C, C)).T), fc_b=get(p + "fc.bias", (4 * C,)),
                fc_proj_w=np.ascontiguousarray(get(p + "fc_proj.weight", (C, 4 * C)).T),
                fc_proj_b=get(p + "fc_proj.bias", (C,)),
            ))
        self.ln_f_w = get("ln_f.weight", (C,))
        self.ln_f_b = get("ln_f.bias", (C,))
        scale = np.ones(3 * C, np.float32)
        scale[:C] = 1.0 / math.sqrt(C // c.n_head)  # attention's 1/sqrt(d) folded into the query weights
        for L in self.layers:  # LayerNorm gains/biases and GELU's 0.5 folded into the matmuls that follow
            L["qkv_wf"] = np.ascontiguousarray(L["ln1_w"][:, None] * L["qkv_w"] * scale)
            L["qkv_bf"] = (L["ln1_b"] @ L["qkv_w"] + L["qkv_b"]) * scale
            L["fc_wf"] = np.ascontiguousarray(L["ln2_w"][:, None] * L["fc_w"])
            L["fc_bf"] = L["ln2_b"] @ L["fc_w"] + L["fc_b"]
            L["fc_proj_wh"] = np.ascontiguousarray(0.5 * L["fc_proj_w"])

    def new_cache(self, capacity: int | None = None) -> KVCache:
        """An empty preallocated KV cache."""
        c = self.config
        shape = (c.n_layer, c.n_head, capacity or c.max_len, c.n_embd // c.n_head)
        return KVCache(np.zeros(shape, np.float32), np.zeros(shape, np.float32), 0)

    def hidden(
        self, ids: np.ndarray, pos0: int = 0, past: KVCache | None = None, causal: bool | None = None,
        store: KVCache | None = None, allow_prefix: int | None = None, attend: int | None = None,
    ) -> np.ndarray:
        """Final-norm hidden states (T, C) of `ids` placed at positions pos0.. .

        `past` supplies keys/values of positions 0..pos0-1; `store`, when given, receives the keys
        and values of these positions too (at pos0..). `allow_prefix` limits every query to the
        first `allow_prefix` keys plus, for keys after it, only queries after it (a prefix that
        cannot see its suffix), used to check the prefix cache. `attend` (with past = store) lets the
        queries see the first `attend` cached keys, including those right of these positions: the
        suffix half of Fast-dLLM's DualCache; the cache's length is left as it was.
        """
        c = self.config
        causal = c.causal if causal is None else causal
        ids = np.asarray(ids, dtype=np.int64)
        T = len(ids)
        if pos0 + T > c.max_len:
            raise ValueError(f"sequence of {pos0 + T} positions exceeds the model's {c.max_len}")
        if past is not None and past.n != pos0:
            raise ValueError(f"cache holds {past.n} positions but the input starts at {pos0}")
        H, D = c.n_head, c.n_embd // c.n_head
        x = self.wte[ids] + self.wpe[pos0 : pos0 + T]
        S = pos0 + T
        mask = None
        if causal and T > 1:
            mask = np.triu(np.ones((T, S), dtype=bool), k=pos0 + 1)
        elif allow_prefix is not None and pos0 == 0:
            q_in_prefix = np.arange(T)[:, None] < allow_prefix
            k_after = np.arange(S)[None, :] >= allow_prefix
            mask = q_in_prefix & k_after
        bias = None if mask is None else np.where(mask, np.float32(-np.inf), np.float32(0.0))  # added: 5x cheaper
        for li, L in enumerate(self.layers):
            qkv = _normalize(x) @ L["qkv_wf"]
            qkv += L["qkv_bf"]
            qkv = qkv.reshape(T, 3, H, D).transpose(1, 2, 0, 3)
            q, k, v = qkv[0], qkv[1], qkv[2]
            if store is not None:
                store.k[li, :, pos0:S] = k
                store.v[li, :, pos0:S] = v
            if past is not None and pos0 > 0:
                if past is store:
                    k, v = store.k[li, :, : attend or S], store.v[li, :, : attend or S]
                else:
                    k = np.concatenate([past.k[li, :, :pos0], k], axis=1)
                    v = np.concatenate([past.v[li, :, :pos0], v], axis=1)
            att = np.matmul(q, k.transpose(0, 2, 1))
            if bias is not None:
                att += bias
            _softmax_inplace(att)
            y = np.matmul(att, v).transpose(1, 0, 2).reshape(T, c.n_embd)
            x += y @ L["proj_w"]
            x += L["proj_b"]
            m = _normalize(x) @ L["fc_wf"]
            m += L["fc_bf"]
            x += _gelu(m, half=False) @ L["fc_proj_wh"]
            x += L["fc_proj_b"]
        if store is not None and attend is None:
            store.n = S
        return _layer_norm(x, self.ln_f_w, self.ln_f_b)

    def forward(self, ids: np.ndarray, causal: bool | None = None) -> np.ndarray:
        """Raw output logits (T, V) for `ids` from position 0 (row i scores token i + 1)."""
        return self.hidden(ids, causal=causal) @ self.head


def _with_bos(ids: np.ndarray, bos: int) -> np.ndarray:
    ids = np.asarray(ids, dtype=np.int64).reshape(-1)
    return np.concatenate([np.array([bos], dtype=np.int64), ids])


class MaskedDiffusionLM(MaskedLMBase):
    """The diffusion twin as a `MaskedLM`: bidirectional, shift undone, every cache the sampler can use, and the
    learned commit filter fitted to it when its folder has one (app/engine/commit_filter.py)."""

    caches = True
    exact_prefix = True
    dual_cache = True
    fused_refresh = True

    def __init__(self, net: NumpyTransformer):
        self.net = net
        self.commit_filter = None  # load_twin sets it when the folder has one
        self.repeatable = None  # load_twin sets it from the tokenizer (stutter.wordless)
        c = net.config
        self.vocab_size, self.mask_id, self.eos_id = c.vocab_size, c.mask_id, c.eos_id
        self.pad_id = c.pad_id  # never drawn as noise by the uniform sampler (app/engine/uniform.py)
        self.max_len = c.max_len - 1

    def logits(self, ids: np.ndarray, cache: KVCache | None = None, start: int = 0,
               stop: int | None = None) -> np.ndarray:
        """(stop - start, V) float32 logits (stop defaults to len(ids)); row j is the distribution of the
        token at position start + j. With a cache and `stop`, only positions start..stop-1 are recomputed
        and the rest come from the cache (DualCache: the cache must be `prefix_cache(ids, upto=start)`)."""
        seq = _with_bos(ids, self.eos_id)
        T = len(seq) - 1
        if not 0 <= start <= T:
            raise ValueError(f"start {start} is outside 0..{T}")
        stop = T if stop is None else stop
        if not start <= stop <= T:
            raise ValueError(f"stop {stop} is outside {start}..{T}")
        if start == stop:
            return np.zeros((0, self.vocab_size), np.float32)
        if cache is None:
            return self.net.hidden(seq, causal=False)[start:stop] @ self.net.head
        if cache.n != start:
            raise ValueError(f"the prefix cache holds {cache.n} positions; call logits with start={cache.n}")
        if stop < T:
            if cache.k.shape[2] != len(seq):
                raise ValueError("a DualCache needs prefix_cache(ids, upto=start) over the whole sequence")
            h = self.net.hidden(seq[start : stop + 1], pos0=start, past=cache, store=cache, causal=False,
                                attend=len(seq))
            return h[: stop - start] @ self.net.head
        # The output that scores position `start` sits at the last prefix token, so that token is
        # recomputed with the block in view; the cache supplies everything before it.
        h = self.net.hidden(seq[start:], pos0=start, past=cache, causal=False)
        return h[:-1] @ self.net.head

    def refresh(self, ids: np.ndarray, start: int, stop: int | None = None) -> tuple[KVCache, np.ndarray]:
        """One pass over all of `ids`: the cache `prefix_cache(ids, upto=start)` gives, and the logits of
        positions start..stop-1 from that same pass, so a block's first step costs no second pass (Fast-dLLM)."""
        seq = _with_bos(ids, self.eos_id)
        T = len(seq) - 1
        stop = T if stop is None else stop
        if not 0 <= start <= stop <= T:
            raise ValueError(f"start {start} / stop {stop} are outside 0..{T}")
        cache = self.net.new_cache(len(seq))
        h = self.net.hidden(seq, causal=False, store=cache)
        cache.n = start
        return cache, h[start:stop] @ self.net.head

    def prefix_cache(self, ids: np.ndarray, upto: int | None = None) -> KVCache:
        """Keys/values for `logits(..., start=P)`: without `upto`, P = len(ids) and the prefix is run
        on its own (the positions before the last prefix token, which `logits` recomputes, attend
        only to each other); with `upto`, P = upto and all of `ids` is run, so that unchanged ids
        give exactly the uncached logits (Fast-dLLM's PrefixCache refreshed at a block start)."""
        seq = _with_bos(ids, self.eos_id)
        n = len(seq) - 1 if upto is None else upto
        if not 0 <= n <= len(seq) - 1:
            raise ValueError(f"upto {upto} is outside 0..{len(seq) - 1}")
        run = seq[:n] if upto is None else seq
        cache = self.net.new_cache(max(1, len(run)))
        if len(run):
            self.net.hidden(run, causal=False, store=cache)
        cache.n = n
        return cache


class ARLM:
    """The AR twin as a `CausalLM`: causal attention and a preallocated KV cache."""

    def __init__(self, net: NumpyTransformer):
        self.net = net
        c = net.config
        self.vocab_size, self.eos_id = c.vocab_size, c.eos_id
        self.max_len = c.max_len - 1
        self.repeatable: np.ndarray | None = None  # load_twin sets it from the tokenizer (stutter.wordless)

    def prefill(self, ids: np.ndarray) -> tuple[KVCache, np.ndarray]:
        """Runs the prompt (may be empty); returns (cache, next-token logits (V,))."""
        seq = _with_bos(ids, self.eos_id)
        cache = self.net.new_cache()
        h = self.net.hidden(seq, causal=True, past=cache, store=cache)
        return cache, h[-1] @ self.net.head

    def decode(self, cache: KVCache, token: int) -> np.ndarray:
        """Appends `token` at the next position; returns the following token's logits (V,)."""
        if cache.n >= self.net.config.max_len:
            raise ValueError(f"the context is full ({self.max_len} tokens)")
        h = self.net.hidden(np.array([token], dtype=np.int64), pos0=cache.n, past=cache, causal=True, store=cache)
        return h[-1] @ self.net.head


def adapter(net: NumpyTransformer) -> MaskedDiffusionLM | ARLM:
    """The protocol adapter that fits the network: causal -> ARLM, bidirectional -> MaskedDiffusionLM."""
    return ARLM(net) if net.config.causal else MaskedDiffusionLM(net)


def random_weights(config: ModelConfig, seed: int = 0) -> dict[str, np.ndarray]:
    """Random weights under the engine's tensor names (std 0.02 matrices, non-trivial norms and biases)."""
    rng = np.random.default_rng(seed)
    C, V = config.n_embd, config.vocab_size

    def n(*shape: int, std: float = 0.02) -> np.ndarray:
        return (rng.standard_normal(shape) * std).astype(np.float32)

    w = {"wte.weight": n(V, C, std=0.1), "wpe.weight": n(config.max_len, C, std=0.05),
         "ln_f.weight": 1 + n(C, std=0.1), "ln_f.bias": n(C)}
    for i in range(config.n_layer):
        p = f"h.{i}."
        w.update({
            p + "ln1.weight": 1 + n(C, std=0.1), p + "ln1.bias": n(C),
            p + "qkv.weight": n(3 * C, C, std=0.1), p + "qkv.bias": n(3 * C),
            p + "proj.weight": n(C, C), p + "proj.bias": n(C),
            p + "ln2.weight": 1 + n(C, std=0.1), p + "ln2.bias": n(C),
            p + "fc.weight": n(4 * C, C, std=0.05), p + "fc.bias": n(4 * C),
            p + "fc_proj.weight": n(C, 4 * C), p + "fc_proj.bias": n(C),
        })
    return w


def random_model(config: ModelConfig | None = None, seed: int = 0) -> MaskedDiffusionLM | ARLM:
    """An untrained model for tests: the adapter that fits `config.causal`."""
    config = config or ModelConfig()
    return adapter(NumpyTransformer(config, random_weights(config, seed)))


_LOADED: dict[tuple, tuple] = {}


def load_twin(kind: str, models_dir: str | Path = DEFAULT_MODELS_DIR) -> tuple[Any, BPETokenizer]:
    """Loads a shipped twin ("diffusion", "ar", "uniform": the uniform-state diffusion twin, or "referee": the AR
    model that only judges the twins' text) and the tokenizer; UserError when files are missing or corrupt. The model
    is a MaskedDiffusionLM for the diffusion kinds, an ARLM for the others."""
    if kind not in ("diffusion", "ar", "uniform", "referee"):
        raise UserError(f"Unknown local model {kind!r}; choose 'diffusion', 'uniform' or 'ar'.")
    d = Path(models_dir)
    weights_path, config_path, tok_path = d / f"{kind}.safetensors", d / f"{kind}.json", d / "tokenizer.json"
    hint = TRAIN_HINT.format(kind=kind)
    for p in (weights_path, config_path, tok_path):
        if not p.is_file():
            raise UserError(f"The {kind} twin cannot load because {p} is missing; restore assets/models/ or train it "
                            f"with `{hint}`.")
    filter_path = d / f"{kind}.filter.safetensors"  # a filter fitted later makes a new entry, like new weights
    key = (kind, str(d.resolve()), *(p.stat().st_mtime_ns for p in (weights_path, config_path, tok_path)),
           filter_path.stat().st_mtime_ns if filter_path.is_file() else 0)
    if key in _LOADED:
        return _LOADED[key]
    try:
        from safetensors.numpy import load_file

        config = ModelConfig.from_dict(json.loads(config_path.read_text())["config"])
        net = NumpyTransformer(config, load_file(str(weights_path)))
        tok = BPETokenizer(tok_path)
    except Exception as e:  # any parse or shape failure means the files are unusable
        raise UserError(
            f"The {kind} twin's files in {d} are corrupt or do not match ({type(e).__name__}: {e}); restore them or "
            f"retrain with `{hint}`."
        ) from None
    if tok.vocab_size != config.vocab_size or tok.eos_id != config.eos_id or tok.mask_id != config.mask_id:
        raise UserError(f"The tokenizer in {d} does not match the {kind} twin's weights; restore both from the same "
                        "training run.")
    for stale in [k for k in _LOADED if k[0] == kind]:  # one copy per kind: a retrained twin replaces the old one
        del _LOADED[stale]
    model = adapter(net)
    from app.engine.stutter import wordless

    model.repeatable = wordless([tok.decode([i]) for i in range(config.vocab_size)])  # every twin's stutter guard
    if isinstance(model, MaskedDiffusionLM):
        from app.engine.commit_filter import load

        try:
            model.commit_filter = load(filter_path) if filter_path.is_file() else None
        except Exception as e:  # a damaged filter is as unusable as damaged weights
            raise UserError(f"The {kind} twin's commit filter {filter_path} is corrupt ({type(e).__name__}); "
                            "restore it or refit it with `python -m app.training.fit_filter`.") from None
    _LOADED[key] = (model, tok)
    return _LOADED[key]
