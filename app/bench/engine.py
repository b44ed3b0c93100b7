"""The engine section of `python -m app bench`: speed against length, parallel decoding, sample quality, numpy vs torch.

Everything runs the shipped twins through the same samplers the app uses, on this machine's CPU, one
sample at a time. Quality is the perplexity of the generated answers under the AR twin, pooled over the
prompts' tokens (easy to game by repetition, so distinct-2 of words and the texts themselves sit beside it).
The measuring helpers live in app/measure/quality.py, and the length and threshold figures come from the
same sweep functions as the page's Sweeps tab (app/measure/sweeps.py), at longer lengths.
"""

from __future__ import annotations

import os
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from app.engine.autoregressive import TWIN_AR, ARSettings
from app.engine.base import MaskedLMBase
from app.engine.diffusion import TWIN_DIFFUSION, DiffusionSettings
from app.errors import UserError
from app.measure import sweeps
from app.measure.quality import PROMPTS, run_diffusion, samples

SWEEP_LENGTHS = (64, 128, 256)
SWEEP_STEPS = 64
SWEEP_REPEATS = 5  # each length's time is the median of this many runs (one 64-token run is short and noisy)
THRESHOLDS = (None, 0.9, 0.5, 0.3, 0.2, 0.1)


def length_sweep(models: sweeps.Models) -> dict[str, Any]:
    """Wall seconds for the full answer at each length: diffusion at a fixed step count, AR one token per pass
    (app.measure.sweeps.length_sweep on the first prompt, at longer lengths than the page's default)."""
    runs = [sweeps.length_sweep(SWEEP_LENGTHS, PROMPTS[:1], steps=SWEEP_STEPS, lookahead=32, models=models)
            for _ in range(SWEEP_REPEATS)]  # whole sweeps repeated, so a burst of load hits every length alike
    by = {(r["series"], r["length"]): r for r in runs[0]}
    timings = [{(r["series"], r["length"]): r["seconds"] for r in rows} for rows in runs]
    sec = {key: float(np.median([t[key] for t in timings])) for key in by}
    table = [{"length": n, "diffusion_seconds": round(sec["diffusion", n], 3),
              "diffusion_nfe": by["diffusion", n]["nfe"],
              "diffusion_lookahead32_seconds": round(sec["diffusion_lookahead", n], 3),
              "ar_seconds": round(sec["ar", n], 3), "ar_nfe": by["ar", n]["nfe"]} for n in SWEEP_LENGTHS]
    first, last = table[0], table[-1]
    return {"settings": {"steps": SWEEP_STEPS, "block_length": 32, "threshold": None, "prefix_cache": True,
                         "seconds": f"median of {SWEEP_REPEATS} runs",
                         "stop_at_eos": False,
                         "lookahead": "0 (whole answer), and 32 in its own column",
                         "ar": "greedy, KV cache, stop_at_eos false"},
            "rows": table,
            "diffusion_ratio_256_64": round(last["diffusion_seconds"] / first["diffusion_seconds"], 2),
            "diffusion_lookahead32_ratio_256_64": round(last["diffusion_lookahead32_seconds"]
                                                        / first["diffusion_lookahead32_seconds"], 2),
            "ar_ratio_256_64": round(last["ar_seconds"] / first["ar_seconds"], 2),
            "target": "diffusion ratio <= 2 while AR's is near 4"}


def best_within(rows: dict[str, dict[str, Any]], ratio: float) -> dict[str, Any] | None:
    """The setting with the most tokens per forward pass whose perplexity is at most `ratio` x one per step's."""
    ok = {name: r for name, r in rows.items() if r.get("tokens_per_forward")
          and r.get("ppl_vs_one_per_step") is not None and r["ppl_vs_one_per_step"] <= ratio}
    if not ok:
        return None
    name = max(ok, key=lambda n: ok[n]["tokens_per_forward"])
    return {"setting": name, **{k: ok[name][k] for k in ("tokens_per_forward", "ppl_vs_one_per_step", "distinct2")}}


