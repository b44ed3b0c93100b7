"""Analysis: display tokens, alignment of text states, the change matrix and the metrics.

Pure functions over frames (plus one small incremental class), so the live page, the exports
and the benchmark compute every number the same way.

Alignment. Frames from token sources (the local models) carry real positions: position i of one
frame is position i of the next. Frames from text sources (Mercury's `diffusing` stream, OpenAI
typing) are re-tokenized for display, and Mercury's noise characters change how many display
tokens a draft has, so two text states are aligned: the common prefix and the common suffix pair up
as they are, and in the middle a token continues the token that starts at the same character
offset (a token over old text that starts nowhere old is "changed", one past the old text is "new").
Chosen by measurement (app/bench/pipeline.py records every alternative; figures from `python -m app
bench --json --only pipeline` on the shared 2-core dev box, Mercury-like stream of ~930-token
frames; agreement = share of cells where alignment to the final frame names the same final token
as the generator's ground truth, or none):

    middle rule                       ms/frame p50   agreement, 1:1 noise   noise +-50% long
    character offset (chosen)             0.20             0.9997                0.901
    position by position                  0.19             0.897                 0.897
    difflib on the middle (no autojunk)   ~8               0.898                 0.899
    rapidfuzz 3.14.6 Levenshtein          0.30             0.894                 0.895
    prefix and suffix only                  -              0.895                 0.895

A plain difflib.SequenceMatcher over whole frames costs 1.1-1.5 ms at p50 (its autojunk drops the
spaces; 25-45 ms without autojunk). Offset alignment is the only rule that finds the settled words
inside a half-settled block (noise replaces characters one for one in the reference capture
"I wYll r%ad the f!le."); where noise is not one for one it is still no worse than the others.
It is O(n) in the standard library and keeps the heatmap's columns in place, so rapidfuzz is not
a dependency; the bench times it when it happens to be installed.
"""

from __future__ import annotations

import difflib
import math
import re
from itertools import accumulate
from typing import Any, Callable, Iterable, Iterator

from app.analysis import revision as rv
from app.analysis import states as st
from app.trace.cancel import checkpoint
from app.trace.frames import DISPLAY_TOKEN, SCHEMA, Frame

UNCHANGED, NEW, CHANGED, REMASKED = st.UNCHANGED, st.NEW, st.CHANGED, st.REMASKED  # the codes: app/analysis/states.py
EOS_TOKENS = frozenset({"<|endoftext|>", "<|eos|>", "<|eot_id|>", "<|im_end|>", "<|end|>", "</s>", "<eos>", "[EOS]"})

_TOKEN = DISPLAY_TOKEN  # defined in app.trace.frames, whose reader counts display tokens against its cap
_MARKER = re.compile(r"<\|[^<>|\s]{1,64}\|>")


def text_tokens(text: str) -> list[str]:
    """Display tokens of a text state: words, whitespace runs and single symbols, markers like <|think_end|> removed."""
    if "<|" in text:
        text = _MARKER.sub("", text)
    return _TOKEN.findall(text)


def display_tokens(frame: Frame) -> list[str]:
    """The strings to draw: the source's tokens (masked positions as "") or its text tokenized for display."""
    if frame.tokens:
        masked = _masks(frame)
        if masked is None:
            return list(frame.tokens)
        return ["" if m else t for t, m in zip(frame.tokens, masked)]
    if frame.text:
        return text_tokens(frame.text)
    return []


def _is_text(frame: Frame) -> bool:
    return not frame.tokens and frame.text is not None


def _masks(frame: Frame) -> list[bool] | None:
    if frame.states is not None and frame.tokens:
        return [s == "m" for s in frame.states]
    return None if _is_text(frame) else frame.masked


def _hidden(frame: Frame) -> list[bool] | None:
    """Per position, whether no model token is on screen there: masked, or (schema 2) random noise."""
    if frame.states is not None and frame.tokens:
        return [s in "mn" for s in frame.states]
    return _masks(frame)


