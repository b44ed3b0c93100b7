"""Trains the built-in twins (the one module that needs torch): `python -m app.training.train --twin ar|diffusion`.

Both twins share the architecture, tokenizer, data order and seed. The AR twin learns next-token
prediction and saves a checkpoint at the fork (halfway unless --fork-at says otherwise); the diffusion twin
starts from that checkpoint and spends the rest of the same token budget on the masked-diffusion objective with
bidirectional
attention and Dream's shifted logits (output i predicts token i+1), so both have seen the same tokens.
"""

# long: the model, its torch loss functions, the data stream and the training script (its declared config, its state
# with one save and one load, its step) are one torch module, so that nothing else in app/ imports torch.
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import subprocess
import time
import typing
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from app.engine.options import declared, option
from app.training.stories import (
    NEVER,
    PROMPT,
    SPLIT_SEED,
    command_line,
    joined_stats,
    load_orders,
    load_streams,
    read_stories,
    split_stories,
)

if TYPE_CHECKING:
    from tokenizers import Tokenizer

SPECIALS = ["<|endoftext|>", "<|mask|>", "<|pad|>"]
DEFAULT_OUT = Path(__file__).resolve().parents[2] / "assets" / "models"


# ---------------------------------------------------------------- data

def train_tokenizer(stories: list[str], path: Path, vocab_size: int = 4096) -> None:
    """Byte-level BPE with end-of-text, mask and pad tokens, saved as a `tokenizers` JSON."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIALS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(stories, trainer=trainer)
    path.parent.mkdir(parents=True, exist_ok=True)
    tok.save(str(path))


def encode_stream(tok, stories: list[str], eos_id: int) -> tuple[np.ndarray, np.ndarray]:
    """All stories as one token stream, each followed by end-of-text; returns (tokens, story starts)."""
    ids: list[int] = []
    starts: list[int] = []
    for enc in tok.encode_batch(stories):
        starts.append(len(ids))
        ids.extend(enc.ids)
        ids.append(eos_id)
    return np.array(ids, dtype=np.int64), np.array(starts, dtype=np.int64)


def _picks(step: int, starts: np.ndarray, batch: int, seed: int) -> tuple[np.random.Generator, np.ndarray]:
    """Which stories `step`'s windows open on (indices into `starts`), drawn from (seed, step) alone, and the generator
    after that draw (batch_at draws its padding from it next)."""
    rng = np.random.default_rng([seed, step])
    return rng, rng.integers(0, len(starts), size=batch)


def batch_at(step: int, tokens: np.ndarray, starts: np.ndarray, batch: int, seq: int, seed: int,
             pad_frac: float = 0.0, eos_id: int = 0) -> torch.Tensor:
    """The batch for `step`: windows that open with the end-of-text token just before a story
    (it doubles as the beginning-of-sequence token the engine prepends), chosen by (seed, step)
    alone so that both twins see exactly the same data in the same order.

    With `pad_frac`, that share of the windows holds one story and then end-of-text to the end (as in
    LLaDA's fine-tuning), so a model learns that a finished story is followed by end-of-text only;
    packed windows teach it that a new story follows, and a diffusion model then never ends."""
    rng, pick = _picks(step, starts, batch, seed)
    picks = starts[pick]
    wrapped = np.concatenate([tokens[-1:], tokens, tokens[:seq]])
    rows = np.stack([wrapped[p : p + seq] for p in picks])
    if pad_frac > 0:  # drawn after the picks, so the windows themselves do not depend on pad_frac
        for row, padded in zip(rows, rng.random(batch) < pad_frac):
            ends = np.flatnonzero(row[1:] == eos_id)
            if padded and len(ends):
                row[ends[0] + 2 :] = eos_id
    return torch.from_numpy(rows)


def orders_at(step: int, orders: np.ndarray, starts: np.ndarray, batch: int, seq: int, seed: int) -> torch.Tensor:
    """The decode step of each position of `batch_at`'s windows for the same step (the same picks): stories.PROMPT
    for the end-of-text before the story and its opening, the step that wrote each answer token, stories.NEVER after
    the story (where `batch_at` packs the next story or pads)."""
    _, pick = _picks(step, starts, batch, seed)
    ends = np.append(starts[1:], len(orders))
    rows = np.full((batch, seq), NEVER, dtype=np.int64)
    rows[:, 0] = PROMPT
    for row, k in zip(rows, pick):
        story = orders[starts[k] : min(ends[k], starts[k] + seq - 1)]
        row[1 : 1 + len(story)] = story
    return torch.from_numpy(rows)


def special_ids(tok: Any) -> tuple[int, int, int]:
    """The end-of-text, mask and padding ids of a tokenizer `train_tokenizer` made (it holds each of SPECIALS)."""
    eos_id, mask_id, pad_id = (int(tok.token_to_id(s)) for s in SPECIALS)
    return eos_id, mask_id, pad_id


def held_out_windows(tokens: np.ndarray, starts: np.ndarray, seq: int, seed: int, n: int) -> torch.Tensor:
    """The `n` held-out windows every evaluation reads (one story each, drawn with seed + 1), so that training and a
    twin made otherwise (app/training/average.py) are judged on the same text."""
    return torch.stack([batch_at(i, tokens, starts, 1, seq, seed + 1)[0] for i in range(n)])


# ---------------------------------------------------------------- model

class Block(nn.Module):
    def __init__(self, n_embd: int, n_head: int, dropout: float = 0.0):
        super().__init__()
        self.n_head = n_head
        self.drop = nn.Dropout(dropout)
        self.ln1 = nn.LayerNorm(n_embd)
        self.qkv = nn.Linear(n_embd, 3 * n_embd)
        self.proj = nn.Linear(n_embd, n_embd)
        self.ln2 = nn.LayerNorm(n_embd)
        self.fc = nn.Linear(n_embd, 4 * n_embd)
        self.fc_proj = nn.Linear(4 * n_embd, n_embd)

    def forward(self, x: torch.Tensor, causal: bool) -> torch.Tensor:
        B, T, C = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
        shape = (B, T, self.n_head, C // self.n_head)
        q, k, v = (t.view(shape).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        x = x + self.drop(self.proj(y.transpose(1, 2).reshape(B, T, C)))
        return x + self.drop(self.fc_proj(F.gelu(self.fc(self.ln2(x)), approximate="tanh")))


class TorchTransformer(nn.Module):
    """The twins' shared architecture: pre-norm GPT blocks, learned positions, tied embeddings."""

    def __init__(self, vocab_size: int, n_layer: int, n_head: int, n_embd: int, max_len: int, dropout: float = 0.0):
        super().__init__()
        self.wte = nn.Embedding(vocab_size, n_embd)
        self.wpe = nn.Embedding(max_len, n_embd)
        self.drop = nn.Dropout(dropout)
        self.h = nn.ModuleList(Block(n_embd, n_head, dropout) for _ in range(n_layer))
        self.ln_f = nn.LayerNorm(n_embd)
        self.apply(self._init)
        for name, p in self.named_parameters():
            if name.endswith("proj.weight"):
                nn.init.normal_(p, std=0.02 / math.sqrt(2 * n_layer))

    @staticmethod
    def _init(m: nn.Module) -> None:
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, std=0.02)
        if isinstance(m, nn.Linear) and m.bias is not None:
            nn.init.zeros_(m.bias)

    def forward(self, ids: torch.Tensor, causal: bool) -> torch.Tensor:
        x = self.drop(self.wte(ids) + self.wpe(torch.arange(ids.shape[1], device=ids.device)))
        for block in self.h:
            x = block(x, causal)
        return self.ln_f(x) @ self.wte.weight.T


