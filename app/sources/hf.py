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
from app.engine.draft import Plan, Revision
from app.engine.options import check, coerce, declared, option
from app.engine.pins import AR_PINS
from app.errors import UserError
from app.hf.config import model_type
from app.hf.diffusion_gemma import MODEL_TYPES as GEMMA_TYPES
from app.hf.diffusion_gemma import GemmaSettings
from app.hf.llada2 import MODEL_TYPES, TAKES, PipelineSettings
from app.hf.models import DEVICES, DTYPES, SHIFTS
from app.sources.base import Backend, SourceKind, register
from app.sources.hf_gemma import GemmaSource, gemma_prompt
from app.sources.local import SamplerSource, diffusion_frame, sampler_settings
from app.sources.pairs import known_type
from app.sources.revise import plan_for, revision_letters
from app.trace.frames import Clock, Frame, clean_text


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
PIPELINE_OPTIONS = tuple(declared(PipelineSettings))
GEMMA_OPTIONS = tuple(declared(GemmaSettings))
MASKED_ONLY = ("shift", "block_attention")  # how Converge's own sampler reads a masked model's outputs

# hf-diffusion runs a model one of two ways, decided by its config's model type before anything loads: Converge's
# sampler (every diffusion setting but the learned commit filter, which only the built-in twin ships, and the cache
# switches: no family's code keeps keys and values between passes but BD3LM's, whose block cache its block attention
# always runs) or, for LLaDA2.x, diffusers' LLaDA2Pipeline, which takes only the settings its signature names
# (app/hf/llada2.py)
MASKED = Backend("masked", "Converge's masked-diffusion sampler", (HF_DIFFUSION, HFLoad()),
                 without=("filter", "prefix_cache", "dual_cache"))
LLADA2 = Backend("llada2", "LLaDA2.x, run by diffusers' LLaDA2Pipeline", (HF_DIFFUSION, PipelineSettings(), HFLoad()),
                 without=tuple(n for n in declared(DiffusionSettings) if n not in TAKES) + MASKED_ONLY,
                 why_not={"pins": "LLaDA2.x runs through diffusers' LLaDA2Pipeline, which does not write around pinned "
                                  "text: remove the pins."})

# DiffusionGemma runs by its own generate() (app/hf/diffusion_gemma.py) with transformers' own classes: it takes
# the settings its generation config holds, and of the loader's neither remote code nor the masked sampler's
GEMMA = Backend("diffusion_gemma", "DiffusionGemma, run by its own generate()", (GemmaSettings(), HFLoad()),
                without=("trust_remote_code",) + MASKED_ONLY,
                why_not={"pins": "DiffusionGemma runs by its own generate(), which does not write around pinned text: "
                                 "remove the pins."})


def backend_of(arg: str) -> str:
    """The backend of `hf-diffusion:arg`, from its model type alone: the one a pair declares for its id
    (app/sources/pairs.py `known_type`, known offline), else its config's (app/hf/config.py): "llada2" for
    LLaDA2.x, "diffusion_gemma" for DiffusionGemma, "masked" for any other (and for a model whose config cannot be
    read, whose load then says why)."""
    kind = known_type(arg) or model_type(arg)
    return LLADA2.key if kind in MODEL_TYPES else GEMMA.key if kind in GEMMA_TYPES else MASKED.key


