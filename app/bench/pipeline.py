"""The pipeline section of `python -m app bench`: what app.analysis.changes costs per frame, and how well each aligner
does.

A seeded Mercury-like stream (`mercury_like_stream`) knows which final character every drafted character will be,
so each middle aligner of app.analysis.changes is timed and scored against that ground truth; the table in
app.analysis.changes's docstring and its CHOSEN aligner come from this section.
"""

from __future__ import annotations

import difflib
import random
import statistics
import time
from typing import Any, Callable

from app.analysis.changes import (
    CHOSEN,
    MIDDLE_ALIGNERS,
    SideAnalyzer,
    align,
    display_tokens,
    metrics,
    settled_fraction_series,
)
from app.trace.frames import DISPLAY_TOKEN, Frame

_TOKEN = DISPLAY_TOKEN

_WORDS = ("the a little girl boy dog cat sun tree house went saw found played with big small red happy "
          "sad friend mom day park ball said was and to of in it she he they very then one").split()
_NOISE = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789!@#$%^&*()_+-=[]{};:,.<>/?~"


def mercury_like_stream(n_tokens: int = 1000, block: int = 32, steps: int = 3, seed: int = 0, drift: float = 0.0
                        ) -> tuple[list[Frame], list[list[int]]]:
    """A seeded stand-in for Mercury's `diffusing` stream, with each frame's characters' final indices (-1: noise).

    Each run of unresolved characters shows as noise, of the same length (as in the reference capture
    "I wYll r%ad the f!le.") or, with `drift`, up to that fraction longer or shorter. Most spaces
    show from the start; the draft starts as noise over three quarters of the final length and grows
    block by block; each block settles over `steps` frames in random order.
    """
    rng = random.Random(seed)
    parts: list[str] = []
    count = 0
    while count < n_tokens:
        words = [rng.choice(_WORDS) for _ in range(rng.randint(4, 12))]
        sentence = " ".join(words).capitalize() + rng.choice(".,!?") + rng.choice("  \n")
        parts.append(sentence)
        count += len(_TOKEN.findall(sentence))
    final = "".join(parts)
    bounds = [m.end() for i, m in enumerate(_TOKEN.finditer(final)) if (i + 1) % block == 0] + [len(final)]
    resolved = bytearray(1 if c == " " and rng.random() < 0.7 else 0 for c in final)
    frames: list[Frame] = []
    sources: list[list[int]] = []
    start = 0
    for b, end in enumerate(bounds):
        order = list(range(start, end))
        rng.shuffle(order)
        for s in range(steps):
            for i in order[s * len(order) // steps:(s + 1) * len(order) // steps]:
                resolved[i] = 1
            reach = max(bounds[min(b + 1, len(bounds) - 1)], int(0.75 * len(final)))
            chars: list[str] = []
            src: list[int] = []
            i = 0
            while i < reach:
                if resolved[i]:
                    chars.append(final[i])
                    src.append(i)
                    i += 1
                    continue
                j = i
                while j < reach and not resolved[j]:
                    j += 1
                spread = 0.2 if j == reach else drift
                n = max(1, round((j - i) * rng.uniform(1 - spread, 1 + spread)))
                chars += [rng.choice(_NOISE) for _ in range(n)]
                src += [-1] * n
                i = j
            frames.append(Frame(t=0.01 * len(frames), step=len(frames), text="".join(chars)))
            sources.append(src)
        start = end
    frames.append(Frame(t=0.01 * len(frames), step=len(frames), text=final, final=True))
    sources.append(list(range(len(final))))
    return frames, sources


def _truth(text: str, src: list[int], final_starts: dict[tuple[int, int], int]) -> list[int]:
    """Ground truth per display token of a generated frame: the final token it already is, or -1."""
    out = []
    for mt in _TOKEN.finditer(text):
        a, b = mt.span()
        fa = src[a]
        ok = fa >= 0 and src[a:b] == list(range(fa, fa + b - a))
        out.append(final_starts.get((fa, fa + b - a), -1) if ok else -1)
    return out


def _quality(frames: list[Frame], sources: list[list[int]], middle: str) -> float:
    """Share of (frame, position) cells where alignment to the final frame says what the ground truth says."""
    final = frames[-1]
    ftok = display_tokens(final)
    starts = {m.span(): k for k, m in enumerate(_TOKEN.finditer(final.text or ""))}
    agree = total = 0
    for f, src in zip(frames, sources):
        tok = display_tokens(f)
        for j, x, w in zip(align(ftok, tok, middle), tok, _truth(f.text or "", src, starts)):
            agree += (j if j >= 0 and ftok[j] == x else -1) == w
            total += 1
    return agree / total


def _time_ms(fn: Callable[..., Any]) -> float:
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0) * 1000


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def bench(n_tokens: int = 1000, passes: int = 5, baseline_budget_s: float = 12.0) -> dict[str, Any]:
    """Per-frame cost of SideAnalyzer.add (tokenize, align, diff) on a Mercury-like stream, beside plain difflib.

    Also times and scores (agreement with the generator's ground truth of settled tokens) each
    middle aligner, so the choice in CHOSEN stays a measured one.
    """
    frames, truth = mercury_like_stream(n_tokens)
    toks = [display_tokens(f) for f in frames]
    out: dict[str, Any] = {"stream_frames": len(frames), "frame_tokens_p50": statistics.median(map(len, toks)),
                           "final_tokens": len(toks[-1]), "aligner": CHOSEN}

    def per_frame(middle: str, reps: int) -> list[float]:
        times: list[float] = []
        for _ in range(reps):
            analyzer = SideAnalyzer(middle)
            times += [_time_ms(lambda f=f, analyzer=analyzer: analyzer.add(f)) for f in frames]
        return times

    ours = per_frame(CHOSEN, passes)
    out.update(frame_ms_p50=_pct(ours, 0.5), frame_ms_p99=_pct(ours, 0.99),
               tokenize_ms_p50=_pct([_time_ms(lambda f=f: display_tokens(f)) for f in frames * passes], 0.5))
    order = list(range(1, len(frames)))
    random.Random(1).shuffle(order)

    def plain_difflib(autojunk: bool, budget_s: float) -> list[float]:
        times: list[float] = []
        deadline = time.perf_counter() + budget_s
        for k in order:
            if time.perf_counter() > deadline and len(times) >= 5:
                break
            times.append(_time_ms(lambda k=k: difflib.SequenceMatcher(
                None, toks[k - 1], toks[k], autojunk=autojunk).get_opcodes()))
        return times

    base = plain_difflib(True, baseline_budget_s)
    nojunk = plain_difflib(False, baseline_budget_s / 4)
    out.update(difflib_frame_ms_p50=_pct(base, 0.5), difflib_frame_ms_p99=_pct(base, 0.99),
               difflib_frames=len(base), speedup_vs_difflib_p50=_pct(base, 0.5) / out["frame_ms_p50"],
               difflib_nojunk_frame_ms_p50=_pct(nojunk, 0.5), difflib_nojunk_frames=len(nojunk))
    try:
        import rapidfuzz

        out["rapidfuzz_version"] = rapidfuzz.__version__
        names = list(MIDDLE_ALIGNERS)
    except ImportError:
        names = [m for m in MIDDLE_ALIGNERS if m != "rapidfuzz"]
        out["rapidfuzz_frame_ms_p50"] = None
    for name in names:
        if name not in (CHOSEN, "prefix_only"):
            out[f"{name}_frame_ms_p50"] = _pct(per_frame(name, 1 if name == "difflib_middle" else passes), 0.5)
    out["summary_ms"] = _time_ms(lambda: (metrics(frames), settled_fraction_series(frames)))
    out["settled_agreement"] = {m: round(_quality(frames, truth, m), 4) for m in names}
    drifted = mercury_like_stream(n_tokens, drift=0.5)
    out["settled_agreement_drift50"] = {m: round(_quality(*drifted, m), 4) for m in names}
    return out