def export_state(model: TorchTransformer) -> dict[str, np.ndarray]:
    """The weights under the names the numpy engine reads (tied head: only `wte.weight`)."""
    return {k: v.detach().float().cpu().numpy() for k, v in model.state_dict().items()}


def torch_forward(weights: dict[str, np.ndarray], config, ids: np.ndarray) -> np.ndarray:
    """Reference forward in plain torch eager on numpy weights: (T,) ids -> (T, V) raw logits
    (unshifted: row i is the model's output at position i). Used by the parity test and the bench."""
    model = TorchTransformer(config.vocab_size, config.n_layer, config.n_head, config.n_embd, config.max_len)
    model.load_state_dict({k: torch.from_numpy(np.asarray(v, dtype=np.float32)) for k, v in weights.items()})
    model.eval()
    with torch.no_grad():
        out = model(torch.from_numpy(np.asarray(ids, dtype=np.int64))[None], config.causal)
    return out[0].numpy()


# ---------------------------------------------------------------- objectives

def ar_loss(model: TorchTransformer, x: torch.Tensor) -> torch.Tensor:
    """Next-token cross-entropy."""
    logits = model(x[:, :-1], causal=True)
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), x[:, 1:].reshape(-1))


def block_spans(B: int, gen: torch.Generator, frac: float, blocks: tuple[int, ...], T: int
                ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Where a block sampler is, for `frac` of B rows: a clean prefix of random length, one block (a length from
    `blocks`) and everything after it. Returns (rows laid out so, in the block, after the block, block length per
    row); both the masked and the uniform twin's layouts draw these first, in this order."""
    rows = torch.rand(B, generator=gen) < frac
    size = torch.tensor(blocks)[torch.randint(0, len(blocks), (B,), generator=gen)]
    lo = 1 + (torch.rand(B, generator=gen) * (T - size).clamp(min=1)).long()
    pos = torch.arange(T)[None, :]
    in_block = (pos >= lo[:, None]) & (pos < (lo + size)[:, None])
    return rows, in_block, pos >= (lo + size)[:, None], size.float()


def block_layout(t: torch.Tensor, gen: torch.Generator, frac: float, blocks: tuple[int, ...], T: int
                 ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """The block sampler's view (block diffusion, BD3-LM) for `frac` of the rows (`block_spans`): the block masked
    with the row's probability t, everything after it masked; the loss on the block's masked positions. Returns
    (rows laid out so, masked, scored, block length per row)."""
    layout, in_block, after, size = block_spans(len(t), gen, frac, blocks, T)
    block_masked = (torch.rand(len(t), T, generator=gen) < t[:, None]) & in_block
    return layout, block_masked | after, block_masked, size


def trajectory_layout(order: torch.Tensor, gen: torch.Generator, frac: float, block: int
                      ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """States the sampler itself passed through (dParallel's "follow its original sampling trajectories"; TRIMS's
    trajectory-aware masking): for `frac` of the rows that have a trajectory, a step s is drawn among the decode's
    steps, the tokens written by step s are clean and the rest masked, and the loss is on the masked positions of the
    block the sampler was writing next (`block` answer positions wide), the only ones it commits from. Returns (rows
    laid out so, masked, scored, scored positions per row)."""
    B, T = order.shape
    answer = (order >= 0) & (order < NEVER)
    use = answer.any(dim=1) & (torch.rand(B, generator=gen) < frac)
    last = torch.where(answer, order, torch.zeros_like(order)).max(dim=1).values
    s = (torch.rand(B, generator=gen) * last).long()  # steps done: 0 .. last - 1, so something is left to write
    masked = order > s[:, None]
    nxt = torch.where(masked & answer, order, torch.full_like(order, NEVER)).argmin(dim=1)  # written at step s + 1
    first = answer.float().argmax(dim=1)
    lo = first + (nxt - first) // block * block
    pos = torch.arange(T)[None, :]
    scored = masked & answer & (pos >= lo[:, None]) & (pos < (lo + block)[:, None])
    return use, masked & use[:, None], scored & use[:, None], scored.sum(dim=1).float().clamp(min=1)


def diffusion_loss(
    model: TorchTransformer, x: torch.Tensor, mask_id: int, gen: torch.Generator,
    t: torch.Tensor | None = None, max_weight: float = 10.0, prefix_frac: float = 0.0,
    block_frac: float = 0.0, blocks: tuple[int, ...] = (16, 32), certainty: float = 0.0,
    order: torch.Tensor | None = None, order_frac: float = 0.0, order_block: int = 16,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Masked-diffusion loss (MDLM/LLaDA): mask each position 1..T-1 with probability t (one t per
    sequence, stratified across the batch unless given), cross-entropy on masked positions weighted
    by min(1/t, max_weight), averaged over all positions. Outputs are Dream-shifted: the output at
    i-1 predicts the token at i. With `prefix_frac`, that share of the sequences keeps a random-length
    prefix clean (LLaDA's prompt/answer split), the situation the samplers create: a clean prompt and
    settled text on the left, masks on the right.

    With `block_frac`, that share of the sequences is laid out exactly as the block sampler sees them
    (`block_layout`); their loss is on the block's masked positions only, averaged over the block, since those are
    the only positions the sampler commits from.
    With `certainty` (dParallel's certainty forcing), the loss adds that weight times the mean entropy of the
    sharpened prediction (softmax of logits / 0.5) at the scored positions the model already gets right, so it
    becomes sure of them sooner, several at a time, and a confidence threshold commits them together.
    With `order` (each position's decode step, `orders_at`) and `order_frac`, that share of the rows with a
    trajectory is laid out as a state of it instead (`trajectory_layout`), its loss the mean over the scored block.
    Returns (weighted loss, mean unweighted CE on masked tokens)."""
    B, T = x.shape
    if t is None:
        u = torch.rand(1, generator=gen)
        t = ((torch.arange(B) + u) / B).clamp(min=1e-3)
    masked = torch.rand(B, T, generator=gen) < t[:, None]
    masked[:, 0] = False
    if prefix_frac > 0:
        keep = torch.rand(B, generator=gen) < prefix_frac
        cut = torch.randint(1, T - 1, (B,), generator=gen)
        masked &= ~(keep[:, None] & (torch.arange(T)[None, :] < cut[:, None]))
    scored = masked.clone()
    per_row = torch.full((B,), float(T - 1))
    weight = (1.0 / t).clamp(max=max_weight)[:, None].expand(B, 1)
    layouts = [(*block_layout(t, gen, block_frac, blocks, T), False)] if block_frac > 0 else []
    if order is not None and order_frac > 0:  # the trajectory's rows override the block layout's
        layouts.append((*trajectory_layout(order, gen, order_frac, order_block), True))
    for rows, rows_masked, rows_scored, count, plain_mean in layouts:
        masked = torch.where(rows[:, None], rows_masked, masked)
        scored = torch.where(rows[:, None], rows_scored, scored)
        per_row = torch.where(rows, count, per_row)
        if plain_mean:  # a state of a trajectory: its loss is the mean over the scored block, whatever share is masked
            weight = torch.where(rows[:, None], torch.ones_like(weight), weight)
    noisy = torch.where(masked, torch.full_like(x, mask_id), x)
    logits = model(noisy, causal=False)[:, :-1]
    ce = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), x[:, 1:].reshape(-1), reduction="none").view(B, T - 1)
    m = scored[:, 1:].float()
    loss = ((ce * m * weight).sum(dim=1) / per_row).mean()
    if certainty > 0:
        right = (logits.argmax(dim=-1) == x[:, 1:]).float() * m
        logp = F.log_softmax(logits.float() / 0.5, dim=-1)
        entropy = -(logp.exp() * logp).sum(dim=-1)
        loss = loss + certainty * (entropy * right).sum() / right.sum().clamp(min=1)
    return loss, (ce * m).sum() / m.sum().clamp(min=1)


def uniform_loss(
    model: TorchTransformer, x: torch.Tensor, n_special: int, gen: torch.Generator,
    t: torch.Tensor | None = None, max_weight: float = 10.0, clean_weight: float = 0.1, prefix_frac: float = 0.0,
    block_frac: float = 0.0, blocks: tuple[int, ...] = (16, 32),
) -> tuple[torch.Tensor, torch.Tensor]:
    """Uniform-state diffusion (the forward process of UDLM, Schiff et al. 2024, and DUO, Sahoo et al. 2025): each
    position 1..T-1 is replaced with probability t (one t per sequence, stratified across the batch unless given) by
    a token drawn uniformly from the ordinary tokens (ids n_special..V-1: never end-of-text, mask or pad, though
    end-of-text positions are noised and predicted like any other), with bidirectional attention and Dream's shift
    (the output at i-1 predicts the token at i). Not their ELBO: a plain clean-token (x0) cross-entropy at every
    noised position weighted min(1/t, max_weight), plus `clean_weight` times it at the noised region's positions the
    draw left clean (the model cannot tell which they are), averaged over positions. With `prefix_frac`, that share
    of the rows keeps a clean prefix of random length; with `block_frac`, that share is laid out as the uniform block
    sampler sees it (`block_spans`: the block noised at rate t, everything after it noise; loss on the block,
    averaged over it). Returns (weighted loss, mean unweighted CE at noised positions)."""
    B, T = x.shape
    V = model.wte.num_embeddings
    if t is None:
        u = torch.rand(1, generator=gen)
        t = ((torch.arange(B) + u) / B).clamp(min=1e-3)
    pos = torch.arange(T)[None, :]
    region = (pos >= 1).expand(B, T)
    if prefix_frac > 0:
        keep = torch.rand(B, generator=gen) < prefix_frac
        cut = torch.randint(1, T - 1, (B,), generator=gen)
        region = region & ~(keep[:, None] & (pos < cut[:, None]))
    draw = torch.rand(B, T, generator=gen) < t[:, None]
    noised = draw & region
    per_row = torch.full((B,), float(T - 1))
    if block_frac > 0:
        rows, in_block, after, size = block_spans(B, gen, block_frac, blocks, T)
        region = torch.where(rows[:, None], in_block, region)
        noised = torch.where(rows[:, None], (draw & in_block) | after, noised)
        per_row = torch.where(rows, size, per_row)
    noise = torch.randint(n_special, V, (B, T), generator=gen)
    logits = model(torch.where(noised, noise, x), causal=False)[:, :-1]
    ce = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), x[:, 1:].reshape(-1), reduction="none").view(B, T - 1)
    hit = (noised & region)[:, 1:].float()
    weight = (1.0 / t).clamp(max=max_weight)[:, None] * hit + clean_weight * (region & ~noised)[:, 1:].float()
    loss = ((ce * weight).sum(dim=1) / per_row).mean()
    return loss, (ce * hit).sum() / hit.sum().clamp(min=1)


@torch.no_grad()
def held_out_loss(model: TorchTransformer, val: torch.Tensor, twin: str, mask_id: int, seed: int) -> dict:
    """AR: mean next-token CE. Uniform: mean CE at the noised positions at fixed ratios t. Diffusion: mean CE on
    masked tokens at fixed ratios t, plus the average over t of the 1/t-weighted loss (an estimate of the negative
    ELBO per token, in nats)."""
    model.eval()
    out: dict = {}
    if twin == "ar":
        out["ce"] = float(sum(ar_loss(model, v[None]) for v in val) / len(val))
    elif twin == "uniform":  # mean CE at the noised positions at fixed t, and their mean over t
        gen = torch.Generator(device=val.device).manual_seed(seed)
        for t in (0.15, 0.3, 0.5, 0.7, 0.85):
            ces = [float(uniform_loss(model, chunk, len(SPECIALS), gen, t=torch.full((len(chunk),), t))[1])
                   for chunk in val.split(16)]
            out[f"noised_ce@t={t}"] = sum(ces) / len(ces)
        out["noised_ce_mean"] = sum(out.values()) / len(out)
    else:
        gen = torch.Generator(device=val.device).manual_seed(seed)
        ts = [0.15, 0.3, 0.5, 0.7, 0.85]
        elbo = 0.0
        for t in ts:
            ces, ws = [], []
            for chunk in val.split(16):
                w, ce = diffusion_loss(model, chunk, mask_id, gen, t=torch.full((len(chunk),), t), max_weight=1e9)
                ces.append(float(ce))
                ws.append(float(w))
            out[f"masked_ce@t={t}"] = sum(ces) / len(ces)
            elbo += sum(ws) / len(ws)
        out["nelbo_estimate"] = elbo / len(ts)
    model.train()
    return out


# ---------------------------------------------------------------- run

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


def save_twin(model: TorchTransformer, out: Path, twin: str, config: dict, stats: dict) -> None:
    """Writes `<twin>.safetensors` (float16) and `<twin>.json` (config + training stats)."""
    from safetensors.numpy import save_file

    out.mkdir(parents=True, exist_ok=True)
    tensors = {k: v.astype(np.float16) for k, v in export_state(model).items()}
    save_file(tensors, str(out / f"{twin}.safetensors"), metadata={"config": json.dumps(config)})
    (out / f"{twin}.json").write_text(json.dumps({"config": config, "training": stats}, indent=1) + "\n")


def lr_at(step: int, steps: int, lr: float, warmup: int, time_done: float = 0.0) -> float:
    """Linear warm-up then cosine decay to a tenth, by steps or, when a run has a time limit, by the share of
    its time spent (`time_done`), whichever is further along, so a run stopped by the clock has decayed."""
    if step < warmup:
        return lr * (step + 1) / warmup
    p = max((step - warmup) / max(1, steps - warmup), time_done)
    return lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, p))))


# long: one training run's state (model, optimiser, generator, loss curves, best weights, checkpoint) is set up,
# restored on --resume, stepped and summarised here in that order, and a checkpoint must hold every piece of it


# ---------------------------------------------------------------- config

@dataclass(frozen=True)
class TrainConfig:
    """Every flag of `python -m app.training.train`, declared once (name, type, default, help); the parser is derived
    from the declaration (`parse_config`), so a flag and its field cannot disagree."""

    twin: str = option(MISSING, "Twin", choices=("ar", "diffusion", "uniform"), help="which twin to train")
    corpus: tuple[str, ...] = option(MISSING, "Corpus", help="plain-text files of stories")
    out: str = option(str(DEFAULT_OUT), "Output folder", help="folder for weights, config and tokenizer")
    tokens: int = option(2_000_000, "Token budget", help="total token budget N (AR trains N; diffusion trains from "
                         "the fork to N)")
    fork_at: int | None = option(None, "Fork", help="tokens into the run where the AR twin saves the checkpoint the "
                                 "diffusion twin starts from, and where the diffusion run starts (default N/2)")
    init_from: str | None = option(None, "Initial weights", help="weights (safetensors) to start from: for "
                                   "diffusion, the AR checkpoint at the fork (ar_fork.safetensors), or a checkpoint "
                                   "to continue")
    first_token: int | None = option(None, "First token", help="where in the data order this run starts (default 0 "
                                     "for AR, the fork for diffusion)")
    batch: int = option(16, "Batch", help="windows per step")
    seq: int = option(321, "Window", help="positions per window, including the leading end-of-text token")
    n_layer: int = option(4, "Layers")
    n_head: int = option(4, "Heads")
    n_embd: int = option(256, "Width")
    vocab: int = option(4096, "Vocabulary", help="size of the BPE vocabulary trained when --out has no tokenizer")
    lr: float | None = option(None, "Learning rate", help="peak learning rate (default 2e-3 AR, 1e-3 diffusion)")
    seed: int = option(SPLIT_SEED, "Seed", help="the held-out split, the data order, the initialisation and masks")
    threads: int = option(2, "Threads")
    log_every: int = option(10, "Log every", help="steps between points of the loss curve")
    eval_every: int = option(250, "Evaluate every", help="steps between held-out evaluations")
    dropout: float = option(0.1, "Dropout")
    prefix_frac: float = option(0.5, "Clean prefixes", help="diffusion: share of sequences with a clean prefix of "
                                "random length")
    block_frac: float = option(0.0, "Block layouts", help="diffusion: share of sequences laid out as the block "
                               "sampler sees them (clean prefix, one block masked at rate t, everything after masked)")
    clean_weight: float = option(0.1, "Clean weight", help="uniform: weight of the cross-entropy at the positions of "
                                 "the noised region that the draw left clean (noised positions weigh min(1/t, 10))")
    certainty: float = option(0.0, "Certainty forcing", help="diffusion: weight of dParallel's certainty forcing "
                              "(entropy of the sharpened prediction at masked positions the model gets right)")
    order_frac: float = option(0.0, "Trajectory layouts", help="diffusion, with --kd-data from self_distill: share of "
                               "its stories laid out as a state of the decode that wrote them (the trajectory it kept)")
    pad_frac: float = option(0.0, "Padded windows", help="share of windows holding one story then end-of-text padding "
                             "(teaches the twins to end)")
    no_bf16: bool = option(False, "No bfloat16", help="train in float32 instead of bfloat16 autocast")
    val_windows: int = option(64, "Held-out windows", help="held-out windows each evaluation reads")
    kd_data: tuple[str, ...] | None = option(None, "Distilled data", help="train on these token streams (.npz from "
                                             "app.training.distill or self_distill: a teacher's stories, joined in "
                                             "order) instead of the corpus, which still gives the tokenizer and the "
                                             "held-out stories")
    checkpoint_every: int = option(200, "Checkpoint every", help="steps between resumable checkpoints (<twin>.ckpt.pt "
                                   "in --out)")
    pause_after: int | None = option(None, "Pause after", help="save a checkpoint after this many steps of the run "
                                     "and stop without writing the twin (continue later with --resume)")
    resume: bool = option(False, "Resume", help="continue from <twin>.ckpt.pt in --out, as if never stopped")
    finish: bool = option(False, "Finish", help="with --resume: write the twin from the checkpoint as it is (a run "
                          "stopped early: its steps, tokens and seconds are the checkpoint's)")
    augment: int = option(0, "Augmented copies", help="add this many copies of the training stories with their "
                          "names, animals, colours, objects and places swapped consistently (app/training/augment.py)")
    keep_best: bool = option(False, "Keep the best", help="write the weights of the best held-out evaluation, not the "
                             "last (early stopping for a model that starts to memorise)")
    max_minutes: float | None = option(None, "Time limit", help="stop training after this many minutes and write the "
                                       "twin as it is then (its log says how many tokens it saw)")
    device: str = option("cpu", "Device", help="cpu or cuda[:N]: on a GPU, tensors and the generator live there")


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
