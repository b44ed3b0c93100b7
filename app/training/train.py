"""Trains the built-in twins: `python -m app.training.train --twin ar|diffusion|uniform`.

All three share the architecture, tokenizer, data order and seed. The AR twin learns next-token
prediction and saves a checkpoint at the fork (halfway unless --fork-at says otherwise); the diffusion twin
starts from that checkpoint and spends the rest of the same token budget on the masked-diffusion objective with
bidirectional
attention and Dream's shifted logits (output i predicts token i+1), so both have seen the same tokens.

This module is the command: its flags (`TrainConfig`, in config.py), the training log and `main`; the data
(data.py), the model (model.py), the objectives (losses.py) and the run with its checkpoints (loop.py) live beside it.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import time
import typing
from dataclasses import MISSING, fields
from pathlib import Path
from typing import Any

import torch

from app.engine.options import declared
from app.training.config import TrainConfig
from app.training.loop import Run, TrainState, held_out, init_note, keep_best, load_state, new_state, plan, train
from app.training.model import save_twin
from app.training.stories import command_line


def parse_config(argv: list[str] | None = None) -> TrainConfig:
    """The flags read into a TrainConfig: `--fork-at` for `fork_at`, a bool a switch, a tuple one or more values."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    defaults = {f.name: f.default for f in fields(TrainConfig)}
    for name, (kind, o) in declared(TrainConfig).items():
        flag, kind, text = "--" + name.replace("_", "-"), typing.get_origin(kind) or kind, o.help or o.label
        if kind is bool:
            ap.add_argument(flag, action="store_true", help=text)
        elif kind is tuple:
            ap.add_argument(flag, nargs="+", required=defaults[name] is MISSING, default=defaults[name], help=text)
        else:
            ap.add_argument(flag, type=kind, choices=o.choices, required=defaults[name] is MISSING,
                            default=defaults[name], help=text)
    given: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in vars(ap.parse_args(argv)).items()}
    return TrainConfig(**given)



def hardware(device: torch.device | None = None) -> str:
    """A one-line description of where training ran."""
    if device is not None and device.type == "cuda":
        return f"one {torch.cuda.get_device_name(device)} GPU (CUDA); torch {torch.__version__}"
    try:
        lscpu = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10).stdout
        model = next((line.split(":", 1)[1].strip() for line in lscpu.splitlines() if line.startswith("Model name")),
                     "?")
    except (OSError, subprocess.SubprocessError):
        model = platform.processor() or "?"
    return (f"{torch.get_num_threads()}-thread CPU, no GPU ({model}, {os.cpu_count()} cores visible); "
            f"torch {torch.__version__}")



# ---------------------------------------------------------------- the log

def objective_words(cfg: TrainConfig) -> str:
    """The twin's objective in words, for its training log."""
    if cfg.twin == "ar":
        return "next-token cross-entropy"
    if cfg.twin == "uniform":
        return (f"uniform-state diffusion (UDLM/DUO's forward process: each position replaced with probability t by a "
                f"uniformly drawn ordinary token), stratified t per sequence, bidirectional, Dream shift; not their "
                f"ELBO but clean-token cross-entropy at noised positions weighted min(1/t, 10) plus {cfg.clean_weight}"
                f" x it at the noised region's positions left clean; {cfg.prefix_frac:.0%} of sequences keep a clean "
                f"prefix of random length" + (f"; {cfg.block_frac:.0%} laid out as the uniform block sampler sees "
                "them (clean prefix, a block of 16 or 32 noised at rate t, everything after it noise; loss on the "
                "block)" if cfg.block_frac else ""))
    return (f"masked diffusion, stratified t per sequence, CE on masked positions weighted min(1/t, 10), Dream shift; "
            f"{cfg.prefix_frac:.0%} of sequences keep a clean prefix of random length"
            + (f"; {cfg.block_frac:.0%} laid out as the block sampler sees them (clean prefix, a block of 16 or 32 "
               "masked at rate t, the rest masked; loss on the block)" if cfg.block_frac else "")
            + (f"; certainty forcing (dParallel) weight {cfg.certainty}: entropy of softmax(logits / 0.5) at masked "
               "positions predicted right" if cfg.certainty else "")
            + (f"; {cfg.order_frac:.0%} of the stories with a trajectory laid out as a state of the decode that wrote "
               "them (loss on the masked positions of the block it wrote next)" if cfg.order_frac else ""))


