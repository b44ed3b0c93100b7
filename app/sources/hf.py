"""`hf-diffusion:ID_OR_PATH` and `hf-ar:ID_OR_PATH`: Hugging Face models through the same samplers as the twins.

Needs torch and transformers (imported only when such a source is made). A model id is fetched by
transformers as usual; offline, pass a local folder or a model already in the Hugging Face cache.
`device` and `dtype` (auto: the GPU in 16 bits where there is one, else the CPU in float32) choose where
the model runs; its settings, and so the recording's header, name the device and dtype that ran.
"""

from __future__ import annotations

import functools
import threading
from dataclasses import dataclass
from typing import Any, Iterator

from app.engine.autoregressive import ARSettings
from app.engine.diffusion import DiffusionSettings
from app.engine.hf import DEVICES, DTYPES, SHIFTS
from app.engine.llada2 import EditSettings
from app.engine.options import check, coerce, declared, option
from app.errors import UserError
from app.sources.base import SourceKind, register
from app.sources.local import SamplerSource, diffusion_frame, sampler_settings
from app.trace.frames import Clock, Frame


@dataclass
class HFLoad:
    """How a Hugging Face model is loaded, beside how it is sampled; each option is declared once (options.py)."""

    chat: bool = option(True, "Use the chat template when the model has one")
    trust_remote_code: bool = option(False, "Run the model's own code (LLaDA, Dream)",
                                     help="Only for models you trust: their Python code runs on this machine.")
    device: str = option("auto", "Device", presets=DEVICES,
                         help="auto: a CUDA GPU, else Apple's MPS, else the CPU; cuda:N picks one of several GPUs.")
    dtype: str = option("auto", "Dtype (precision of the weights)", choices=DTYPES,
                        help="auto: bfloat16 on a GPU that supports it (else float16), float32 on the CPU.")
    shift: str = option("auto", "Logit shift (how outputs align with tokens)", choices=SHIFTS,
                        help="shifted: output i predicts token i+1 (Dream).")
    block_attention: bool = option(False, "Block attention (BD3LM)",
                                   help="Each block sees only itself and the blocks before it, whose keys/values are "
                                        "cached, as dllm's BD3LM models are trained and sampled; blocks are the "
                                        "sampler's block length.")

    def validate(self) -> "HFLoad":
        """Checks each option against its declaration; the loader checks the device against this machine."""
        check(self)
        return self


HF_DIFFUSION = DiffusionSettings(gen_length=64, steps=64, block_length=32, dual_cache=False)  # no family keeps one
HF_AR = ARSettings(gen_length=64)
LOAD_OPTIONS = tuple(declared(HFLoad))
EDIT_OPTIONS = tuple(declared(EditSettings))


