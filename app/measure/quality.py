"""How the bench and the sweep charts measure a setting: one sample at a time, timed, scored under the AR twin.

Quality is the perplexity of the generated answers under the AR twin, pooled over the prompts' tokens
(easy to game by repetition, so distinct-2 of words and the texts themselves sit beside it). Tokens are
counted up to end-of-text; seconds are wall time per sample on this machine.
"""

from __future__ import annotations

import math
import re
import time
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from app.engine import autoregressive, diffusion
from app.engine.autoregressive import ARSettings
from app.engine.diffusion import DiffusionSettings

PROMPTS = (
    "Once upon a time, there was a little girl named Lily.",
    "Tom had a big red ball. One day,",
    "The cat and the dog were friends. They",
)


def timed(fn: Callable[..., Any]) -> tuple[Any, float]:
    """fn's result and the wall seconds it took."""
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def run_diffusion(model: Any, prompt_ids: list[int], s: DiffusionSettings) -> tuple[list[int], int, float]:
    """(answer ids up to end-of-text, forward passes, wall seconds) for one sample."""
    last, seconds = timed(lambda: list(diffusion.generate(model, prompt_ids, s))[-1])
    n = diffusion.answer_length(last.ids, last.masked, model.eos_id)
    return [int(i) for i in last.ids[:n]], last.nfe, seconds


def run_ar(model: Any, prompt_ids: list[int], s: ARSettings) -> tuple[list[int], int, float]:
    """(answer ids, forward passes, wall seconds) for one sample of the AR sampler."""
    last, seconds = timed(lambda: list(autoregressive.generate(model, prompt_ids, s))[-1])
    return last.ids, last.nfe, seconds


def answer_logits(ar: Any, prompt_ids: list[int], answer: list[int]) -> np.ndarray:
    """The AR model's logits (float32) for each answer token given what precedes it: the sequence end-of-text, prompt,
    answer, one causal pass, and only the rows that score the answer through the head (the board scores every answer
    it races, and the prompt's rows were a third of that work: issue 54, item 6)."""
    seq = np.array([ar.eos_id, *prompt_ids, *answer[:-1]], dtype=np.int64)
    return ar.net.hidden(seq, causal=True)[len(prompt_ids):] @ ar.net.head


def nll(ar: Any, prompt_ids: list[int], answer: list[int]) -> float:
    """Summed negative log-likelihood (nats) of the answer given the prompt, under the AR twin, its log-softmax in
    float64 (as the site's board.js mirrors it)."""
    if not answer:
        return 0.0
    rows = answer_logits(ar, prompt_ids, answer).astype(np.float64)
    rows -= rows.max(axis=-1, keepdims=True)
    picked = rows[np.arange(len(answer)), answer]
    np.exp(rows, out=rows)  # in place: a second (answer, vocabulary) array cost the board a tenth of its scoring
    return float(-(picked - np.log(rows.sum(axis=-1))).sum())


def distinct2(text: str) -> float | None:
    """Unique word bigrams over all word bigrams (1.0: no repetition)."""
    words = text.split()
    pairs = list(zip(words, words[1:]))
    return len(set(pairs)) / len(pairs) if pairs else None


def words(text: str) -> list[str]:
    """The text's words, lower-cased, without the punctuation around them ("Book." and "book" are one word)."""
    return [w for w in (re.sub(r"^\W+|\W+$", "", t.lower()) for t in text.split()) if w]


def stutter(texts: Iterable[str]) -> tuple[int, int]:
    """(adjacent word pairs that repeat the same word, all adjacent word pairs) over the texts: "book book" and
    "a book. Book" stutter, "very, very" too (rare in the stories, and cheap to count honestly as one)."""
    repeats = pairs = 0
    for text in texts:
        w = words(text)
        pairs += max(0, len(w) - 1)
        repeats += sum(a == b for a, b in zip(w, w[1:]))
    return repeats, pairs