def threshold_section(models: sweeps.Models) -> dict[str, Any]:
    """Tokens per forward pass with Fast-dLLM threshold decoding at length 256, against one token per step
    (app.measure.sweeps.threshold_sweep at a longer length than the page's default)."""
    found = sweeps.threshold_sweep(THRESHOLDS, PROMPTS, length=256, steps=256, models=models)
    rows = {"one_per_step" if r["threshold"] is None else f"threshold_{r['threshold']}": r for r in found}
    ref = rows["one_per_step"]["ppl"]
    for row in rows.values():
        row["ppl_vs_one_per_step"] = round(row["ppl"] / ref, 3) if ref and row["ppl"] else None
    return {"rows": rows, "target": ">= 3 tokens per forward pass with perplexity within 10% of one per step",
            "best_within_10pct": best_within(rows, 1.1),
            "note": "tokens counted up to end-of-text; stop_at_eos on, so passes after the answer ends are not run"}


def quality_section(dm: Any, am: Any, tok: Any, prompts: list[list[int]]) -> dict[str, Any]:
    """Perplexity and distinct-2 of the twin's default sampler, LLaDA's defaults, and ablations, beside the AR twin.
    The ablations turn the parallel rules (threshold, factor, learned filter) off, so each changes one thing
    against one token per step."""
    d = TWIN_DIFFUSION
    alone: dict[str, Any] = {"threshold": None, "factor": None, "filter": None}
    settings = {
        "diffusion_default": ("diffusion", d),
        "diffusion_llada_defaults": ("diffusion", DiffusionSettings()),  # greedy confidence, blocks of 32
        "diffusion_one_per_step": ("diffusion", replace(d, steps=d.gen_length, **alone)),
        "diffusion_no_blocks": ("diffusion", replace(d, block_length=d.gen_length, **alone)),
        "diffusion_random_order": ("diffusion", replace(d, scoring="random", **alone)),
        "diffusion_remask_0.3": ("diffusion", replace(d, remask=0.3, **alone)),
        "diffusion_lookahead_32": ("diffusion", replace(d, lookahead=32)),
        "ar_greedy": ("ar", ARSettings(gen_length=d.gen_length)),
        "ar_t0.8_top40": ("ar", ARSettings(gen_length=d.gen_length, temperature=0.8, top_k=40)),
    }
    return {name: samples(kind, dm if kind == "diffusion" else am, am, tok, prompts, s)
            for name, (kind, s) in settings.items()}


class TorchMaskedLM(MaskedLMBase):
    """The diffusion twin's weights in a plain torch eager forward (train.py's TorchTransformer), no cache."""

    def __init__(self, dm: Any) -> None:
        import torch

        from app.training.model import TorchTransformer

        c = dm.net.config
        self.vocab_size, self.mask_id, self.eos_id, self.max_len = c.vocab_size, c.mask_id, c.eos_id, c.max_len - 1
        self.torch = torch
        self.net = TorchTransformer(c.vocab_size, c.n_layer, c.n_head, c.n_embd, c.max_len)
        state = {"wte.weight": dm.net.wte, "wpe.weight": dm.net.wpe, "ln_f.weight": dm.net.ln_f_w,
                 "ln_f.bias": dm.net.ln_f_b}
        for i, L in enumerate(dm.net.layers):
            for name, key, transpose in (("ln1.weight", "ln1_w", False), ("ln1.bias", "ln1_b", False),
                                         ("qkv.weight", "qkv_w", True), ("qkv.bias", "qkv_b", False),
                                         ("proj.weight", "proj_w", True), ("proj.bias", "proj_b", False),
                                         ("ln2.weight", "ln2_w", False), ("ln2.bias", "ln2_b", False),
                                         ("fc.weight", "fc_w", True), ("fc.bias", "fc_b", False),
                                         ("fc_proj.weight", "fc_proj_w", True), ("fc_proj.bias", "fc_proj_b", False)):
                state[f"h.{i}.{name}"] = L[key].T if transpose else L[key]
        self.net.load_state_dict({k: torch.from_numpy(np.ascontiguousarray(v, dtype=np.float32))
                                  for k, v in state.items()})
        self.net.eval()

    def logits(self, ids: np.ndarray, cache: Any = None, start: int = 0, stop: int | None = None) -> np.ndarray:
        seq = self.torch.from_numpy(np.concatenate([[self.eos_id], np.asarray(ids, dtype=np.int64)]))[None]
        with self.torch.inference_mode():
            out = self.net(seq, causal=False)[0]
        return out[start: len(ids)].numpy()  # output at i scores token i (the leading end-of-text undoes the shift)


