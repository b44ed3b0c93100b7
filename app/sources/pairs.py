"""Real models to race, in pairs: a diffusion model and its autoregressive sibling (or the nearest AR model of its
size), with what each pair costs to download, the memory it needs and the device it suits.

Only families whose published code this project loads and checks token for token (tests/test_hf_families.py:
LLaDA, Dream; tests/test_hf_dllm.py: dllm's A2D Qwen3, MDLM and BD3LM, and its ModernBERT chat; tests/test_llada2.py:
LLaDA2.x; tests/test_diffusion_gemma.py: DiffusionGemma, by transformers' own code) are offered as Hugging Face
pairs; a model served elsewhere races through its OpenAI-compatible API.
Sizes are the published bfloat16 weights (parameters x 2 bytes); memory is both models' weights at once in the
dtype the device runs (bfloat16 on a GPU, float32 on the CPU) plus a tenth for activations. `check_memory` says in
one sentence, before anything is downloaded, when this machine cannot hold a pair; `check_machine` first says which
Python packages a pair's sides need that are not installed (a Hugging Face side: torch and transformers; LLaDA2.x:
diffusers too), with the pip command, since that is the first thing to fix.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field
from typing import Any

from app.errors import UserError
from app.hf.download import free_gb

HEADROOM = 1.1  # activations and the CUDA context on top of the weights
HF_PACKAGES = ("torch", "transformers")  # what a Hugging Face side imports (app/hf/models.py)


@dataclass(frozen=True)
class Pair:
    """Two sources to race (left: diffusion, right: autoregressive) and what running them takes."""

    name: str
    title: str
    left: str
    right: str
    device: str  # "CPU", "GPU" or "API"
    params_b: tuple[float, float] = (0.0, 0.0)  # billions of parameters, left and right
    left_settings: dict[str, Any] = field(default_factory=dict)
    right_settings: dict[str, Any] = field(default_factory=dict)
    note: str = ""
    packages: tuple[str, ...] = ()  # Python packages beyond those of its sources' kinds (LLaDA2.x: diffusers)
    left_type: str = ""  # the model type its left model's config.json names, where that picks hf-diffusion's backend

    @property
    def download_gb(self) -> float:
        """Both models' published bfloat16 weights, in GB."""
        return round(2 * sum(self.params_b), 1)

    def memory_gb(self, device: str | None = None) -> float:
        """Both models loaded at once on `device` (this pair's own by default): 2 bytes a parameter on a GPU, 4 on
        the CPU, plus HEADROOM."""
        per = 4 if (device or self.device) == "CPU" else 2
        return round(per * sum(self.params_b) * HEADROOM, 1)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "title": self.title, "left": self.left, "right": self.right, "device": self.device,
                "download_gb": self.download_gb, "memory_gb": self.memory_gb(), "note": self.note,
                "left_settings": self.left_settings, "right_settings": self.right_settings}


LLADA = {"trust_remote_code": True, "gen_length": 128, "steps": 128, "block_length": 32, "threshold": None,
         "schedule": "even"}  # LLaDA's generate.py defaults (low-confidence remasking, temperature 0)
DREAM = {"trust_remote_code": True, "gen_length": 128, "steps": 128, "block_length": 128, "threshold": None,
         "schedule": "dream", "scoring": "entropy", "top_k": 50}  # Dream's diffusion_generate(alg="entropy"), whose
# generation config takes transformers' default top_k of 50 (tests/test_hf_reference_env.py)

LLADA2 = {"trust_remote_code": True, "gen_length": 128, "steps": 128, "block_length": 32, "threshold": 0.95,
          "editing_threshold": 0.9, "max_post_steps": 16}  # LLaDA2.1's generate() defaults (temperature 0)
DLLM = {"gen_length": 128, "steps": 128, "block_length": 32, "threshold": None, "schedule": "dllm"}  # dllm's chat.py
# defaults for its MDLM and BD3LM samplers (low-confidence remasking, temperature 0, its linear schedule)
DIFFUSION_GEMMA = {"max_new_tokens": 256}  # as long as the AR side's answer; every other setting the checkpoint's own
# Parameters: Gemma-4-26B-A4B-it's upstream model details give 25.2B in all (3.8B active a token); DiffusionGemma,
# fine-tuned from it with its encoder and decoder sharing those weights, publishes no count of its own, so its
# download is taken as the same 25.2B x 2 bytes (bfloat16) plus nothing for its small self-conditioning block
GEMMA4_26B = 25.2
A2D_MDLM = {"trust_remote_code": True, **DLLM}
A2D_BD3LM = {"trust_remote_code": True, "block_attention": True, **DLLM}  # trained and sampled in blocks of 32

