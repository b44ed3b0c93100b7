"""A learned commit rule (Learn2PD, 2025): a tiny network that says which masked positions of a block are safe to commit
now.

A masked-diffusion model often already predicts a position's final token many passes before it commits it,
but with a confidence too low for a fixed threshold. The filter looks at what the model shows at each masked
position of the block (its confidence, margin and entropy, its neighbours, how much of the block is settled)
and scores how likely the current guess is the token that one-token-per-pass decoding would end with. The
sampler commits every position scoring at least `DiffusionSettings.filter` together, aiming at the text of one
token per pass in fewer passes (how many fewer, and at what cost, is the twins bench's to say). It is fitted to one
model, from that model's own decoding
(`python -m app.training.fit_filter`), in a few minutes of CPU, and runs in numpy.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

FEATURES = ("top probability", "margin over the second", "entropy (share of the maximum)", "place in the block",
            "share of the block still masked", "left neighbour settled", "right neighbour settled",
            "leftmost masked of the block", "masked positions to its left (share of the block)",
            "left neighbour's top probability", "right neighbour's top probability",
            "same token as the left neighbour", "end-of-text", "passes its guess has held (up to 4, as a share)",
            "guess held since the last pass")
HIDDEN = 32


def features(probs: np.ndarray, chosen: np.ndarray, ids: np.ndarray, masked: np.ndarray, eos_id: int,
             held: np.ndarray) -> np.ndarray:
    """One row of FEATURES per block position (the sampler reads the masked rows). probs (B, V) are the
    block's distributions, chosen its top tokens, ids and masked the block's current tokens and mask, held how
    many passes in a row each position's guess has not changed (a guess that holds is usually final)."""
    B = len(chosen)
    top = probs[np.arange(B), chosen]
    second = np.partition(probs, -2, axis=-1)[:, -2]
    entropy = -np.sum(probs * np.log(np.clip(probs, 1e-30, None)), axis=-1) / np.log(probs.shape[-1])
    settled = ~masked
    left_settled = np.concatenate([[True], settled[:-1]])  # the block's left edge touches settled text
    right_settled = np.concatenate([settled[1:], [False]])  # right of the block is still masked
    masked_left = np.cumsum(masked) - masked
    first = np.flatnonzero(masked)[0] if masked.any() else 0
    sure = np.where(settled, 1.0, top)
    left_sure = np.concatenate([[1.0], sure[:-1]])
    right_sure = np.concatenate([sure[1:], [0.0]])
    shown = np.where(settled, ids, chosen)  # what each position holds or would hold
    left_token = np.concatenate([[-1], shown[:-1]])
    return np.stack([top, top - second, entropy, np.arange(B) / B, np.full(B, masked.mean()),
                     left_settled, right_settled, np.arange(B) == first, masked_left / B,
                     left_sure, right_sure, chosen == left_token, chosen == eos_id,
                     np.minimum(held, 4) / 4, held > 0], axis=1).astype(np.float32)


@dataclass
class CommitFilter:
    """A one-hidden-layer network over FEATURES, with the feature scaling it was fitted with."""

    mean: np.ndarray
    scale: np.ndarray
    w1: np.ndarray
    b1: np.ndarray
    w2: np.ndarray
    b2: np.ndarray
    about: dict[str, Any]

    def observe(self, rows: np.ndarray, positions: np.ndarray, guesses: np.ndarray) -> np.ndarray:
        """What the sampler asks: a score per masked position (the positions and guesses are not needed)."""
        return self.score(rows)

    def score(self, rows: np.ndarray) -> np.ndarray:
        """The probability, per row of features, that the model's current guess is its final token."""
        return _forward((rows - self.mean) / self.scale, self.w1, self.b1, self.w2, self.b2)[1]

    def save(self, path: str | Path) -> None:
        from safetensors.numpy import save_file

        save_file({k: getattr(self, k).astype(np.float32) for k in ("mean", "scale", "w1", "b1", "w2", "b2")},
                  str(path), metadata={"about": json.dumps(self.about)})