def prefix_len(a: list[Any], b: list[Any]) -> int:
    """Length of the common prefix, by binary search over slice comparisons (C speed, O(n))."""
    lo, hi = 0, min(len(a), len(b))
    if a[:hi] == b[:hi]:
        return hi
    hi -= 1  # a[:lo] == b[:lo] holds; the answer is in [lo, hi]
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _suffix_len(a: list[str], b: list[str], limit: int) -> int:
    """Length of the common suffix, at most `limit` (so prefix and suffix never overlap)."""
    n, m = len(a), len(b)
    lo, hi = 0, limit
    if a[n - hi:] == b[m - hi:]:
        return hi
    hi -= 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[n - mid:n - lo] == b[m - mid:m - lo]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _middle_positional(a: list[str], b: list[str]) -> list[int]:
    """Measured alternative: position k of b continues position k of a; extra positions of b are new (-1)."""
    n = len(a)
    return list(range(min(n, len(b)))) + [-1] * (len(b) - n)


def _middle_offset(a: list[str], b: list[str]) -> list[int]:
    """A token of b continues the token of a at the same character offset; else -2 (over old text), -1 (past it)."""
    starts = dict(zip(accumulate(map(len, a), initial=0), range(len(a))))
    total = sum(map(len, a))
    return [starts[o] if o in starts else (-2 if o < total else -1)
            for o in accumulate(map(len, b[:-1]), initial=0)] if b else []


def _middle_none(a: list[str], b: list[str]) -> list[int]:
    """Measured floor: nothing in the middle pairs up (the settled prefix and suffix alone)."""
    return [-2] * min(len(a), len(b)) + [-1] * (len(b) - len(a))


def _middle_difflib(a: list[str], b: list[str]) -> list[int]:
    """Measured alternative: difflib's matching blocks; replaced runs pair up position by position."""
    return _from_opcodes(difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes(), len(b))


def _middle_rapidfuzz(a: list[str], b: list[str]) -> list[int]:
    """Measured alternative (needs rapidfuzz): Levenshtein opcodes over the token strings."""
    from rapidfuzz.distance import Levenshtein

    ops = Levenshtein.opcodes(a, b)
    return _from_opcodes([(o.tag, o.src_start, o.src_end, o.dest_start, o.dest_end) for o in ops], len(b))


def _from_opcodes(ops: Iterable[tuple[str, int, int, int, int]], m: int) -> list[int]:
    out = [-1] * m
    for tag, i1, i2, j1, j2 in ops:
        if tag == "replace":
            out[j1:j2] = [-2] * (j2 - j1)
        if tag in ("equal", "replace"):
            for k in range(min(i2 - i1, j2 - j1)):
                out[j1 + k] = i1 + k
    return out


MIDDLE_ALIGNERS: dict[str, Callable[[list[str], list[str]], list[int]]] = {
    "offset": _middle_offset, "positional": _middle_positional,
    "difflib_middle": _middle_difflib, "rapidfuzz": _middle_rapidfuzz, "prefix_only": _middle_none}
CHOSEN = "offset"


def _trim(a: list[str], b: list[str]) -> tuple[int, int]:
    p = prefix_len(a, b)
    return p, _suffix_len(a, b, min(len(a), len(b)) - p)


def align(a: list[str], b: list[str], middle: str = CHOSEN) -> list[int]:
    """For each position of text state b, the position of a it continues, or -1 where it has none.

    The common prefix and suffix pair up as they are; the middle is paired by `middle` (see the module docstring).
    """
    n, m = len(a), len(b)
    p, s = _trim(a, b)
    mid = [i + p if i >= 0 else -1 for i in MIDDLE_ALIGNERS[middle](a[p:n - s], b[p:m - s])]
    return list(range(p)) + mid + list(range(n - s, n))