def glued(texts: Iterable[str]) -> int:
    """Words that are one word written twice with no space between ("TheyThey"): a stutter the word pairs of `stutter`
    miss, which the stutter guard can make of one (" They" then "They" are two tokens that are not alike)."""
    return sum(len(w) >= 6 and len(w) % 2 == 0 and w[:len(w) // 2] == w[len(w) // 2:] and w.isalpha()
               for text in texts for w in words(text))  # halves of 3 letters or more: "mama" is a word


def sentences(text: str) -> list[tuple[str, ...]]:
    """The text's sentences as `words` reads them, split after . ! or ? (and a closing quote) and at line breaks."""
    parts = re.split(r"(?<=[.!?])[\"'\u201d]?\s+|\n+", text)
    return [tuple(w) for w in (words(p) for p in parts) if w]


def repeats_a_sentence(text: str) -> bool:
    """Whether an answer says one of its sentences twice ("I will be fun. I will be fun."): the loop greedy decoding
    falls into, which the guard against repeated runs is there to break."""
    said = sentences(text)
    return len(said) != len(set(said))


def doubled(runs: Iterable[tuple[Sequence[int], Sequence[int]]], repeatable: np.ndarray | None) -> tuple[int, int]:
    """(answer tokens that repeat the token just before them, answer tokens) over (prompt ids, answer ids) runs: the
    uniform twin's "TheThe". The answer's first token counts against the prompt's last; tokens `repeatable` marks
    (newlines, punctuation: stutter.wordless) may repeat and do not count."""
    repeats = tokens = 0
    for prompt, answer in runs:
        seq = [*prompt[-1:], *answer]
        tokens += len(answer)
        repeats += sum(a == b and not (repeatable is not None and repeatable[a]) for a, b in zip(seq, seq[1:]))
    return repeats, tokens


RECITAL_N = 8  # an 8-word run found verbatim in the training text is recited, not written


def runs(text: str, n: int = RECITAL_N) -> list[tuple[str, ...]]:
    """The text's runs of n consecutive words (as `words` reads them), in order."""
    w = words(text)
    return [tuple(w[i:i + n]) for i in range(len(w) - n + 1)]


def ngrams(text: str, n: int = RECITAL_N) -> set[tuple[str, ...]]:
    """The text's distinct runs of n consecutive words."""
    return set(runs(text, n))


def recited(texts: Iterable[str], known: set[tuple[str, ...]], n: int = RECITAL_N) -> tuple[int, int]:
    """(n-word runs of the texts found verbatim in `known`, all n-word runs): how much of an answer is recital."""
    found = total = 0
    for text in texts:
        these = runs(text, n)
        total += len(these)
        found += sum(r in known for r in these)
    return found, total


CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpus"  # ../shared/corpus beside the checkout
TRAINING_FILES = ("tinystories-a.txt", "tinystories-b.txt")


def training_ngrams(folder: Path | None = None, n: int = RECITAL_N) -> set[tuple[str, ...]] | None:
    """Every n-word run of the twins' training text (None when the corpus is not beside the checkout)."""
    folder = folder or CORPUS
    try:
        return set().union(*(ngrams(Path(folder, f).read_text(encoding="utf-8"), n) for f in TRAINING_FILES))
    except OSError:
        return None


def quality(referee: Any, tok: Any, runs: Sequence[tuple[list[int], list[int]]]) -> tuple[dict[str, Any], list[str]]:
    """Referee perplexity pooled over the answers' tokens, distinct-2 and stutter of (prompt ids, answer ids) runs, and
    the answers' texts: the fresh-stories issue's quality figures, one way for the bench and the defaults' chooser."""
    texts = [tok.decode(a) for _, a in runs]
    tokens = sum(len(a) for _, a in runs)
    nlls = sum(nll(referee, p, a) for p, a in runs)
    repeats, pairs = stutter(texts)
    return {"answer_tokens": tokens, "referee_ppl": round(math.exp(nlls / tokens), 2) if tokens else None,
            "distinct2": mean([distinct2(t) for t in texts]),
            "stutter": round(repeats / pairs, 4) if pairs else None, "stuttered_pairs": repeats,
            "word_pairs": pairs, "glued_doubles": glued(texts),
            "answers_repeating_a_sentence": sum(map(repeats_a_sentence, texts))}, texts


def mean(values: Sequence[float | None]) -> float | None:
    """The mean of the values that are there, to 3 decimals (None when none are)."""
    kept = [v for v in values if v is not None]
    return round(sum(kept) / len(kept), 3) if kept else None


def samples(kind: str, model: Any, am: Any, tok: Any, prompts: Sequence[list[int]], s: Any) -> dict[str, Any]:
    """Runs one setting on every prompt: tokens, passes, seconds, perplexity, distinct-2 and the texts."""
    runs = []
    for p in prompts:
        ids, nfe, sec = run_diffusion(model, p, s) if kind == "diffusion" else run_ar(model, p, s)
        text = tok.decode(ids)
        runs.append({"tokens": len(ids), "nfe": nfe, "seconds": sec, "nll": nll(am, p, ids),
                     "distinct2": distinct2(text), "text": text})
    tokens, nfe = sum(r["tokens"] for r in runs), sum(r["nfe"] for r in runs)
    return {"kind": kind, "settings": s.to_json(), "tokens": round(tokens / len(runs), 1),
            "nfe": round(nfe / len(runs), 1), "tokens_per_forward": round(tokens / nfe, 2) if nfe else None,
            "seconds": mean([r["seconds"] for r in runs]),
            "ppl": round(math.exp(sum(r["nll"] for r in runs) / tokens), 2) if tokens else None,
            "distinct2": mean([r["distinct2"] for r in runs]), "samples": [r["text"] for r in runs]}
