"""Hugging Face models behind the samplers' MaskedLM / CausalLM / Tokenizer interfaces (needs torch + transformers).

Masked LMs: BERT-family `*ForMaskedLM`, LLaDA-style models (logits aligned with positions) and Dream-style
models (output i predicts token i+1, unshifted here so the sampler never sees the shift). Causal LMs run
with their own KV cache (`past_key_values`). torch and transformers are imported only when a model loads.

A model runs where the accelerator is: device auto picks CUDA, then Apple's MPS, then the CPU; dtype auto
picks bfloat16 on a GPU that supports it (float16 otherwise) and float32 on the CPU. Only the logits rows
the sampler reads leave the device, as float32.
"""

from __future__ import annotations

import os
import re
import socket
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import numpy as np

from app.engine.base import MaskedLMBase
from app.engine.stutter import wordless
from app.errors import UserError
from app.hf.llada2 import MASK_ID as LLADA2_MASK_ID
from app.hf.llada2 import MODEL_TYPES as LLADA2_TYPES

LLADA_MASK_ID = 126336  # LLaDA's tokenizer has no mask token; its reserved id is this one
SHIFTS = ("auto", "shifted", "aligned")
DEVICES = ("auto", "cpu", "cuda", "mps")  # "cuda:N" picks one of several GPUs
DTYPES = ("auto", "float32", "bfloat16", "float16")


def _libs() -> tuple[Any, Any]:
    """(torch, transformers), or a UserError that says what to install."""
    try:
        import torch
        import transformers
    except ImportError:
        raise UserError("Hugging Face sources need torch and transformers: pip install torch transformers.") from None
    transformers.utils.logging.disable_progress_bar()
    transformers.utils.logging.set_verbosity_error()
    return torch, transformers


def unknown_token(token: int) -> str:
    """How an id the tokenizer has no entry for is drawn, in the panel, the inspector and every export: real
    checkpoints' output layers are padded past their tokenizers (Dream: 152064 rows, 151667 entries), and such an
    id, once sampled, would crash the tokenizer (Dream's) or vanish from the text (a fast tokenizer's)."""
    return f"<id {token}>"


class HFTokenizer:
    """A transformers tokenizer seen through app.engine.base.Tokenizer; an id it has no entry for reads as
    `unknown_token`."""

    def __init__(self, tok: Any, mask_id: int | None, eos_id: int) -> None:
        self.tok = tok
        self.mask_id = mask_id
        self.eos_id = eos_id
        known = sorted({int(i) for i in tok.get_vocab().values()})
        self.known = np.zeros(known[-1] + 1 if known else 0, dtype=bool)
        self.known[known] = True

    def encode(self, text: str) -> list[int]:
        return list(self.tok.encode(text, add_special_tokens=False))

    def decode(self, ids: list[int]) -> str:
        """The text of `ids`, each run of ids the tokenizer knows decoded together and any other id as its
        `unknown_token`."""
        out: list[str] = []
        run: list[int] = []
        for i in map(int, ids):
            if 0 <= i < len(self.known) and self.known[i]:
                run.append(i)
                continue
            out += [self._text(run), unknown_token(i)]
            run = []
        return "".join(out) + self._text(run)

    def _text(self, ids: list[int]) -> str:
        """The tokenizer's own decoding of ids it knows ("" for none)."""
        return self.tok.decode(ids, skip_special_tokens=False, clean_up_tokenization_spaces=False) if ids else ""

    def token_strings(self, ids: list[int]) -> list[str]:
        """Each token's text given up to 8 tokens of left context, so word pieces, leading spaces and split
        UTF-8 bytes come out right; a piece that ends mid-character waits for the token that completes it."""
        out: list[str] = []
        held = 0
        for i in range(len(ids)):
            lo = max(0, i - held - 8)
            before = self.decode(ids[lo : i - held])
            now = self.decode(ids[lo : i + 1])
            if now.endswith("\ufffd") and i + 1 < len(ids) and held < 4:
                out.append("")
                held += 1
                continue
            out.append(now[len(before):] if now.startswith(before) else self.decode([ids[i]]))
            held = 0
        return out

    def prompt_ids(self, text: str, chat: bool) -> list[int]:
        """The prompt as the model expects it: the chat template when asked and available (without a thinking preamble,
        as dllm's tokenizers and a race want), else BOS (or CLS) + text."""
        if chat and getattr(self.tok, "chat_template", None):
            ids = self.tok.apply_chat_template([{"role": "user", "content": text}], add_generation_prompt=True,
                                               tokenize=True, enable_thinking=False)  # Qwen3's: answer, no trace
            if isinstance(ids, dict) or hasattr(ids, "input_ids"):
                ids = ids["input_ids"]
            return [int(i) for i in ids]
        ids = self.encode(text)
        if not ids:
            return []
        first = self.tok.bos_token_id if self.tok.bos_token_id is not None else self.tok.cls_token_id
        return ([int(first)] if first is not None else []) + ids