def text_deletions(a: list[str], b: list[str]) -> list[list[Any]]:
    """Text state a's tokens that b drops, as rows' `del` entries [a's position, b's position it stands before, token].

    Past the common prefix and suffix, a token of a is deleted when it starts at or after the end of b's middle text:
    a middle that is rewritten in as many characters (Mercury's noise settling, "r%ad" to "read") deletes nothing;
    one that shrinks ("the whole file" to "the file") deletes what lies past its new end, drawn where it stood."""
    n, m = len(a), len(b)
    p, s = _trim(a, b)
    end = sum(map(len, b[p:m - s]))
    return [[p + j, m - s, t] for j, (o, t) in enumerate(zip(accumulate(map(len, a[p:n - s]), initial=0), a[p:n - s]))
            if o >= end]


class Reference:
    """A text state that many others are aligned against (the final frame, against every frame of its side).

    Its tokens' character offsets are worked out once, so each `align` costs the other state's length, not this
    one's: a side of many short frames and one long final one is analysed in time linear in its tokens, where
    `align(final, frame)` per frame would cost frames x final length. The result is always `align(tokens, b)`'s.
    """

    def __init__(self, tokens: list[str]) -> None:
        self.tokens = tokens
        self.starts = list(accumulate(map(len, tokens), initial=0))  # token i starts at starts[i]; starts[-1]: total
        # offsets are unique when no token is empty (display tokens never are), so one table serves every middle
        self.at = dict(zip(self.starts, range(len(tokens)))) if all(tokens) else None

    def align(self, b: list[str]) -> list[int]:
        """`align(self.tokens, b)` on the chosen (character offset) rule, in O(len(b) log len(b))."""
        a, n, m = self.tokens, len(self.tokens), len(b)
        if self.at is None:
            return align(a, b)
        p, s = _trim(a, b)
        base, stop = self.starts[p], n - s
        mid = []
        for o in (accumulate(map(len, b[p:m - s - 1]), initial=0) if m - s > p else ()):
            i = self.at.get(base + o, -1)
            mid.append(i if p <= i < stop else -1)
        return list(range(p)) + mid + list(range(n - s, n))


def _text_codes(a: list[str], b: list[str], middle: str = CHOSEN) -> tuple[list[int], int]:
    """Change codes of text state b against a, and the common prefix length."""
    n, m = len(a), len(b)
    p, s = _trim(a, b)
    am, bm = a[p:n - s], b[p:m - s]
    if middle == "offset":  # the same rule as _middle_offset, in one pass
        at = dict(zip(accumulate(map(len, am), initial=0), am))
        total = sum(map(len, am))
        mid = [(UNCHANGED if at.get(o) == y else CHANGED) if o < total else NEW
               for o, y in zip(accumulate(map(len, bm), initial=0), bm)]
    else:
        mapping = MIDDLE_ALIGNERS[middle](am, bm)
        mid = [(UNCHANGED if am[i] == y else CHANGED) if i >= 0 else NEW if i == -1 else CHANGED
               for i, y in zip(mapping, bm)]
    return [UNCHANGED] * p + mid + [UNCHANGED] * s, p


def _token_codes(a: list[str], am: list[bool] | None, b: list[str], bm: list[bool] | None) -> list[int]:
    """Change codes for sources with real positions: position i against position i."""
    n, m = len(a), len(b)
    if am is None and bm is None:
        codes = [UNCHANGED if x == y else CHANGED for x, y in zip(a, b)]
    else:
        am = am if am is not None else [False] * n
        bm = bm if bm is not None else [False] * m
        codes = [(UNCHANGED if x == y else CHANGED) if not pm and not cm else
                 NEW if pm and not cm else REMASKED if cm and not pm else UNCHANGED
                 for x, y, pm, cm in zip(a, b, am, bm)]
    if m > n:
        codes += [UNCHANGED if bm is not None and bm[i] else NEW for i in range(n, m)]
    return codes