def summary(run: Run, state: TrainState, steps: int, ended: dict, since: float, command: str) -> dict:
    """The twin's training log (`<twin>.json`'s "training", which the page reads): what was trained, on what, how
    long, and its curves; `steps` is how many steps the written weights trained for."""
    cfg, best = run.cfg, state.best
    init, previous = init_note(run)
    return {
        "twin": cfg.twin,
        "objective": objective_words(cfg),
        "pad_frac": cfg.pad_frac,
        "init": init,
        "params": sum(p.numel() for p in state.model.parameters()),
        "tokens_this_run": steps * run.per_step,
        "tokens_seen_total": (run.first_step + steps) * run.per_step,
        "steps": steps, "batch": cfg.batch, "seq": cfg.seq, "lr": run.lr, "seed": cfg.seed,
        "seconds": round(state.seconds, 1),
        "seconds_including_data": round(time.time() - since, 1),
        "hardware": hardware(run.device),
        "augment_copies": cfg.augment,
        "stopped_early": ({"after_minutes": cfg.max_minutes, "at_step": ended["stopped_early"]}
                          if ended.get("stopped_early") else None),
        "kept_best": {"step": best["step"], "held_out": best["figure"]} if best and cfg.keep_best else None,
        "data": run.data,
        "held_out": held_out(run, state),
        "fork_checkpoint": state.checkpoint_stats,
        "previous_run": previous,
        "loss_curve": state.curve,
        "held_out_curve": state.val_curve,
        "precision": "float32 weights, bfloat16 autocast" if not cfg.no_bf16 else "float32",
        "dropout": cfg.dropout,
        "command": command,
    }


# ---------------------------------------------------------------- main

def main(argv: list[str] | None = None) -> dict:
    """Trains one twin as the flags say (`TrainConfig`), resuming from its checkpoint with --resume, and writes its
    weights and training log to --out; returns the log (or, paused, where it paused)."""
    cfg = parse_config(argv)
    command = command_line("app.training.train", argv)
    since = time.time()
    torch.set_num_threads(cfg.threads)
    torch.manual_seed(cfg.seed)
    if torch.device(cfg.device).type != "cpu":  # the model, the masks and the generator's draws live on the accelerator
        torch.set_default_device(torch.device(cfg.device))
    run = plan(cfg)
    state = new_state(run)
    print(f"{cfg.twin}: {sum(p.numel() for p in state.model.parameters())} params, {run.data['train_tokens']} train "
          f"tokens, {run.data['held_out_tokens']} held-out tokens, steps {run.first_step}..{run.total_steps} of "
          f"{run.per_step} tokens", flush=True)
    ckpt = Path(cfg.out) / f"{cfg.twin}.ckpt.pt"
    ended: dict = {}
    if cfg.resume and ckpt.is_file():
        load_state(state, ckpt)
        print(f"resumed at step {run.first_step + state.done_steps} after {state.seconds:.0f} s", flush=True)
    if not (cfg.resume and cfg.finish and ckpt.is_file()):  # --finish: the twin is the checkpoint as it stands
        ended = train(run, state, ckpt)
    if "paused_at_step" in ended:
        return {**ended, "loss_curve": state.curve}
    steps = keep_best(run, state)
    stats = summary(run, state, steps, ended, since, command)
    save_twin(state.model, Path(cfg.out), cfg.twin, run.config, stats)
    ckpt.unlink(missing_ok=True)
    print("done", json.dumps({k: stats[k] for k in ("seconds", "held_out")}), flush=True)
    return stats


if __name__ == "__main__":
    main()
