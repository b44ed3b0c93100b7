"""The twins' training objectives: next-token cross-entropy, masked diffusion (MDLM/LLaDA, with the block
sampler's and the decode's own layouts) and uniform-state diffusion (UDLM/DUO's forward process), and the held-out
figures each is judged by."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from app.training.data import SPECIALS
from app.training.model import TorchTransformer
from app.training.stories import NEVER


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