class SideAnalyzer:
    """One side's frames, as they arrive, turned into the compact rows the browser player draws.

    Row keys: i, t, step, tok (display strings), m (0/1 masked or None), ch (per position vs the
    previous frame: 0 unchanged, 1 a token appeared where there was a mask or nothing (schema 2: accepted, or a
    draft over a mask or noise), 2 a different token, 3 remasked, and for schema 2 frames 4 edited, 5 re-noised,
    6 inserted: app/analysis/states.py), conf (3 decimals or None), nfe, final, sp: the leading run of positions
    that hold the same unmasked token as in the previous frame (the part that looks settled live), and
    as the frame has them, pin (the positions given before the run) and note (a line shown with the frame); a
    schema 2 frame adds st, back and del (SideAnalyzer._edits), ent (each position's entropy) when it has one, and rv
    (its `revision` letters, app/analysis/revision.py) on a side that started from a draft.
    A text state that shrinks adds del too (text_deletions), unless the rows are a schema 1 recording's, which play
    as they always did.
    """

    def __init__(self, middle: str = CHOSEN, schema: int = SCHEMA) -> None:
        self.middle = middle
        self.schema = schema
        self.count = 0
        self._tok: list[str] = []
        self._masked: list[bool] | None = None
        self._text = False
        self._states: str | None = None

    def add(self, frame: Frame) -> dict[str, Any]:
        checkpoint()  # cancelled work stops at its next frame (app/trace/cancel.py)
        tok = display_tokens(frame)
        masked = _masks(frame)
        text = _is_text(frame)
        extra: dict[str, Any] = {}
        if st.has_edits(frame):
            codes, sp, extra = self._edits(frame, tok)
        elif text and (self._text or not self.count):
            codes, sp = _text_codes(self._tok, tok, self.middle)
            if self.schema >= 2 and (gone := text_deletions(self._tok, tok)):
                extra["del"] = gone
        else:
            codes = _token_codes(self._tok, self._masked, tok, masked)
            sp = 0
            for c, mk in zip(codes, masked or [False] * len(codes)):
                if c or mk:
                    break
                sp += 1
        sp = min(sp, len(self._tok))
        conf = None if text else frame.confidence
        row = {"i": self.count, "t": round(frame.t, 4), "step": frame.step, "tok": tok,
               "m": [1 if x else 0 for x in masked] if masked is not None else None,
               "ch": codes, "conf": [round(c, 3) for c in conf] if conf is not None else None,
               "nfe": frame.nfe, "final": frame.final, "sp": sp, "cand": frame.candidates, "pin": frame.pinned,
               "note": frame.note, "by": frame.chosen_by, **extra}
        if frame.revision is not None and not text:  # a side that started from a draft: its letters (revision.py)
            row["rv"] = frame.revision
            if not self.count:
                row["ch"] = rv.first_codes(codes, frame.revision)
        if frame.entropy is not None and not text:  # schema 2: each predicted position's entropy (nats)
            row["ent"] = [None if e is None else round(e, 3) for e in frame.entropy]
        self.count += 1
        self._tok, self._masked, self._text = tok, masked, text
        self._states = extra.get("st")
        return row

    def _edits(self, frame: Frame, tok: list[str]) -> tuple[list[int], int, dict[str, Any]]:
        """A schema 2 frame's codes, settled prefix (accepted and unchanged) and its row's extra keys: `st` (a state
        letter per position), `back` (the position of the frame before each continues, -1 inserted) and, when it
        dropped any, `del` (states.dropped)."""
        back = st.previous_positions(len(self._tok), len(tok), frame.inserted, frame.deleted)
        states = st.frame_states(frame)
        before = self._states if self._states is not None else "".join(
            "m" if m else "a" for m in (self._masked or [False] * len(self._tok)))
        codes = st.codes(self._tok, before, tok, states, back, frame.inserted)
        sp = next((i for i, (c, s) in enumerate(zip(codes, states)) if c or s != "a"), len(codes))
        extra: dict[str, Any] = {"st": states, "back": back}
        if dropped := st.dropped(self._tok, back, frame.deleted, len(tok)):
            extra["del"] = dropped
        return codes, sp, extra