class BlockDiffusionSource(SamplerSource):
    """An LLaDA2.x model, run by diffusers' LLaDA2Pipeline as its authors' sampler runs (app/engine/llada2.py)
    rather than by Converge's diffusion sampler; a token it edits shows as a change, as a Mercury draft's does."""

    def __init__(self, *args: Any, edit: EditSettings, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.edit = edit

    def settings(self) -> dict[str, Any]:
        return {**super().settings(), **self.edit.to_json()}

    def stream(self, prompt: str, cancel: threading.Event, defer: bool = False) -> Iterator[Frame]:
        from app.engine import llada2

        clock = Clock()
        ids = self.encode(prompt)
        m = self.model
        for st in llada2.run(m.model, m.mask_id, m.eos_id, ids, self.opts, self.edit, cancel):
            yield diffusion_frame(self.tok, st, m.eos_id, len(ids), clock())


@functools.lru_cache(maxsize=4)
def _masked(name: str, shift: str, trust: bool, device: str, dtype: str) -> tuple[Any, Any]:
    from app.engine.hf import load_masked

    return load_masked(name, shift, trust, device, dtype)


@functools.lru_cache(maxsize=4)
def _causal(name: str, trust: bool, device: str, dtype: str) -> tuple[Any, Any]:
    from app.engine.hf import load_causal

    return load_causal(name, trust, device, dtype)


def _options(settings: dict[str, Any], source: str) -> tuple[HFLoad, dict[str, Any]]:
    """Splits the loader options (chat template, remote code, device, dtype, logit shift) from the sampler settings."""
    load = {k: settings.pop(k) for k in LOAD_OPTIONS if k in settings}
    return coerce(HFLoad, load, source), settings


def _prompt(chat: bool):
    return lambda tok, text: tok.prompt_ids(text, chat)


def make_hf_diffusion(arg: str, **settings: Any) -> SamplerSource:
    o, rest = _options(dict(settings), "hf-diffusion")
    edits = {k: rest.pop(k) for k in EDIT_OPTIONS if k in rest}
    s = sampler_settings(DiffusionSettings, rest, "hf-diffusion", HF_DIFFUSION)
    if not arg:
        raise UserError("Name a model: hf-diffusion:MODEL_ID_OR_PATH.")
    load = functools.partial(_masked, arg, o.shift, o.trust_remote_code, o.device, o.dtype)
    extra = {"model": arg, "shift": o.shift, "chat": o.chat, "block_attention": o.block_attention}
    if o.block_attention:
        if _moved(edits):
            raise UserError(f"{', '.join(_moved(edits))} only apply to LLaDA2.x models, which run without "
                            "block_attention.")
        load = _block_load(load, s)
    else:
        block = _block_source(arg, load(), s, edits, o.chat, extra)
        if block is not None:
            return _ran(block)
    return _ran(SamplerSource(f"hf-diffusion:{arg}", load, s, _prompt(o.chat), extra))


def _moved(edits: dict[str, Any]) -> list[str]:
    """The editing settings given with values other than their defaults."""
    edit = coerce(EditSettings, edits, "hf-diffusion")
    return [k for k in edits if getattr(edit, k) != getattr(EditSettings(), k)]


def _block_source(arg: str, loaded: tuple[Any, Any], s: DiffusionSettings, edits: dict[str, Any], chat: bool,
                  extra: dict[str, Any]) -> BlockDiffusionSource | None:
    """An LLaDA2.x model's source (its editing settings applied), None for other models; a UserError when a model
    that does not edit is given editing settings other than their defaults."""
    from app.engine.llada2 import is_llada2

    if not is_llada2(loaded[0].model):
        if _moved(edits):
            raise UserError(f"{', '.join(_moved(edits))} only apply to LLaDA2.x models; {arg} is not one.")
        return None
    edit = coerce(EditSettings, edits, "hf-diffusion")
    return BlockDiffusionSource(f"hf-diffusion:{arg}", lambda: loaded, s, _prompt(chat), extra, edit=edit)


def _block_load(load: Any, s: DiffusionSettings) -> Any:
    """`load` with its model run as block diffusion in blocks of the sampler's block length (app/engine/hf_block.py),
    which decodes with its block cache: a UserError when the prefix cache is off."""
    if not s.prefix_cache:
        raise UserError("Block attention decodes with its block cache: turn the prefix cache on.")

    def loaded() -> tuple[Any, Any]:
        from app.engine.hf_block import block_model

        return block_model(load(), s.block_length)

    return loaded


def make_hf_ar(arg: str, **settings: Any) -> SamplerSource:
    for name in ("shift", "block_attention"):
        if name in settings:
            raise UserError(f"hf-ar has no setting '{name}' (that is for hf-diffusion).")
    o, rest = _options(dict(settings), "hf-ar")
    s = sampler_settings(ARSettings, rest, "hf-ar", HF_AR)
    if not arg:
        raise UserError("Name a model: hf-ar:MODEL_ID_OR_PATH.")
    load = functools.partial(_causal, arg, o.trust_remote_code, o.device, o.dtype)
    return _ran(SamplerSource(f"hf-ar:{arg}", load, s, _prompt(o.chat), {"model": arg, "chat": o.chat}))


def _ran(source: SamplerSource) -> SamplerSource:
    """The source with the device and dtype its model loaded on added to its settings (what the header records)."""
    source.extra.update(source.model.placement)
    return source


# the learned commit filter is offered only for a model that ships one (the built-in twin); a causal model has no
# logit shift or block attention to choose
register(SourceKind(prefix="hf-diffusion", make=make_hf_diffusion, label="Hugging Face masked diffusion model",
                    takes_arg=True, options=(HF_DIFFUSION, EditSettings(), HFLoad()), hidden=("filter",)))
register(SourceKind(prefix="hf-ar", make=make_hf_ar, label="Hugging Face causal model", takes_arg=True,
                    options=(HF_AR, HFLoad()), hidden=("shift", "block_attention")))