def numpy_vs_torch(dm: Any, prompt: list[int]) -> dict[str, Any]:
    """Same weights, same sampler, same settings (no prefix cache for either): numpy speed / torch eager speed,
    with torch on as many threads as numpy's BLAS (OPENBLAS_NUM_THREADS), and on torch's own default."""
    try:
        import torch
    except ImportError:
        return {"skipped": "torch is not installed"}
    tm = TorchMaskedLM(dm)
    s = replace(DiffusionSettings(), threshold=None, factor=None, stop_at_eos=False, prefix_cache=False)
    blas = int(os.environ.get("OPENBLAS_NUM_THREADS") or os.cpu_count() or 1)
    default_threads = torch.get_num_threads()
    warm = replace(s, gen_length=32, steps=4, block_length=32)
    run_diffusion(dm, prompt, warm)
    numpy_runs, torch_runs = [], {}
    try:
        for threads in sorted({blas, default_threads}):
            torch.set_num_threads(threads)
            run_diffusion(tm, prompt, warm)
            runs = []
            for _ in range(3):  # numpy and torch alternate, so a burst of load hits both alike; best of three
                if threads == blas:
                    numpy_runs.append(run_diffusion(dm, prompt, s))
                runs.append(run_diffusion(tm, prompt, s))
            torch_runs[threads] = min(runs, key=lambda r: r[2])
    finally:
        torch.set_num_threads(default_threads)
    n_ids, n_nfe, n_sec = min(numpy_runs, key=lambda r: r[2])
    t_ids, _, t_sec = torch_runs[blas]
    _, _, c_sec = run_diffusion(dm, prompt, replace(s, prefix_cache=True))
    return {"settings": s.to_json(), "torch": torch.__version__, "numpy_blas_threads": blas,
            "torch_seconds": {f"{k}_threads": round(v[2], 3) for k, v in torch_runs.items()},
            "numpy_seconds": round(n_sec, 3), "numpy_speed_over_torch": round(t_sec / n_sec, 2),
            "numpy_speed_over_torch_default_threads": round(torch_runs[default_threads][2] / n_sec, 2),
            "same_answer": t_ids == n_ids, "numpy_prefix_cache_seconds": round(c_sec, 3),
            "numpy_prefix_cache_speed_over_torch": round(t_sec / c_sec, 2), "nfe": n_nfe,
            "target": "numpy speed / torch speed >= 1.0 (same threads, neither with the prefix cache)"}


def bench(models_dir: str | Path | None = None) -> dict[str, Any]:
    """The engine section; {'skipped': reason} when the twins are not there."""
    from app.sources.local import twin

    try:
        dm, tok = twin("diffusion", str(models_dir) if models_dir else None)
        am, _ = twin("ar", str(models_dir) if models_dir else None)
    except UserError as e:
        return {"skipped": str(e)}
    prompts = [tok.encode(p) for p in PROMPTS]
    started = time.perf_counter()
    out: dict[str, Any] = {"prompts": PROMPTS, "defaults": TWIN_DIFFUSION.to_json(),
                           "ar_defaults": TWIN_AR.to_json()}
    out["length_sweep"] = length_sweep((dm, am, tok))
    out["threshold"] = threshold_section((dm, am, tok))
    out["quality"] = quality_section(dm, am, tok, prompts)
    out["numpy_vs_torch"] = numpy_vs_torch(dm, prompts[0])
    out["seconds"] = round(time.perf_counter() - started, 1)
    return out