def change_matrix(frames: list[Frame]) -> list[list[int]]:
    """Rows of change codes (step x position, ragged), computed by SideAnalyzer so there is one way to do it."""
    analyzer = SideAnalyzer()
    return [analyzer.add(f)["ch"] for f in frames]


def eos_cut(tokens: list[str], masked: list[bool] | None = None) -> int:
    """Index of the first unmasked end-of-text token, or len(tokens): what comes after is padding."""
    for i, t in enumerate(tokens):
        if t in EOS_TOKENS and not (masked and masked[i]):
            return i
    return len(tokens)


def _visible(tok: str, masked: bool) -> bool:
    return not masked and bool(tok.strip()) and tok not in EOS_TOKENS


def _against_final(frames: list[Frame]) -> Iterator[tuple[Frame, list[int], list[bool]]]:
    """Per frame: its positions' aligned final positions (-1: none) and whether each already holds its final token."""
    if not _is_text(frames[-1]) and any(st.has_edits(f) for f in frames):
        yield from st.against_final(frames, [display_tokens(f) for f in frames])
        return
    final = frames[-1]
    ftok, fmask = display_tokens(final), _masks(final)
    reference = Reference(ftok) if _is_text(final) else None
    for f in frames:
        checkpoint()
        tok, mask = display_tokens(f), _masks(f)
        if _is_text(f) and reference is not None:
            mapping = reference.align(tok)
        else:
            mapping = [i if i < len(ftok) else -1 for i in range(len(tok))]
        if mask is None and fmask is None:
            yield f, mapping, [j >= 0 and ftok[j] == x for j, x in zip(mapping, tok)]
        else:
            yield f, mapping, [j >= 0 and ftok[j] == x and bool(mask and mask[i]) == bool(fmask and fmask[j])
                               for i, (j, x) in enumerate(zip(mapping, tok))]


def settled_against_final(frames: list[Frame]) -> list[list[bool]]:
    """Per frame, per position: does it already hold its final token (aligned to the last frame)?"""
    return [settled for _, _, settled in _against_final(frames)] if frames else []


def settled_fraction_series(frames: list[Frame]) -> list[tuple[float, float]]:
    """(t, fraction of the final frame's visible tokens already in place) per frame; 1.0 when the final has none."""
    if not frames:
        return []
    ftok, fmask = display_tokens(frames[-1]), _hidden(frames[-1])
    wanted = {j for j in range(eos_cut(ftok, fmask)) if _visible(ftok[j], bool(fmask and fmask[j]))}
    out = []
    for f, mapping, settled in _against_final(frames):
        hits = sum(1 for j, ok in zip(mapping, settled) if ok and j in wanted)
        out.append((f.t, hits / len(wanted) if wanted else 1.0))
    return out


def visible_count(frame: Frame) -> int:
    """Visible tokens of a frame before its end-of-text: unmasked, not whitespace, not end-of-text."""
    tok, mask = display_tokens(frame), _hidden(frame)
    return sum(1 for j in range(eos_cut(tok, mask)) if _visible(tok[j], bool(mask and mask[j])))


def _content(frame: Frame, cut: int | None) -> tuple[list[str], list[Any]]:
    tok, mask = display_tokens(frame), _masks(frame)
    if cut is None:
        return tok, []
    if frame.states is not None and frame.tokens:
        return tok[:cut], list(frame.states[:cut])
    return tok[:cut], list(mask[:cut]) if mask else [False] * min(cut, len(tok))


def _ratio(a: float, b: float | None) -> float | None:
    """a / b, or None when b is not positive or the quotient is not a finite number (a recording's t can be tiny)."""
    if not b or b <= 0:
        return None
    try:
        q = a / b
    except OverflowError:
        return None
    return q if math.isfinite(q) else None


