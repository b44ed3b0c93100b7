"""Trains the built-in twins (the one module that needs torch): `python -m app.engine.train --twin ar|diffusion`.

Both twins share the architecture, tokenizer, data order and seed. The AR twin learns next-token
prediction and saves a checkpoint at the fork (halfway unless --fork-at says otherwise); the diffusion twin
starts from that checkpoint and spends the rest of the same token budget on the masked-diffusion objective with
bidirectional
attention and Dream's shifted logits (output i predicts token i+1), so both have seen the same tokens.
"""

# long: the model, its torch loss functions, the data stream and the training script with its resumable checkpoints
# are one torch module, so that nothing else in app/ imports torch; over 500 lines for that reason.
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import subprocess
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from app.engine.stories import (
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


def special_ids(tok: Any) -> tuple[int, int, int]:
    """The end-of-text, mask and padding ids of a tokenizer `train_tokenizer` made (it holds each of SPECIALS)."""
    eos_id, mask_id, pad_id = (tok.token_to_id(s) for s in SPECIALS)
    return eos_id, mask_id, pad_id


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


def held_out_windows(tokens: np.ndarray, starts: np.ndarray, seq: int, seed: int, n: int) -> torch.Tensor:
    """The `n` held-out windows every evaluation reads (one story each, drawn with seed + 1), so that training and a
    twin made otherwise (app/engine/average.py) are judged on the same text."""
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


def uniform_objective(args: argparse.Namespace) -> str:
    """The uniform twin's objective in words, for its training log."""
    return (f"uniform-state diffusion (UDLM/DUO's forward process: each position replaced with probability t by a "
            f"uniformly drawn ordinary token), stratified t per sequence, bidirectional, Dream shift; not their ELBO "
            f"but clean-token cross-entropy at noised positions weighted min(1/t, 10) plus {args.clean_weight} x it "
            f"at the noised region's positions left clean; {args.prefix_frac:.0%} of sequences keep a clean prefix "
            f"of random length" + (f"; {args.block_frac:.0%} laid out as the uniform block sampler sees them (clean "
            "prefix, a block of 16 or 32 noised at rate t, everything after it noise; loss on the block)"
            if args.block_frac else ""))


def lr_at(step: int, steps: int, lr: float, warmup: int, time_done: float = 0.0) -> float:
    """Linear warm-up then cosine decay to a tenth, by steps or, when a run has a time limit, by the share of
    its time spent (`time_done`), whichever is further along, so a run stopped by the clock has decayed."""
    if step < warmup:
        return lr * (step + 1) / warmup
    p = max((step - warmup) / max(1, steps - warmup), time_done)
    return lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, p))))


