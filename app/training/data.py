"""The training data as torch reads it: the twins' tokenizer, the corpus as one token stream, and each step's
windows, drawn by (seed, step) alone so that every twin sees the same data in the same order."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch

from app.training.stories import NEVER, PROMPT

SPECIALS = ["<|endoftext|>", "<|mask|>", "<|pad|>"]


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