def placement(device: str = "auto", dtype: str = "auto") -> dict[str, str]:
    """The device and dtype a model will run with, auto resolved on this machine; a UserError names what to pick
    when the name is unknown or the device is absent."""
    torch, _ = _libs()
    device, dtype = str(device).strip().lower(), str(dtype).strip().lower()
    if device not in DEVICES and not re.fullmatch(r"cuda:\d+", device):
        raise UserError(f"Device must be one of {', '.join(DEVICES)} (or cuda:N), not {device!r}.")
    if dtype not in DTYPES:
        raise UserError(f"Dtype must be one of {', '.join(DTYPES)}, not {dtype!r}.")
    mps = getattr(torch.backends, "mps", None)
    has_mps = bool(mps and mps.is_available())
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "mps" if has_mps else "cpu"
    elif device.startswith("cuda"):
        index = int(device.partition(":")[2] or 0)
        if not torch.cuda.is_available() or index >= torch.cuda.device_count():
            raise UserError(f"There is no CUDA GPU {device} on this machine (torch sees "
                            f"{torch.cuda.device_count()}): set device to auto or cpu.")
    elif device == "mps" and not has_mps:
        raise UserError("Apple's MPS is not available on this machine: set device to auto or cpu.")
    if dtype == "auto":
        gpu_bf16 = device.startswith("cuda") and torch.cuda.is_bf16_supported()
        dtype = "float32" if device == "cpu" else "bfloat16" if gpu_bf16 else "float16"
    return {"device": device, "dtype": dtype}


def _ids(ids: np.ndarray, device: str) -> Any:
    """A (1, T) int64 tensor of ids on the model's device."""
    import torch

    return torch.as_tensor(np.asarray(ids, dtype=np.int64))[None].to(device)


class HFMaskedLM(MaskedLMBase):
    """MaskedLM over a transformers model, each step one full forward: no cache, because these models' code (LLaDA,
    Dream, dllm's A2D, the BERT family) cannot reuse keys/values across passes of bidirectional attention, so the
    sampler runs without one and counts one pass a step (app/engine/diffusion.py `honoured`).

    Special tokens other than end-of-text (padding, [CLS], [UNK]...) are never proposed. `placement` is the
    device and dtype it runs with."""

    def __init__(self, model: Any, mask_id: int, eos_id: int, shifted: bool, max_len: int,
                 banned: list[int] | None = None, *, runs_on: dict[str, str],
                 repeatable: np.ndarray | None = None) -> None:
        self.model = model
        self.repeatable = repeatable  # tokens the stutter guard lets repeat (stutter.wordless)
        self.banned = sorted(set(banned or []) - {eos_id})
        self.mask_id = mask_id
        self.eos_id = eos_id
        self.shifted = shifted
        self.max_len = max_len
        self.vocab_size = int(model.config.vocab_size)
        self.placement = runs_on

    def logits(self, ids: np.ndarray, cache: Any | None = None, start: int = 0,
               stop: int | None = None) -> np.ndarray:
        """The whole sequence's pass, rows start.. only (no cache is kept, so neither `cache` nor `stop` is given)."""
        import torch

        with torch.inference_mode():
            out = self.model(input_ids=_ids(ids, self.placement["device"])).logits[0]
            if not self.shifted:
                out = out[start:]
            elif start:  # output i-1 predicts token i
                out = out[start - 1:-1]
            else:  # row 0 has no predictor, so it repeats row 0
                out = torch.cat([out[:1], out[:-1]], dim=0)
            out = out.float()
            out[:, [i for i in self.banned if i < out.shape[1]]] = -torch.inf
            return out.cpu().numpy()  # only the rows from `start` on leave the device