class BlockDiffusionSource(SamplerSource):
    """An LLaDA2.x model, run by diffusers' LLaDA2Pipeline as its authors' sampler runs (app/hf/llada2.py)
    rather than by Converge's diffusion sampler; a token it edits shows as a change, as a Mercury draft's does."""

    def __init__(self, *args: Any, edit: PipelineSettings, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.edit = edit

    def revise(self, revision: Revision, prompt: str) -> Plan:
        """Its plan for `revision` (app/sources/revise.py `plan_for`), kept for the next `stream`: the draft in the
        model's tokenizer, `unsure` read from one block-causal forward pass (`llada2.surprisal`, counted in nfe)."""
        from app.hf import llada2

        m, draft = self.model, [int(i) for i in self.tok.encode(clean_text(revision.text))]
        doubt = lambda: llada2.surprisal(m.model, m.mask_id, self.encode(prompt), draft, self.opts)[0]  # noqa: E731
        return self.planned(plan_for(revision, self.name, draft, "revise", self.opts.gen_length, doubt))

    def settings(self) -> dict[str, Any]:
        return {**super().settings(), **self.edit.to_json()}

    def stream(self, prompt: str, cancel: threading.Event, defer: bool = False) -> Iterator[Frame]:
        """Frames of the pipeline's passes, from its plan's draft after `revise`, each then with its `revision`."""
        from app.hf import llada2

        clock = Clock(self.plan.seconds if self.plan is not None else 0.0)  # a draft's choosing passes count
        ids = self.encode(prompt)
        m = self.model
        plan = self.plan if self.plan is not None and self.plan.mode == "revise" else None
        draft, renoised, spent = (plan.tokens, plan.renoised, plan.nfe) if plan is not None else ((), (), 0)
        for st in llada2.run(m.model, m.mask_id, m.eos_id, ids, self.opts, self.edit, cancel, draft, renoised, spent):
            frame = diffusion_frame(self.tok, st, m.eos_id, len(ids), clock())
            if plan is not None:
                n = len(frame.tokens)
                frame.revision = revision_letters(plan, st.ids[:n], st.masked[:n])
            yield frame


@functools.lru_cache(maxsize=4)
def _masked(name: str, shift: str, trust: bool, device: str, dtype: str) -> tuple[Any, Any]:
    from app.hf.models import load_masked

    return load_masked(name, shift, trust, device, dtype)


@functools.lru_cache(maxsize=4)
def _gemma(name: str, device: str, dtype: str) -> tuple[Any, Any]:
    from app.hf.diffusion_gemma import load

    return load(name, device, dtype)


@functools.lru_cache(maxsize=4)
def _causal(name: str, trust: bool, device: str, dtype: str) -> tuple[Any, Any]:
    from app.hf.models import load_causal

    return load_causal(name, trust, device, dtype)


def _options(settings: dict[str, Any], source: str) -> tuple[HFLoad, dict[str, Any]]:
    """Splits the loader options (chat template, remote code, device, dtype, logit shift) from the sampler settings."""
    load = {k: settings.pop(k) for k in LOAD_OPTIONS if k in settings}
    return coerce(HFLoad, load, source), settings


def _prompt(chat: bool):
    return lambda tok, text: tok.prompt_ids(text, chat)


def make_hf_diffusion(arg: str, **settings: Any) -> SamplerSource:
    """A Hugging Face masked diffusion model's source, on the backend its config names (`backend_of`); make_source
    has already refused any setting that backend does not honour."""
    if not arg:
        raise UserError("Name a model: hf-diffusion:MODEL_ID_OR_PATH.")
    o, rest = _options(dict(settings), "hf-diffusion")
    name = f"hf-diffusion:{arg}"
    if backend_of(arg) == GEMMA.key:
        g = coerce(GemmaSettings, {k: rest.pop(k) for k in GEMMA_OPTIONS if k in rest}, "hf-diffusion")
        load = functools.partial(_gemma, arg, o.device, o.dtype)
        return _ran(GemmaSource(name, load, g, gemma_prompt(o.chat), {"model": arg, "chat": o.chat},
                                applied=GEMMA.names))
    edits = {k: rest.pop(k) for k in PIPELINE_OPTIONS if k in rest}
    s = sampler_settings(DiffusionSettings, rest, "hf-diffusion", HF_DIFFUSION)
    load = functools.partial(_masked, arg, o.shift, o.trust_remote_code, o.device, o.dtype)
    if backend_of(arg) == LLADA2.key:
        edit = coerce(PipelineSettings, edits, "hf-diffusion")
        return _ran(BlockDiffusionSource(name, load, s, _prompt(o.chat), {"model": arg, "chat": o.chat},
                                         applied=LLADA2.names, edit=edit))
    if o.block_attention:
        load = _block_load(load, s)
    extra = {"model": arg, "shift": o.shift, "chat": o.chat, "block_attention": o.block_attention}
    return _ran(SamplerSource(name, load, s, _prompt(o.chat), extra, applied=MASKED.names))


def _block_load(load: Any, s: DiffusionSettings) -> Any:
    """`load` with its model run as block diffusion in blocks of the sampler's block length (app/hf/block.py),
    which decodes with its block cache (the prefix cache, on by default and offered to no Hugging Face model)."""

    def loaded() -> tuple[Any, Any]:
        from app.hf.block import block_model

        return block_model(load(), s.block_length)

    return loaded


def make_hf_ar(arg: str, **settings: Any) -> SamplerSource:
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


register(SourceKind(prefix="hf-diffusion", make=make_hf_diffusion, label="Hugging Face masked diffusion model",
                    takes_arg=True, backends=(MASKED, LLADA2, GEMMA), backend_of=backend_of))
register(SourceKind(prefix="hf-ar", make=make_hf_ar, label="Hugging Face causal model", takes_arg=True,
                    options=(HF_AR, HFLoad()), without=MASKED_ONLY,
                    why_not={"pins": AR_PINS, **{n: "{source} has no setting {name!r}: that is for hf-diffusion's "
                                                     "masked models." for n in MASKED_ONLY}}))