# long: one training run's state (model, optimiser, generator, loss curves, best weights, checkpoint) is set up,
# restored on --resume, stepped and summarised here in that order, and a checkpoint must hold every piece of it
def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--twin", choices=["ar", "diffusion", "uniform"], required=True)
    ap.add_argument("--corpus", nargs="+", required=True, help="plain-text files of stories")
    ap.add_argument("--out", default=str(DEFAULT_OUT), help="folder for weights, config and tokenizer")
    ap.add_argument("--tokens", type=int, default=2_000_000,
                    help="total token budget N (AR trains N; diffusion trains from the fork to N)")
    ap.add_argument("--fork-at", type=int, default=None,
                    help="tokens into the run where the AR twin saves the checkpoint the diffusion twin starts from, "
                         "and where the diffusion run starts (default N/2)")
    ap.add_argument("--init-from", default=None,
                    help="weights (safetensors) to start from: for diffusion, the AR checkpoint at the fork "
                         "(ar_fork.safetensors), or a checkpoint to continue")
    ap.add_argument("--first-token", type=int, default=None,
                    help="where in the data order this run starts (default 0 for AR, the fork for diffusion)")
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--seq", type=int, default=321,
                    help="positions per window, including the leading end-of-text token")
    ap.add_argument("--n-layer", type=int, default=4)
    ap.add_argument("--n-head", type=int, default=4)
    ap.add_argument("--n-embd", type=int, default=256)
    ap.add_argument("--vocab", type=int, default=4096)
    ap.add_argument("--lr", type=float, default=None, help="peak learning rate (default 2e-3 AR, 1e-3 diffusion)")
    ap.add_argument("--seed", type=int, default=SPLIT_SEED)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--log-every", type=int, default=10)
    ap.add_argument("--eval-every", type=int, default=250, help="steps between held-out evaluations")
    ap.add_argument("--dropout", type=float, default=0.1)
    ap.add_argument("--prefix-frac", type=float, default=0.5,
                    help="diffusion: share of sequences with a clean prefix of random length")
    ap.add_argument("--block-frac", type=float, default=0.0, help="diffusion: share of sequences laid out as the block "
                    "sampler sees them (clean prefix, one block masked at rate t, everything after masked)")
    ap.add_argument("--clean-weight", type=float, default=0.1, help="uniform: weight of the cross-entropy at the "
                    "positions of the noised region that the draw left clean (noised positions weigh min(1/t, 10))")
    ap.add_argument("--certainty", type=float, default=0.0, help="diffusion: weight of dParallel's certainty forcing "
                    "(entropy of the sharpened prediction at masked positions the model gets right)")
    ap.add_argument("--order-frac", type=float, default=0.0, help="diffusion, with --kd-data from self_distill: "
                    "share of its stories laid out as a state of the decode that wrote them (the trajectory it kept)")
    ap.add_argument("--pad-frac", type=float, default=0.0,
                    help="share of windows holding one story then end-of-text padding (teaches the twins to end)")
    ap.add_argument("--no-bf16", action="store_true", help="train in float32 instead of bfloat16 autocast")
    ap.add_argument("--val-windows", type=int, default=64)
    ap.add_argument("--kd-data", nargs="+", default=None,
                    help="train on these token streams (.npz from app.engine.distill or self_distill: a teacher's "
                    "stories, joined in order) instead of the corpus, which still gives the tokenizer and the "
                    "held-out stories")
    ap.add_argument("--checkpoint-every", type=int, default=200,
                    help="steps between resumable checkpoints (<twin>.ckpt.pt in --out)")
    ap.add_argument("--pause-after", type=int, default=None, help="save a checkpoint after this many steps of the run "
                    "and stop without writing the twin (continue later with --resume)")
    ap.add_argument("--resume", action="store_true", help="continue from <twin>.ckpt.pt in --out, as if never stopped")
    ap.add_argument("--finish", action="store_true", help="with --resume: write the twin from the checkpoint as it is "
                    "(a run stopped early: its steps, tokens and seconds are the checkpoint's)")
    ap.add_argument("--augment", type=int, default=0, help="add this many copies of the training stories with their "
                    "names, animals, colours, objects and places swapped consistently (app/engine/augment.py)")
    ap.add_argument("--keep-best", action="store_true", help="write the weights of the best held-out evaluation, "
                    "not the last (early stopping for a model that starts to memorise)")
    ap.add_argument("--max-minutes", type=float, default=None, help="stop training after this many minutes and "
                    "write the twin as it is then (its log says how many tokens it saw)")
    ap.add_argument("--device", default="cpu", help="cpu or cuda[:N]: on a GPU, tensors and the generator live there")
    args = ap.parse_args(argv)
    command = command_line("app.engine.train", argv)

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    device = torch.device(args.device)
    if device.type != "cpu":  # the model, the masks and the generator's draws all live on the accelerator
        torch.set_default_device(device)
    out = Path(args.out)
    t0 = time.time()

    stories = read_stories(args.corpus)
    train_s, val_s = split_stories(stories, args.seed)
    tok_path = out / "tokenizer.json"
    if not tok_path.exists():
        train_tokenizer(train_s, tok_path, args.vocab)
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(tok_path))
    eos_id, mask_id, pad_id = special_ids(tok)
    if args.augment:
        from app.engine.augment import augmented

        train_s = train_s + augmented(train_s, args.augment, args.seed)
    tokens, starts = encode_stream(tok, train_s, eos_id)
    distilled = orders = None
    if args.kd_data:
        tokens, starts, distilled = load_streams(args.kd_data)
        orders = load_orders(args.kd_data) if args.order_frac else None
    val_tokens, val_starts = encode_stream(tok, val_s, eos_id)
    val = held_out_windows(val_tokens, val_starts, args.seq, args.seed, args.val_windows).to(device)

    config = dict(
        vocab_size=tok.get_vocab_size(), n_layer=args.n_layer, n_head=args.n_head, n_embd=args.n_embd,
        max_len=args.seq, causal=args.twin == "ar", shift=True, mask_id=mask_id, eos_id=eos_id, pad_id=pad_id,
    )
    if args.twin == "uniform":  # its noise is drawn from the ids after the specials, which must come first
        assert sorted((eos_id, mask_id, pad_id)) == list(range(len(SPECIALS)))
        config["noise"] = "uniform"
    model = TorchTransformer(config["vocab_size"], args.n_layer, args.n_head, args.n_embd, args.seq, args.dropout)
    per_step = args.batch * args.seq
    total_steps = max(2, args.tokens // per_step)
    fork = min(total_steps - 1, max(1, (args.fork_at // per_step) if args.fork_at else total_steps // 2))
    first_step = 0
    init_note = "random initialisation"
    previous = None
    if args.twin == "diffusion":
        first_step = fork
    if args.first_token is not None:
        first_step = min(args.first_token // per_step, total_steps - 1)
    if args.init_from:
        from safetensors.numpy import load_file

        state = {k: torch.from_numpy(v.astype(np.float32)) for k, v in load_file(args.init_from).items()}
        model.load_state_dict(state)
        init_json = Path(args.init_from).with_suffix(".json")
        previous = json.loads(init_json.read_text()).get("training") if init_json.is_file() else None
        was = json.loads(init_json.read_text())["config"].get("causal", True) if init_json.is_file() else True
        kind = "the AR twin's" if was else "the diffusion twin's"
        init_note = (f"initialised from {kind} weights ({Path(args.init_from).name})"
                     if args.kd_data or not first_step else
                     f"initialised from {kind} checkpoint after {first_step * per_step} tokens "
                     f"({Path(args.init_from).name})")
        if previous and previous.get("init"):
            init_note += f", which was {previous['init']}"
    steps = total_steps - first_step
    lr = args.lr or (2e-3 if args.twin == "ar" else 1e-3)
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=lr, betas=(0.9, 0.95))
    gen = torch.Generator(device=device).manual_seed(args.seed)
    best: dict = {}  # with --keep-best: the held-out figure, step and weights of the best evaluation so far
    n_params = sum(p.numel() for p in model.parameters())
    print(f"{args.twin}: {n_params} params, {len(tokens)} train tokens, {len(val_tokens)} held-out tokens, "
          f"steps {first_step}..{total_steps} of {per_step} tokens", flush=True)

    curve: list[dict] = []
    val_curve: list[dict] = []
    checkpoint_stats = None
    ckpt_path = out / f"{args.twin}.ckpt.pt"
    done_steps, earlier_seconds = 0, 0.0
    if args.resume and ckpt_path.is_file():
        ckpt = torch.load(ckpt_path, weights_only=False)
        model.load_state_dict(ckpt["model"])
        opt.load_state_dict(ckpt["opt"])
        gen.set_state(ckpt["gen"])
        torch.set_rng_state(ckpt["torch_rng"])  # dropout's masks
        curve, val_curve, checkpoint_stats = ckpt["curve"], ckpt["val_curve"], ckpt["checkpoint_stats"]
        done_steps, earlier_seconds = ckpt["done_steps"], ckpt["seconds"]
        print(f"resumed at step {first_step + done_steps} after {earlier_seconds:.0f} s", flush=True)
        if args.finish:  # the run ends here: the twin says what was actually trained
            steps, total_steps = done_steps, first_step + done_steps
    train_start = time.time() - earlier_seconds
    stopped_early = None
    for i in range(done_steps, steps):
        step = first_step + i
        if args.max_minutes is not None and time.time() - train_start > 60 * args.max_minutes:
            stopped_early, steps, total_steps = i, i, first_step + i  # the twin says what was actually trained
            print(f"stopped after {args.max_minutes} minutes at step {step}", flush=True)
            break
        for group in opt.param_groups:
            group["lr"] = lr_at(i, steps, lr, warmup=max(1, min(30, steps // 10)), time_done=(
                (time.time() - train_start) / (60 * args.max_minutes) if args.max_minutes else 0.0))
        x = batch_at(step, tokens, starts, args.batch, args.seq, args.seed, args.pad_frac, eos_id).to(device)
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=not args.no_bf16):
            if args.twin == "ar":
                loss = ce = ar_loss(model, x)
            elif args.twin == "uniform":
                loss, ce = uniform_loss(model, x, len(SPECIALS), gen, clean_weight=args.clean_weight,
                                        prefix_frac=args.prefix_frac, block_frac=args.block_frac)
            else:
                order = (None if orders is None else
                         orders_at(step, orders, starts, args.batch, args.seq, args.seed).to(device))
                loss, ce = diffusion_loss(model, x, mask_id, gen, prefix_frac=args.prefix_frac,
                                          block_frac=args.block_frac, certainty=args.certainty,
                                          order=order, order_frac=args.order_frac)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if i % args.log_every == 0 or i == steps - 1:
            point = {"step": step + 1, "tokens": (step + 1) * per_step, "loss": round(loss.item(), 4),
                     "masked_ce": round(ce.item(), 4), "seconds": round(time.time() - train_start, 1)}
            curve.append(point)
            print(json.dumps(point), flush=True)
        if (i + 1) % args.eval_every == 0 and i + 1 < steps:
            val_curve.append({"step": step + 1, "tokens": (step + 1) * per_step,
                              **held_out_loss(model, val, args.twin, mask_id, args.seed)})
            print("held_out", json.dumps(val_curve[-1]), flush=True)
            figure = val_curve[-1].get("ce", val_curve[-1].get("nelbo_estimate"))
            if args.keep_best and figure < best.get("figure", math.inf):
                best = {"figure": figure, "step": step + 1, "i": i + 1,
                        "state": {k: v.detach().clone() for k, v in model.state_dict().items()}}
        if args.twin == "ar" and step + 1 == fork:
            ckpt_stats = {"tokens": fork * per_step, "seconds": round(time.time() - train_start, 1),
                          "held_out": held_out_loss(model, val, "ar", mask_id, args.seed)}
            save_twin(model, out, "ar_fork", config, ckpt_stats)
            checkpoint_stats = ckpt_stats
            print("checkpoint", json.dumps(ckpt_stats), flush=True)
        pause = args.pause_after is not None and i + 1 == args.pause_after and i + 1 < steps
        if pause or ((i + 1) % args.checkpoint_every == 0 and i + 1 < steps):  # a killed run loses at most this many
            torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "gen": gen.get_state(),
                        "torch_rng": torch.get_rng_state(), "curve": curve,
                        "val_curve": val_curve, "checkpoint_stats": checkpoint_stats, "done_steps": i + 1,
                        "seconds": time.time() - train_start}, ckpt_path)
        if pause:
            print(f"paused after step {step + 1}; continue with --resume", flush=True)
            return {"paused_at_step": i + 1, "loss_curve": curve}
    seconds = time.time() - train_start
    if args.keep_best and best:
        last = held_out_loss(model, val, args.twin, mask_id, args.seed)
        last_figure = last.get("ce", last.get("nelbo_estimate"))
        if best["figure"] < last_figure:  # the weights written are those of the best evaluation
            model.load_state_dict(best["state"])
            print(f"kept the best held-out weights, step {best['step']} ({best['figure']:.4f} < {last_figure:.4f})",
                  flush=True)
            steps, total_steps = best["i"], first_step + best["i"]
    stats = {
        "twin": args.twin,
        "objective": "next-token cross-entropy" if args.twin == "ar" else uniform_objective(args)
        if args.twin == "uniform" else
        f"masked diffusion, stratified t per sequence, CE on masked positions weighted min(1/t, 10), Dream shift; "
        f"{args.prefix_frac:.0%} of sequences keep a clean prefix of random length"
        + (f"; {args.block_frac:.0%} laid out as the block sampler sees them (clean prefix, a block of 16 or 32 "
           "masked at rate t, the rest masked; loss on the block)" if args.block_frac else "")
        + (f"; certainty forcing (dParallel) weight {args.certainty}: entropy of softmax(logits / 0.5) at masked "
           "positions predicted right" if args.certainty else "")
        + (f"; {args.order_frac:.0%} of the stories with a trajectory laid out as a state of the decode that wrote "
           "them (loss on the masked positions of the block it wrote next)" if args.order_frac else ""),
        "pad_frac": args.pad_frac,
        "init": init_note,
        "params": n_params,
        "tokens_this_run": steps * per_step,
        "tokens_seen_total": total_steps * per_step,
        "steps": steps, "batch": args.batch, "seq": args.seq, "lr": lr, "seed": args.seed,
        "seconds": round(seconds, 1),
        "seconds_including_data": round(time.time() - t0, 1),
        "hardware": hardware(device),
        "augment_copies": args.augment,
        "stopped_early": {"after_minutes": args.max_minutes, "at_step": stopped_early} if stopped_early else None,
        "kept_best": {"step": best["step"], "held_out": best["figure"]} if best and args.keep_best else None,
        "data": {"files": [Path(p).name for p in args.corpus], "stories_train": len(train_s),
                 "distilled": joined_stats(distilled) if distilled else None,
                 "stories_held_out": len(val_s), "train_tokens": int(len(tokens)),
                 "held_out_tokens": int(len(val_tokens))},
        "held_out": held_out_loss(model, val, args.twin, mask_id, args.seed),
        "fork_checkpoint": checkpoint_stats,
        "previous_run": previous,
        "loss_curve": curve,
        "held_out_curve": val_curve,
        "precision": "float32 weights, bfloat16 autocast" if not args.no_bf16 else "float32",
        "dropout": args.dropout,
        "command": command,
    }
    save_twin(model, out, args.twin, config, stats)
    ckpt_path.unlink(missing_ok=True)
    print("done", json.dumps({k: stats[k] for k in ("seconds", "held_out")}), flush=True)
    return stats


if __name__ == "__main__":
    main()