class HFCausalLM:
    """CausalLM over a transformers causal LM, with its past_key_values as the cache; `placement` is the device
    and dtype it runs with."""

    def __init__(self, model: Any, eos_id: int, max_len: int, *, runs_on: dict[str, str]) -> None:
        self.model = model
        self.eos_id = eos_id
        self.max_len = max_len
        self.vocab_size = int(model.config.vocab_size)
        self.placement = runs_on
        self.repeatable: np.ndarray | None = None  # every token but end-of-text is guarded by the stutter guard

    def _run(self, ids: np.ndarray, cache: dict[str, Any]) -> np.ndarray:
        import torch

        with torch.inference_mode():
            out = self.model(input_ids=_ids(ids, self.placement["device"]), past_key_values=cache.get("past"),
                             use_cache=True)
        cache["past"] = out.past_key_values
        return out.logits[0, -1].float().cpu().numpy()  # only the last row leaves the device

    def prefill(self, ids: np.ndarray) -> tuple[Any, np.ndarray]:
        cache: dict[str, Any] = {}
        return cache, self._run(ids, cache)

    def decode(self, cache: Any, token: int) -> np.ndarray:
        return self._run(np.array([token]), cache)


def _max_len(config: Any, tok: Any) -> int:
    for name in ("max_position_embeddings", "n_positions", "max_sequence_length"):
        value = getattr(config, name, None)
        if isinstance(value, int) and value > 0:
            return value
    value = getattr(tok, "model_max_length", None)
    return value if isinstance(value, int) and 0 < value < 1_000_000 else 2048


def _load(name: str, trust_remote_code: bool, runs_on: dict[str, str] | None = None) -> tuple[Any, Any, Any, bool]:
    """(config, tokenizer, transformers module, whether the files are local), or a UserError naming what to do; a
    model not yet on this machine is first downloaded with progress, if it fits `runs_on` (`_fetch`)."""
    torch, transformers = _libs()
    if not name:
        raise UserError("Name a model: hf-diffusion:MODEL_ID_OR_PATH or hf-ar:MODEL_ID_OR_PATH.")
    local = Path(name).expanduser().is_dir() or _cached(transformers, name, trust_remote_code)
    if not local and not _hub_reachable():
        raise UserError(f"{name!r} is not a local folder nor in the Hugging Face cache, and the Hub cannot be "
                        "reached: pass a local folder, or download the model first while online.")
    if not local and runs_on is not None:
        local = _fetch(name, trust_remote_code, runs_on)
    try:
        config = transformers.AutoConfig.from_pretrained(name, trust_remote_code=trust_remote_code,
                                                         local_files_only=local)
        tok = transformers.AutoTokenizer.from_pretrained(name, trust_remote_code=trust_remote_code,
                                                         local_files_only=local)
    except ValueError as e:
        if "trust_remote_code" in str(e) and not trust_remote_code:
            raise UserError(f"{name} ships its own model code: set trust_remote_code to True "
                            "if you trust it.") from None
        raise UserError(_why(e, name, trust_remote_code)) from None
    except OSError as e:
        if "not a valid model identifier" in str(e):
            raise UserError(f"Cannot find the Hugging Face model {name!r} locally nor on the Hub: check the name, "
                            "pass a local folder, or log in if it is private (hf auth login).") from None
        raise UserError(_why(e, name, trust_remote_code)) from None
    except Exception as e:  # transformers raises many kinds for half-written folders
        raise UserError(_why(e, name, trust_remote_code)) from None
    if not trust_remote_code and getattr(config, "auto_map", None) and not type(config).__module__.startswith(
            "transformers."):  # its own config class was registered by an earlier trusted load in this process
        raise UserError(f"{name} ships its own model code: set trust_remote_code to True if you trust it.")
    return config, tok, transformers, local