def _forward(Z: np.ndarray, w1: np.ndarray, b1: np.ndarray, w2: np.ndarray, b2: np.ndarray
             ) -> tuple[np.ndarray, np.ndarray]:
    """The network on scaled features: its hidden layer (which fitting needs) and its scores."""
    h = np.tanh(Z @ w1 + b1)
    return h, 1.0 / (1.0 + np.exp(-(h @ w2 + b2)))


def load(path: str | Path) -> CommitFilter:
    """Reads a filter written by CommitFilter.save."""
    from safetensors import safe_open
    from safetensors.numpy import load_file

    t = load_file(str(path))
    with safe_open(str(path), framework="np") as f:
        about = json.loads((f.metadata() or {}).get("about", "{}"))
    return CommitFilter(t["mean"], t["scale"], t["w1"], t["b1"], t["w2"], t["b2"], about)


def fit(X: np.ndarray, y: np.ndarray, epochs: int = 300, lr: float = 0.01, seed: int = 0) -> CommitFilter:
    """Fits the network by full-batch Adam on binary cross-entropy (numpy: a few thousand rows take seconds)."""
    rng = np.random.default_rng(seed)
    mean, scale = X.mean(0), X.std(0) + 1e-6
    Z = (X - mean) / scale
    params = {"w1": rng.normal(0, 1 / np.sqrt(Z.shape[1]), (Z.shape[1], HIDDEN)), "b1": np.zeros(HIDDEN),
              "w2": rng.normal(0, 1 / np.sqrt(HIDDEN), HIDDEN), "b2": np.zeros(1)}
    m = {k: np.zeros_like(v) for k, v in params.items()}
    v = {k: np.zeros_like(p) for k, p in params.items()}
    for t in range(1, epochs + 1):
        h, p = _forward(Z, **params)
        d = (p - y) / len(y)  # d(mean BCE)/d(logit)
        dh = np.outer(d, params["w2"]) * (1 - h * h)
        grads = {"w2": h.T @ d, "b2": np.array([d.sum()]), "w1": Z.T @ dh, "b1": dh.sum(0)}
        for k, g in grads.items():
            m[k] = 0.9 * m[k] + 0.1 * g
            v[k] = 0.999 * v[k] + 0.001 * g * g
            params[k] -= lr * (m[k] / (1 - 0.9 ** t)) / (np.sqrt(v[k] / (1 - 0.999 ** t)) + 1e-8)
    f32 = {k: np.asarray(p, dtype=np.float32) for k, p in params.items()}
    return CommitFilter(mean.astype(np.float32), scale.astype(np.float32), about={}, **f32)


class Recorder:
    """Stands in for a filter while decoding: keeps every block state's features and, to visit the states a
    filter creates, scores as safe the positions whose guess already equals `final` (None: none)."""

    def __init__(self, final: np.ndarray | None = None):
        self.final = final
        self.rows: list[np.ndarray] = []
        self.guesses: list[tuple[np.ndarray, np.ndarray]] = []  # (answer positions, guessed tokens)

    def observe(self, rows: np.ndarray, positions: np.ndarray, guesses: np.ndarray) -> np.ndarray:
        self.rows.append(rows)
        self.guesses.append((positions, guesses))
        if self.final is None:
            return np.zeros(len(rows))
        return (guesses == self.final[positions]).astype(np.float64)


def collect(model: Any, prompts: Sequence[Sequence[int]], settings: Any,
            generate: Callable[..., Any]) -> tuple[np.ndarray, np.ndarray]:
    """Feature rows and labels (1: the guess equals the token one-token-per-pass decoding ends with) from each
    prompt's one-token-per-pass decoding and from the decoding a perfect filter would make."""
    X, y = [], []
    for prompt in prompts:
        ref = Recorder()
        final = list(generate(model, prompt, settings, commit_filter=ref))[-1].ids
        oracle = Recorder(final)
        list(generate(model, prompt, settings, commit_filter=oracle))
        for rec in (ref, oracle):
            for rows, (pos, guess) in zip(rec.rows, rec.guesses):
                X.append(rows)
                y.append(guess == final[pos])
    return np.concatenate(X), np.concatenate(y).astype(np.float64)
