"""One training run: its plan (data, model config, steps), its state and the checkpoint that holds exactly that
state, the optimiser step on the twin's objective, and the loop with its curves, evaluations and time limit."""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from app.training.config import TrainConfig
from app.training.data import (
    SPECIALS,
    batch_at,
    encode_stream,
    held_out_windows,
    orders_at,
    special_ids,
    train_tokenizer,
)
from app.training.losses import ar_loss, diffusion_loss, held_out_loss, uniform_loss
from app.training.model import TorchTransformer, save_twin
from app.training.stories import joined_stats, load_orders, load_streams, read_stories, split_stories

if TYPE_CHECKING:
    from tokenizers import Tokenizer


def lr_at(step: int, steps: int, lr: float, warmup: int, time_done: float = 0.0) -> float:
    """Linear warm-up then cosine decay to a tenth, by steps or, when a run has a time limit, by the share of
    its time spent (`time_done`), whichever is further along, so a run stopped by the clock has decayed."""
    if step < warmup:
        return lr * (step + 1) / warmup
    p = max((step - warmup) / max(1, steps - warmup), time_done)
    return lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, p))))



# ---------------------------------------------------------------- a run's data and plan

@dataclass(frozen=True)
class Run:
    """What a run works from, fixed before its first step: its config, data, the twin's model config (written with
    its weights), where its steps start and end in the data order, and its peak learning rate."""

    cfg: TrainConfig
    device: torch.device
    tokens: np.ndarray  # the training stream and its story starts
    starts: np.ndarray
    orders: np.ndarray | None  # each token's decode step, with --order-frac
    val: torch.Tensor  # the held-out windows
    data: dict  # the training log's account of the data
    config: dict
    per_step: int
    first_step: int
    total_steps: int
    fork: int
    lr: float


def read_data(cfg: TrainConfig) -> tuple[dict, np.ndarray, np.ndarray, np.ndarray | None, torch.Tensor, Tokenizer]:
    """The stories split into training and held-out, the tokenizer (trained on the first run into --out), the
    training stream (the corpus, augmented, or --kd-data's streams) and the held-out one; returns (the log's account
    of the data, tokens, starts, orders, held-out windows, tokenizer)."""
    from tokenizers import Tokenizer

    train_s, val_s = split_stories(read_stories(list(cfg.corpus)), cfg.seed)
    tok_path = Path(cfg.out) / "tokenizer.json"
    if not tok_path.exists():
        train_tokenizer(train_s, tok_path, cfg.vocab)
    tok = Tokenizer.from_file(str(tok_path))
    eos_id = special_ids(tok)[0]
    if cfg.augment:
        from app.training.augment import augmented

        train_s = train_s + augmented(train_s, cfg.augment, cfg.seed)
    tokens, starts = encode_stream(tok, train_s, eos_id)
    distilled = orders = None
    if cfg.kd_data:
        tokens, starts, distilled = load_streams(list(cfg.kd_data))
        orders = load_orders(list(cfg.kd_data)) if cfg.order_frac else None
    val_tokens, val_starts = encode_stream(tok, val_s, eos_id)
    val = held_out_windows(val_tokens, val_starts, cfg.seq, cfg.seed, cfg.val_windows)
    data = {"files": [Path(p).name for p in cfg.corpus], "stories_train": len(train_s),
            "distilled": joined_stats(distilled) if distilled else None,
            "stories_held_out": len(val_s), "train_tokens": int(len(tokens)), "held_out_tokens": int(len(val_tokens))}
    return data, tokens, starts, orders, val, tok