def _fetch(name: str, trust_remote_code: bool, runs_on: dict[str, str]) -> bool:
    """Downloads `name` into the cache with progress, after checking it fits (app/hf/download.py); True once
    it is there, so everything after loads without the network. A UserError names what went wrong."""
    from app.hf.download import download

    try:
        download(name, runs_on)
    except UserError:
        raise
    except Exception as e:
        raise UserError(_why(e, name, trust_remote_code)) from None
    return True


def _cached(transformers: Any, name: str, trust_remote_code: bool) -> bool:
    """True when the Hugging Face cache already holds the model's config (so no network is needed)."""
    try:
        transformers.AutoConfig.from_pretrained(name, trust_remote_code=trust_remote_code, local_files_only=True)
        return True
    except Exception:
        return False


def _hub_reachable(timeout: float = 3.0) -> bool:
    """Whether the Hub's host answers on its port (a quick check, instead of minutes of download retries)."""
    if os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on"):
        return False
    url = urlparse(os.environ.get("HF_ENDPOINT", "https://huggingface.co"))
    port = url.port or (80 if url.scheme == "http" else 443)
    try:
        socket.create_connection((url.hostname or "huggingface.co", port), timeout=timeout).close()
        return True
    except OSError:
        return False


def _weights(loader: Any, name: str, trust_remote_code: bool, local: bool, runs_on: dict[str, str],
             config: Any = None) -> Any:
    """The model's weights in runs_on's dtype, moved to its device, in eval mode."""
    _libs()
    extra = {"config": config} if config is not None else {}
    try:
        model = loader.from_pretrained(name, trust_remote_code=trust_remote_code, dtype=runs_on["dtype"],
                                       local_files_only=local, **extra).to(runs_on["device"])
    except Exception as e:
        raise UserError(_why(e, name, trust_remote_code, config, runs_on)) from None
    if config is not None and getattr(config, "auto_map", None):  # the model's own code, written for transformers 4
        from app.hf.compat import fix_rotary_buffers

        fix_rotary_buffers(model)
    return model.eval()


def _remote(config: Any, name: str, local: bool, trust_remote_code: bool, *keys: str) -> Any:
    """The model's own class for the first of `keys` its auto_map names, mended for transformers 5
    (app/hf/compat.py), when remote code is trusted; else None."""
    if not (trust_remote_code and getattr(config, "auto_map", None)):
        return None
    from app.hf.compat import remote_class, restore_use_cache

    restore_use_cache(config, name)
    try:
        return remote_class(config, name, local, *keys)
    except Exception as e:
        raise UserError(_why(e, name, True, config)) from None


def _why(e: BaseException, name: str, remote_code: bool, config: Any = None,
         runs_on: dict[str, str] | None = None) -> str:
    """The one sentence naming why loading `name` failed (app/hf/errors.py)."""
    from app.hf.errors import explain

    _, transformers = _libs()
    return explain(e, name, remote_code=remote_code and bool(getattr(config, "auto_map", None) or config is None),
                   placement=runs_on, written_for=getattr(config, "transformers_version", None),
                   installed=transformers.__version__)


def _never_proposed(config: Any, tok: Any) -> list[int]:
    """The special ids the diffusion sampler never proposes (HFMaskedLM still lets end-of-text through): all of them,
    but the padding for dllm's A2D models, whose fine-tuning teaches them to fill the canvas after the answer with it
    (dllm's SFT collator pads the labels with the padding id), as dllm's samplers let them."""
    ids = {int(i) for i in getattr(tok, "all_special_ids", [])}
    if str(getattr(config, "model_type", "")).startswith("a2d-") and tok.pad_token_id is not None:
        ids.discard(int(tok.pad_token_id))
    return sorted(ids)