PAIRS: dict[str, Pair] = {p.name: p for p in (
    Pair("twins", "Built-in twins (diffusion vs AR, 4.3M parameters each)", "local-diffusion", "local-ar", "CPU",
         note="Ships with Converge: no download, no key."),
    Pair("a2d-mdlm-0.6b", "Qwen3-0.6B-diffusion-mdlm vs Qwen3-0.6B",
         "hf-diffusion:dllm-hub/Qwen3-0.6B-diffusion-mdlm-v0.1", "hf-ar:Qwen/Qwen3-0.6B", "CPU", (0.6, 0.6), A2D_MDLM,
         note="dllm adapted Qwen3-0.6B to masked diffusion (MDLM): the AR side is its own source, with the same "
              "tokenizer. Both answer without a thinking trace."),
    Pair("a2d-bd3lm-0.6b", "Qwen3-0.6B-diffusion-bd3lm vs Qwen3-0.6B",
         "hf-diffusion:dllm-hub/Qwen3-0.6B-diffusion-bd3lm-v0.1", "hf-ar:Qwen/Qwen3-0.6B", "CPU", (0.6, 0.6), A2D_BD3LM,
         note="Block diffusion (BD3LM): each block of 32 sees only the blocks before it, whose keys/values are "
              "cached, so a step runs one block."),
    Pair("modernbert-large-chat", "ModernBERT-large-chat vs Qwen1.5-0.5B-Chat",
         "hf-diffusion:dllm-hub/ModernBERT-large-chat-v0.1", "hf-ar:Qwen/Qwen1.5-0.5B-Chat", "CPU", (0.4, 0.62), DLLM,
         note="A BERT fine-tuned by dllm to chat by unmasking; dllm compares it with Qwen1.5-0.5B-Chat."),
    Pair("modernbert-base-chat", "ModernBERT-base-chat vs Qwen1.5-0.5B-Chat",
         "hf-diffusion:dllm-hub/ModernBERT-base-chat-v0.1", "hf-ar:Qwen/Qwen1.5-0.5B-Chat", "CPU", (0.15, 0.62), DLLM,
         note="The smaller BERT chat: 150M parameters against the nearest small chat model dllm compares it with."),
    Pair("llada-8b", "LLaDA-8B-Instruct vs Llama-3.1-8B-Instruct", "hf-diffusion:GSAI-ML/LLaDA-8B-Instruct",
         "hf-ar:meta-llama/Llama-3.1-8B-Instruct", "GPU", (8.02, 8.03), LLADA,
         note="LLaDA's paper compares it with LLaMA3 8B. Llama is gated: accept its terms and log in first."),
    Pair("llada-1.5", "LLaDA-1.5 vs Llama-3.1-8B-Instruct", "hf-diffusion:GSAI-ML/LLaDA-1.5",
         "hf-ar:meta-llama/Llama-3.1-8B-Instruct", "GPU", (8.02, 8.03), LLADA,
         note="LLaDA-8B-Instruct after preference alignment (VRPO); the same code. Llama is gated."),
    Pair("dream-7b", "Dream-v0-Instruct-7B vs Qwen2.5-7B-Instruct", "hf-diffusion:Dream-org/Dream-v0-Instruct-7B",
         "hf-ar:Qwen/Qwen2.5-7B-Instruct", "GPU", (7.62, 7.62), DREAM,
         note="Dream was initialised from Qwen2.5-7B: the AR side is its own sibling, with the same tokenizer."),
    Pair("llada2.1-mini", "LLaDA2.1-mini vs Qwen3-14B", "hf-diffusion:inclusionAI/LLaDA2.1-mini",
         "hf-ar:Qwen/Qwen3-14B", "GPU", (16.3, 14.8), LLADA2, packages=("diffusers",), left_type="llada2_moe",
         note="A mixture of experts (1.4B of its 16B parameters run a token) that decodes in blocks of 32 and edits "
              "tokens it already wrote; run by diffusers' LLaDA2Pipeline as its own generate() runs. Its AR sibling, "
              "Ling-mini-2.0, ships code this project has not checked, so the AR side is a plain model of its size."),
    Pair("diffusiongemma-26b", "DiffusionGemma-26B-A4B-it vs Gemma-4-26B-A4B-it",
         "hf-diffusion:google/diffusiongemma-26B-A4B-it", "hf-ar:google/gemma-4-26B-A4B-it", "GPU",
         (GEMMA4_26B, GEMMA4_26B), DIFFUSION_GEMMA, {"gen_length": 256}, left_type="diffusion_gemma",
         note="Uniform-state block diffusion: each 256-token canvas starts as random tokens and each step accepts "
              "the surest positions, re-noising the rest; run by its own generate() in transformers, every step "
              "captured (its timing says so). The AR side is the Gemma 4 model it was fine-tuned from."),
    Pair("llada2-sglang", "LLaDA2.1-mini on an SGLang server vs the built-in AR twin",
         "openai:inclusionAI/LLaDA2.1-mini", "local-ar", "API",
         note="Serve it with SGLang (--dllm-algorithm) on a GPU box and set the left side's Base URL to it "
              "(docs/sources.md); the server streams one chunk per settled block."),
    Pair("mercury", "Mercury (diffusion, API) vs an OpenAI-compatible AR model", "mercury:mercury-2",
         "openai:gpt-4o-mini", "API", note="Needs INCEPTION_API_KEY and OPENAI_API_KEY (or keys typed into the page)."),
)}