def plan(cfg: TrainConfig) -> Run:
    """The run `cfg` asks for: its data, model config, steps (the AR twin's from 0, the diffusion twin's from the fork,
    --first-token's from there) and peak learning rate."""
    device = torch.device(cfg.device)
    data, tokens, starts, orders, val, tok = read_data(cfg)
    eos_id, mask_id, pad_id = special_ids(tok)
    config: dict[str, Any] = dict(
        vocab_size=tok.get_vocab_size(), n_layer=cfg.n_layer, n_head=cfg.n_head, n_embd=cfg.n_embd, max_len=cfg.seq,
        causal=cfg.twin == "ar", shift=True, mask_id=mask_id, eos_id=eos_id, pad_id=pad_id)
    if cfg.twin == "uniform":  # its noise is drawn from the ids after the specials, which must come first
        assert sorted((eos_id, mask_id, pad_id)) == list(range(len(SPECIALS)))
        config["noise"] = "uniform"
    per_step = cfg.batch * cfg.seq
    total_steps = max(2, cfg.tokens // per_step)
    fork = min(total_steps - 1, max(1, (cfg.fork_at // per_step) if cfg.fork_at else total_steps // 2))
    first_step = fork if cfg.twin == "diffusion" else 0
    if cfg.first_token is not None:
        first_step = min(cfg.first_token // per_step, total_steps - 1)
    return Run(cfg, device, tokens, starts, orders, val.to(device), data, config, per_step, first_step, total_steps,
               fork, cfg.lr or (2e-3 if cfg.twin == "ar" else 1e-3))


def steps_of(run: Run) -> int:
    """How many steps the run plans: from its first step to the end of the token budget."""
    return run.total_steps - run.first_step


def batch_of(run: Run, step: int) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Step `step`'s windows in the data order, with each position's decode step when the run has trajectories."""
    cfg = run.cfg
    x = batch_at(step, run.tokens, run.starts, cfg.batch, cfg.seq, cfg.seed, cfg.pad_frac, run.config["eos_id"])
    order = None if run.orders is None else orders_at(step, run.orders, run.starts, cfg.batch, cfg.seq, cfg.seed)
    return x.to(run.device), None if order is None else order.to(run.device)


def init_note(run: Run) -> tuple[str, dict | None]:
    """Where the weights started, in words for the log, and the training log of the run that made them (or None)."""
    if not run.cfg.init_from:
        return "random initialisation", None
    init_json = Path(run.cfg.init_from).with_suffix(".json")
    saved = json.loads(init_json.read_text()) if init_json.is_file() else {}
    previous = saved.get("training")
    kind = "the AR twin's" if saved.get("config", {}).get("causal", True) else "the diffusion twin's"
    name = Path(run.cfg.init_from).name
    note = (f"initialised from {kind} weights ({name})" if run.cfg.kd_data or not run.first_step else
            f"initialised from {kind} checkpoint after {run.first_step * run.per_step} tokens ({name})")
    return note + (f", which was {previous['init']}" if previous and previous.get("init") else ""), previous


# ---------------------------------------------------------------- the state a checkpoint holds

@dataclass
class TrainState:
    """Everything training changes, and nothing else: a checkpoint is exactly these fields (`save_state` and
    `load_state` walk them), so what is saved and what is restored cannot disagree. `torch_rng` is torch's own
    generator (dropout's masks); `seconds` the training time so far; `best`, with --keep-best, the held-out figure,
    step and weights of the best evaluation so far."""

    model: TorchTransformer
    opt: torch.optim.Optimizer
    gen: torch.Generator
    torch_rng: torch.Generator
    curve: list[dict] = field(default_factory=list)
    val_curve: list[dict] = field(default_factory=list)
    checkpoint_stats: dict | None = None  # the AR run's account of its fork, once passed
    done_steps: int = 0
    seconds: float = 0.0
    best: dict = field(default_factory=dict)


def new_state(run: Run) -> TrainState:
    """A fresh state: the model initialised by torch's seeded generator (or from --init-from's weights), AdamW with
    weight decay on matrices only, the masks' generator seeded."""
    cfg = run.cfg
    model = TorchTransformer(run.config["vocab_size"], cfg.n_layer, cfg.n_head, cfg.n_embd, cfg.seq, cfg.dropout)
    if cfg.init_from:
        from safetensors.numpy import load_file

        model.load_state_dict({k: torch.from_numpy(v.astype(np.float32)) for k, v in load_file(cfg.init_from).items()})
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=run.lr, betas=(0.9, 0.95))
    return TrainState(model, opt, torch.Generator(device=run.device).manual_seed(cfg.seed), torch.default_generator)


def save_state(state: TrainState, path: Path) -> None:
    """Writes every field of `state` to `path`: a module's or optimiser's state dict, a generator's state, a value."""
    def part(value: Any) -> Any:
        return value.get_state() if isinstance(value, torch.Generator) else (
            value.state_dict() if hasattr(value, "state_dict") else value)

    torch.save({f.name: part(getattr(state, f.name)) for f in fields(state)}, path)


def load_state(state: TrainState, path: Path) -> None:
    """Puts back into `state` every field `save_state` wrote to `path` (one a checkpoint lacks keeps its value)."""
    saved = torch.load(path, weights_only=False)
    for f in fields(state):
        value = getattr(state, f.name)
        if f.name not in saved:
            continue
        if isinstance(value, torch.Generator):
            value.set_state(saved[f.name])
        elif hasattr(value, "load_state_dict"):
            value.load_state_dict(saved[f.name])
        else:
            setattr(state, f.name, saved[f.name])


# ---------------------------------------------------------------- the step and the loop

def objective(run: Run, model: TorchTransformer, x: torch.Tensor, order: torch.Tensor | None,
              gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """The twin's training loss on one batch: (what the step descends, the unweighted cross-entropy it logs)."""
    cfg = run.cfg
    if cfg.twin == "ar":
        loss = ar_loss(model, x)
        return loss, loss
    if cfg.twin == "uniform":
        return uniform_loss(model, x, len(SPECIALS), gen, clean_weight=cfg.clean_weight, prefix_frac=cfg.prefix_frac,
                            block_frac=cfg.block_frac)
    return diffusion_loss(model, x, run.config["mask_id"], gen, prefix_frac=cfg.prefix_frac, block_frac=cfg.block_frac,
                          certainty=cfg.certainty, order=order, order_frac=cfg.order_frac)


def step(state: TrainState, run: Run, batch: tuple[torch.Tensor, torch.Tensor | None],
         lr: float) -> tuple[torch.Tensor, torch.Tensor]:
    """One optimiser step on `batch` at learning rate `lr` (bfloat16 autocast unless --no-bf16, gradients clipped to
    norm 1); returns the objective's (loss, cross-entropy)."""
    for group in state.opt.param_groups:
        group["lr"] = lr
    with torch.autocast(run.device.type, dtype=torch.bfloat16, enabled=not run.cfg.no_bf16):
        loss, ce = objective(run, state.model, *batch, state.gen)
    state.opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(state.model.parameters(), 1.0)
    state.opt.step()
    return loss, ce


def held_out(run: Run, state: TrainState) -> dict:
    """The twin's held-out figures now (`held_out_loss` on the run's held-out windows)."""
    return held_out_loss(state.model, run.val, run.cfg.twin, run.config["mask_id"], run.cfg.seed)


def record(run: Run, state: TrainState, i: int, loss: torch.Tensor, ce: torch.Tensor) -> None:
    """What follows step `i` of the run: a point of the loss curve, a held-out evaluation (and the best weights, with
    --keep-best), and at the fork the AR twin's checkpoint the diffusion twin starts from."""
    cfg, at, steps = run.cfg, run.first_step + i + 1, steps_of(run)
    if i % cfg.log_every == 0 or i == steps - 1:
        state.curve.append({"step": at, "tokens": at * run.per_step, "loss": round(loss.item(), 4),
                            "masked_ce": round(ce.item(), 4), "seconds": round(state.seconds, 1)})
        print(json.dumps(state.curve[-1]), flush=True)
    if (i + 1) % cfg.eval_every == 0 and i + 1 < steps:
        state.val_curve.append({"step": at, "tokens": at * run.per_step, **held_out(run, state)})
        print("held_out", json.dumps(state.val_curve[-1]), flush=True)
        figure = state.val_curve[-1].get("ce", state.val_curve[-1].get("nelbo_estimate"))
        if cfg.keep_best and figure < state.best.get("figure", math.inf):
            state.best = {"figure": figure, "step": at, "i": i + 1,
                          "state": {k: v.detach().clone() for k, v in state.model.state_dict().items()}}
    if cfg.twin == "ar" and at == run.fork:
        state.checkpoint_stats = {"tokens": run.fork * run.per_step, "seconds": round(state.seconds, 1),
                                  "held_out": held_out(run, state)}
        save_twin(state.model, Path(cfg.out), "ar_fork", run.config, state.checkpoint_stats)
        print("checkpoint", json.dumps(state.checkpoint_stats), flush=True)


def train(run: Run, state: TrainState, ckpt: Path) -> dict:
    """Steps `state` to the end of the run, saving it to `ckpt` every --checkpoint-every steps (a killed run loses at
    most that many); returns how it ended early: {"paused_at_step": n} (--pause-after), {"stopped_early": i}
    (--max-minutes), or {}."""
    cfg, steps, ended = run.cfg, steps_of(run), {}
    start = time.time() - state.seconds
    for i in range(state.done_steps, steps):
        state.seconds = time.time() - start
        if cfg.max_minutes is not None and state.seconds > 60 * cfg.max_minutes:
            print(f"stopped after {cfg.max_minutes} minutes at step {run.first_step + i}", flush=True)
            ended = {"stopped_early": i}
            break
        time_done = state.seconds / (60 * cfg.max_minutes) if cfg.max_minutes else 0.0
        lr = lr_at(i, steps, run.lr, warmup=max(1, min(30, steps // 10)), time_done=time_done)
        loss, ce = step(state, run, batch_of(run, run.first_step + i), lr)
        state.done_steps, state.seconds = i + 1, time.time() - start
        record(run, state, i, loss, ce)
        pause = cfg.pause_after is not None and i + 1 == cfg.pause_after and i + 1 < steps
        if pause or ((i + 1) % cfg.checkpoint_every == 0 and i + 1 < steps):
            state.seconds = time.time() - start
            save_state(state, ckpt)
        if pause:
            print(f"paused after step {i + 1 + run.first_step}; continue with --resume", flush=True)
            return {"paused_at_step": i + 1}
    state.seconds = time.time() - start
    return ended


def keep_best(run: Run, state: TrainState) -> int:
    """With --keep-best, puts back the best evaluation's weights when they beat the last; returns how many steps
    the weights to be written trained for."""
    best = state.best
    if not (run.cfg.keep_best and best):
        return state.done_steps
    last = held_out(run, state)
    last_figure = last.get("ce", last.get("nelbo_estimate"))
    if best["figure"] >= last_figure:
        return state.done_steps
    state.model.load_state_dict(best["state"])
    print(f"kept the best held-out weights, step {best['step']} ({best['figure']:.4f} < {last_figure:.4f})", flush=True)
    return best["i"]