# the unit an answer's length and rates count in: the source's own count (its tokenizer's pieces, or a provider's
# completion_tokens), else what is shown: a token source's pieces (a stopped run, whose count comes only with its last
# frame, stays in the unit it raced in), a text source's words and symbols
TOKEN_UNITS = {"model": "tokenizer pieces", "text": "completion_tokens (provider's count)",
               "shown": "tokenizer pieces (those shown: no count from the source)",
               "displayed": "words and symbols shown (no count from the source)"}


def metrics(frames: list[Frame]) -> dict[str, Any]:
    """Per-side numbers, each from a timestamp or a count in the trace (None where the trace cannot say).

    ttft: first frame with a visible token (unmasked, not noise, not whitespace, not end-of-text; Mercury's
    first noisy draft counts, as that is what the viewer sees, and so does a schema 2 draft). tokens: visible
    tokens of the last frame before its end-of-text (display tokens for text sources: words and symbols).
    final_settled_at: the time from which every frame shows the final content (up to and including
    end-of-text for token sources), None when the last frame is not final (a stopped run).
    usage_tokens: the source's completion_tokens. answer_tokens: the answer's length in `token_unit`, the
    one unit this side's rates use (tokens_per_s, tokens_per_nfe, time_per_token): the source's own count
    where it gives one (the model's tokenizer pieces for local and Hugging Face models, the provider's
    completion_tokens for API sources), else the visible display tokens (a token source's pieces, in the unit it
    raced in even when stopped before its count; a text source's words and symbols). nfe: the largest frame nfe, every
    call of the network; refreshes: of those, the block-start cache refreshes. A side that started from a draft adds
    `app/analysis/revision.py` `counts`.
    """
    out: dict[str, Any] = {"ttft": None, "t_final": None, "frames": len(frames), "tokens": 0,
                           "tokens_per_s": None, "nfe": None, "tokens_per_nfe": None,
                           "final_settled_at": None, "usage_tokens": None, "answer_tokens": None,
                           "token_unit": None, "time_per_token": None, "refreshes": None}
    if not frames:
        return out
    for f in frames:
        checkpoint()
        mask = _hidden(f)
        tok = display_tokens(f)
        if any(_visible(x, bool(mask and mask[i])) for i, x in enumerate(tok)):
            out["ttft"] = f.t
            break
    final = frames[-1]
    ftok, fmask = display_tokens(final), _hidden(final)
    cut = eos_cut(ftok, fmask)
    tokens = visible_count(final)
    t_final = final.t
    nfes = [f.nfe for f in frames if f.nfe is not None]
    nfe = max(nfes) if nfes else None
    settled_at = None
    if final.final:
        content_cut = None if _is_text(final) else min(cut + 1, len(ftok))
        target = _content(final, content_cut)
        for f in reversed(frames):
            checkpoint()
            if _content(f, content_cut) != target:
                break
            settled_at = f.t
    usage = next((f.usage for f in reversed(frames) if f.usage), None)
    usage_tokens = usage.get("completion_tokens") if usage else None
    counted = isinstance(usage_tokens, (int, float)) and usage_tokens >= 0
    answer = usage_tokens if counted and isinstance(usage_tokens, (int, float)) else tokens
    unit = TOKEN_UNITS[("text" if _is_text(final) else "model") if counted else
                       ("displayed" if _is_text(final) else "shown")]
    refreshes = [f.refreshes for f in frames if f.refreshes is not None]
    out.update(t_final=t_final, tokens=tokens, tokens_per_s=_ratio(answer, t_final),
               nfe=nfe, tokens_per_nfe=_ratio(answer, nfe), final_settled_at=settled_at,
               usage_tokens=usage_tokens, answer_tokens=answer, token_unit=unit,
               time_per_token=_ratio(t_final, answer) if answer else None,
               refreshes=max(refreshes) if refreshes else None)
    out.update(rv.counts(frames))  # a side that started from a draft: kept and edited (absent without one)
    return out