def known_type(name: str) -> str | None:
    """The model type a pair declares for model id `name` (`Pair.left_type`), so that its backend, and the settings
    it takes, are known without reading its config.json (offline, before any download); None for any other."""
    return next((p.left_type for p in PAIRS.values() if p.left_type and p.left.partition(":")[2] == name), None)


def available_gb(device: str) -> tuple[float | None, str]:
    """(free GB, where) on this machine for a pair's device: the first CUDA GPU's free memory for "GPU" (None when
    there is none or torch is absent), the memory the OS calls available for "CPU"."""
    if device == "GPU":
        try:
            import torch
        except ImportError:
            return None, "no torch"
        if not torch.cuda.is_available():
            return None, "no CUDA GPU"
        return free_gb("cuda:0")
    return free_gb("cpu")[0], "RAM"


def installed(package: str) -> bool:
    """Whether `package` can be imported here, found without importing it."""
    return importlib.util.find_spec(package) is not None


def needed_packages(pair: Pair) -> tuple[str, ...]:
    """The Python packages `pair`'s sides import beyond the app's own, in install order."""
    hf = any(spec.startswith("hf-") for spec in (pair.left, pair.right))
    return (*HF_PACKAGES, *pair.packages) if hf else pair.packages


def check_machine(pair: Pair, free: tuple[float | None, str] | None = None) -> None:
    """Raises UserError (one sentence) when `pair` cannot run here: first a missing package, with what to install,
    then too little memory (`check_memory`)."""
    needed = needed_packages(pair)
    missing = [p for p in needed if not installed(p)]
    if missing:
        verb = "is" if len(missing) == 1 else "are"
        raise UserError(f"{' and '.join(missing)} {verb} not installed here: pip install {' '.join(needed)} "
                        "(requirements-test.txt pins the versions tested), then pick this pair again.")
    check_memory(pair, free)


def check_memory(pair: Pair, free: tuple[float | None, str] | None = None) -> None:
    """Raises UserError (one sentence naming what fits instead) when this machine lacks the memory for `pair`;
    called before anything is downloaded. `free` overrides the measurement (what `available_gb` returns)."""
    if pair.device == "API" or not sum(pair.params_b):
        return
    free_gb, where = free if free is not None else available_gb(pair.device)
    need = pair.memory_gb()
    if free_gb is None:
        raise UserError(f"{pair.title} needs a GPU with about {need:g} GB free, and this machine has {where}: "
                        "pick the twins or an API pair, or run it on a GPU machine.")
    if free_gb < need:
        raise UserError(f"{pair.title} needs about {need:g} GB of {pair.device} memory and {where} has "
                        f"{free_gb:.1f} GB free: pick a smaller pair (the twins run anywhere) or another machine.")


def pair(name: str) -> Pair:
    """The pair called `name`, or a UserError listing the names."""
    try:
        return PAIRS[name]
    except KeyError:
        raise UserError(f"There is no pair {name!r}: pick one of {', '.join(PAIRS)}.") from None