def load_masked(name: str, shift: str = "auto", trust_remote_code: bool = False, device: str = "auto",
                dtype: str = "auto") -> tuple[HFMaskedLM, HFTokenizer]:
    """A Hugging Face masked-diffusion model and its tokenizer, ready for the diffusion sampler."""
    if shift not in SHIFTS:
        raise UserError(f"Logit shift must be one of {', '.join(SHIFTS)}, not {shift!r}.")
    runs_on = placement(device, dtype)
    config, tok, tf, local = _load(name, trust_remote_code, runs_on)
    kind = str(getattr(config, "model_type", "")).lower()
    remote = _remote(config, name, local, trust_remote_code, "AutoModelForMaskedLM", "AutoModel",
                     "AutoModelForCausalLM")  # a masked-LM class has the LM head; AutoModel may be bare (dllm's A2D)
    if remote is not None:
        loader, causal_class = remote, False
    elif type(config) in tf.MODEL_FOR_MASKED_LM_MAPPING:
        loader, causal_class = tf.AutoModelForMaskedLM, False
    elif type(config) in tf.MODEL_FOR_CAUSAL_LM_MAPPING:
        loader, causal_class = tf.AutoModelForCausalLM, True
    else:
        raise UserError(f"{name} is neither a masked LM nor a Dream-style model transformers can load: "
                        "pick a masked LM (BERT family, LLaDA, Dream).")
    shifted = shift == "shifted" or (shift == "auto" and (kind == "dream" or causal_class))
    mask_id = next((i for i in (tok.mask_token_id, getattr(config, "mask_token_id", None)) if isinstance(i, int)),
                   LLADA2_MASK_ID if kind in LLADA2_TYPES else LLADA_MASK_ID if "llada" in kind else None)
    if mask_id is None:
        raise UserError(f"{name} has no mask token, so it cannot be sampled as a masked diffusion model: "
                        "use hf-ar for causal models.")
    eos_id = tok.eos_token_id if tok.eos_token_id is not None else tok.sep_token_id
    if eos_id is None:
        raise UserError(f"{name}'s tokenizer has no end-of-text (or [SEP]) token: pick another model.")
    model = _weights(loader, name, trust_remote_code, local, runs_on, config if remote is not None else None)
    banned = _never_proposed(config, tok)
    return (HFMaskedLM(model, int(mask_id), int(eos_id), shifted, _max_len(config, tok), banned, runs_on=runs_on,
                       repeatable=wordless(tok.batch_decode([[i] for i in range(len(tok))]))),
            HFTokenizer(tok, int(mask_id), int(eos_id)))


def load_causal(name: str, trust_remote_code: bool = False, device: str = "auto",
                dtype: str = "auto") -> tuple[HFCausalLM, HFTokenizer]:
    """A Hugging Face causal LM with its KV cache, and its tokenizer, ready for the AR sampler."""
    runs_on = placement(device, dtype)
    config, tok, tf, local = _load(name, trust_remote_code, runs_on)
    if type(config) not in tf.MODEL_FOR_CAUSAL_LM_MAPPING and not (trust_remote_code
                                                                   and getattr(config, "auto_map", None)):
        raise UserError(f"{name} is not a causal language model: use hf-diffusion for masked models.")
    eos_id = tok.eos_token_id
    if eos_id is None:
        raise UserError(f"{name}'s tokenizer has no end-of-text token: pick another model.")
    loader = _remote(config, name, local, trust_remote_code, "AutoModelForCausalLM") or tf.AutoModelForCausalLM
    model = _weights(loader, name, trust_remote_code, local, runs_on,
                     config if loader is not tf.AutoModelForCausalLM else None)
    return (HFCausalLM(model, int(eos_id), _max_len(config, tok), runs_on=runs_on),
            HFTokenizer(tok, tok.mask_token_id, int(eos_id)))
