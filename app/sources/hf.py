"""`hf-diffusion:ID_OR_PATH` and `hf-ar:ID_OR_PATH`: Hugging Face models through the same samplers as the twins.

Needs torch and transformers (imported only when such a source is made). A model id is fetched by
transformers as usual; offline, pass a local folder or a model already in the Hugging Face cache.
`device` and `dtype` (auto: the GPU in 16 bits where there is one, else the CPU in float32) choose where
the model runs; its settings, and so the recording's header, name the device and dtype that ran.
"""

from __future__ import annotations

import functools
from typing import Any

from app.engine.autoregressive import ARSettings
from app.engine.diffusion import DiffusionSettings
from app.engine.hf import DEVICES, DTYPES
from app.errors import SourceError
from app.sources.base import SourceKind, on_off, register
from app.sources.local import SamplerSource, ar_spec, coerce, diffusion_spec

HF_DIFFUSION = DiffusionSettings(gen_length=64, steps=64, block_length=32)
HF_AR = ARSettings(gen_length=64)
LOAD_OPTIONS = ("chat", "shift", "trust_remote_code", "device", "dtype")


@functools.lru_cache(maxsize=4)
def _masked(name: str, shift: str, trust: bool, device: str, dtype: str) -> tuple[Any, Any]:
    from app.engine.hf import load_masked

    return load_masked(name, shift, trust, device, dtype)


@functools.lru_cache(maxsize=4)
def _causal(name: str, trust: bool, device: str, dtype: str) -> tuple[Any, Any]:
    from app.engine.hf import load_causal

    return load_causal(name, trust, device, dtype)


def _options(settings: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Splits the loader options (chat template, logit shift, remote code, device, dtype) from the sampler settings."""
    opts = {k: settings.pop(k) for k in LOAD_OPTIONS if k in settings}
    for key in ("chat", "trust_remote_code"):
        if key in opts:
            opts[key] = on_off(opts[key], key)
    return opts, settings


def _prompt(chat: bool):
    return lambda tok, text: tok.prompt_ids(text, chat)


def make_hf_diffusion(arg: str, **settings: Any) -> SamplerSource:
    opts, rest = _options(dict(settings))
    s = coerce(DiffusionSettings, rest, "hf-diffusion", HF_DIFFUSION)
    shift, trust, chat = opts.get("shift", "auto"), opts.get("trust_remote_code", False), opts.get("chat", True)
    device, dtype = str(opts.get("device", "auto")), str(opts.get("dtype", "auto"))
    if not arg:
        raise SourceError("Name a model: hf-diffusion:MODEL_ID_OR_PATH.")
    return _ran(SamplerSource(f"hf-diffusion:{arg}", lambda: _masked(arg, shift, trust, device, dtype), s,
                              _prompt(chat), {"model": arg, "shift": shift, "chat": chat}))


def make_hf_ar(arg: str, **settings: Any) -> SamplerSource:
    opts, rest = _options(dict(settings))
    if "shift" in opts:
        raise SourceError("hf-ar has no setting 'shift' (that is for hf-diffusion).")
    s = coerce(ARSettings, rest, "hf-ar", HF_AR)
    trust, chat = opts.get("trust_remote_code", False), opts.get("chat", True)
    device, dtype = str(opts.get("device", "auto")), str(opts.get("dtype", "auto"))
    if not arg:
        raise SourceError("Name a model: hf-ar:MODEL_ID_OR_PATH.")
    return _ran(SamplerSource(f"hf-ar:{arg}", lambda: _causal(arg, trust, device, dtype), s, _prompt(chat),
                              {"model": arg, "chat": chat}))


def _ran(source: SamplerSource) -> SamplerSource:
    """The source with the device and dtype its model loaded on added to its settings (what the header records)."""
    source.extra.update(source.model.placement)
    return source


_LOAD_SPEC = {
    "chat": {"default": True, "label": "Use the chat template when the model has one", "choices": [True, False]},
    "trust_remote_code": {"default": False, "label": "Run the model's own code (LLaDA, Dream)", "choices": [False, True],
                          "info": "Only for models you trust: their Python code runs on this machine."},
    "device": {"default": "auto", "label": "Device", "choices": list(DEVICES),
               "info": "auto: a CUDA GPU, else Apple's MPS, else the CPU."},
    "dtype": {"default": "auto", "label": "Precision of the weights", "choices": list(DTYPES),
              "info": "auto: bfloat16 on a GPU that supports it (else float16), float32 on the CPU."},
}

register(SourceKind(prefix="hf-diffusion", make=make_hf_diffusion, label="Hugging Face masked diffusion model",
                    takes_arg=True, settings={**diffusion_spec(HF_DIFFUSION), **_LOAD_SPEC,
                                              "shift": {"default": "auto", "label": "Logit alignment",
                                                        "choices": ["auto", "shifted", "aligned"],
                                                        "info": "shifted: output i predicts token i+1 (Dream)."}}))
register(SourceKind(prefix="hf-ar", make=make_hf_ar, label="Hugging Face causal model", takes_arg=True,
                    settings={**ar_spec(HF_AR), **_LOAD_SPEC}))
