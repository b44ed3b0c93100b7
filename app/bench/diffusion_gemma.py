"""The diffusion-gemma section of `python -m app bench`: what capturing every denoising step costs DiffusionGemma's
generate() (app/hf/diffusion_gemma.py), on a tiny random model built here from transformers' own config classes.

Each run is generate() at the same seed and settings, once bare and once captured as a race runs it (the logits of
every step copied to the host, the sampler proxy, the hooks, the steps built), both on a worker thread as a race runs
it (on a busy machine torch's threads run at very different speeds on the main thread); the runs alternate so a burst
of load hits both alike, and the section reports the median and the worst of each. The tiny model's logits are small,
so on a GPU with a real vocabulary (262,144 ids) the copy costs more than here: `copied_per_step_bytes` says how
much.
"""

from __future__ import annotations

import statistics
import threading
import time
from typing import Any

RUNS = 9
# never stops early
SETTINGS: dict[str, Any] = {"max_new_tokens": 64, "max_denoising_steps": 16, "confidence_threshold": 1e-6}
CANVAS = 32
PROMPT = [126, 10, 11, 12, 13]


def tiny_model(seed: int = 0) -> Any:
    """A 2-layer, 32-wide DiffusionGemma (4 experts, 2 a token; a small Gemma 4 vision tower), canvases of CANVAS."""
    import torch
    import transformers

    text = {"vocab_size": 128, "hidden_size": 32, "num_attention_heads": 2, "num_key_value_heads": 2,
            "intermediate_size": 32, "max_position_embeddings": 512, "pad_token_id": 124, "bos_token_id": 126,
            "eos_token_id": 125, "moe_intermediate_size": 8, "num_experts": 4, "top_k_experts": 2,
            "num_hidden_layers": 2, "layer_types": ["sliding_attention", "full_attention"],
            "per_layer_config": {1: {"head_dim": 16, "num_key_value_heads": 2}}}
    vision = {"image_size": 20, "patch_size": 5, "num_channels": 3, "hidden_size": 16, "num_key_value_heads": 1,
              "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 37}
    torch.manual_seed(seed)
    config = transformers.DiffusionGemmaConfig(text_config=text, vision_config=vision, image_token_id=120,
                                               boi_token_id=121, eoi_token_id=122, canvas_length=CANVAS)
    return transformers.DiffusionGemmaForBlockDiffusion(config).eval()


def _summary(seconds: list[float]) -> dict[str, float]:
    return {"median_s": round(statistics.median(seconds), 4), "worst_s": round(max(seconds), 4),
            "best_s": round(min(seconds), 4)}


def _timed(work: Any) -> float:
    """Seconds `work()` takes on a worker thread."""
    took: list[float] = []

    def timed() -> None:
        start = time.perf_counter()
        work()
        took.append(time.perf_counter() - start)

    worker = threading.Thread(target=timed, name="bench-diffusion-gemma")
    worker.start()
    worker.join()
    return took[0]


def bench() -> dict[str, Any]:
    """Bare and captured generate() times on the tiny model, RUNS of each, alternating."""
    try:
        import torch
        import transformers
    except ImportError:
        return {"skipped": "needs torch and transformers"}
    if not hasattr(transformers, "DiffusionGemmaForBlockDiffusion"):
        return {"skipped": f"transformers {transformers.__version__} has no DiffusionGemma"}
    from app.hf.diffusion_gemma import DiffusionGemmaLM, GemmaSettings, generate_kwargs, run

    lm = DiffusionGemmaLM(tiny_model(), [125], runs_on={"device": "cpu", "dtype": "float32"})
    s = GemmaSettings(**SETTINGS)
    bare, captured, steps = [], [], []

    def plain() -> None:
        torch.manual_seed(s.seed)
        lm.model.generate(torch.tensor([PROMPT]), **generate_kwargs(s))

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # one thread: torch's pool spinning on a shared, busy CPU swamps what is measured
    try:
        for _ in range(RUNS):
            bare.append(_timed(plain))
            captured.append(_timed(lambda: steps.append(list(run(lm, PROMPT, s))[-1])))
    finally:
        torch.set_num_threads(threads)
    passes = steps[-1].nfe - steps[-1].refreshes
    median_extra = statistics.median(captured) - statistics.median(bare)
    return {"settings": {**SETTINGS, "canvas_length": CANVAS, "vocab_size": lm.vocab_size, "runs": RUNS,
                         "device": "cpu", "torch_threads": 1},
            "decoder_passes": passes, "bare": _summary(bare), "captured": _summary(captured),
            "captured_over_bare": round(statistics.median(captured) / statistics.median(bare), 3),
            "extra_per_step_ms": round(1000 * median_extra / max(passes, 1), 3),
            "extra_per_step_ms_best": round(1000 * (min(captured) - min(bare)) / max(passes, 1), 3),
            "copied_per_step_bytes": CANVAS * lm.vocab_size * 4,
            "label": "captured timings are shown as 'timed with every step captured'"}
