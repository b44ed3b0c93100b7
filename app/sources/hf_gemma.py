"""DiffusionGemma's side of `hf-diffusion:`: the source that runs it by its own generate()
(app/hf/diffusion_gemma.py) and the frames it yields, one per event of the run.

Each frame's tokens are the answer so far: the finished canvases, all accepted ("a"), then the current canvas, where
an accepted position shows its accepted token ("a") and any other the noise token the next decoder pass reads ("n").
A canvas shows first as its random start (all noise), then once a denoising step, then as generate() appended it (its
draft, all accepted). The last frame is the answer generate() returned, cut at the first end-of-text as every
diffusion side's last frame is. A later canvas's start lists its positions as `inserted`, and the last frame the
positions the cut dropped as `deleted`, so no alignment is guessed. Every frame's note says its timing was taken
with every step captured.

Started from a draft (issue 53, `GemmaSource.revise` then `stream`), the first frame is the first canvas
generate() was given: the draft's tokens shown as the draft ("d", not accepted: generate() may still re-noise them)
and noise ("n") at the re-noised positions; every frame carries `revision` (app/sources/revise.py
`revision_letters`, by token id), a noise position within the draft reading as re-noised.
"""

from __future__ import annotations

import functools
import threading
from dataclasses import replace
from typing import Any, Callable, Iterator

import numpy as np

from app.engine.draft import Plan, Revision
from app.errors import counted
from app.hf.diffusion_gemma import CAPTURED, GemmaStep, resolve
from app.sources.local import EOS_MARK, SamplerSource, legible, named_candidates
from app.sources.revise import plan_for, revision_letters
from app.trace.frames import Clock, Frame, clean_text


def strings(tok: Any, ids: np.ndarray, eos_ids: list[int]) -> list[str]:
    """Each token's display string, end-of-text as EOS_MARK."""
    shown = tok.token_strings([int(i) for i in ids])
    return [EOS_MARK if int(i) in eos_ids else s for i, s in zip(ids, shown)]


def answer_length(ids: np.ndarray, eos_ids: list[int]) -> int:
    """Tokens before the first end-of-text (all of them when there is none)."""
    hits = np.flatnonzero(np.isin(ids, eos_ids))
    return int(hits[0]) if len(hits) else len(ids)


def note(st: GemmaStep, canvas_length: int) -> str:
    """The frame's line: which canvas and step, how much is accepted, and how it was timed."""
    head = f"Canvas {st.canvas + 1} ({counted(canvas_length, 'token')})"
    if st.done:
        return f"Done: {counted(len(st.ids), 'token')} in {counted(st.canvas + 1, 'canvas', 'canvases')}; {CAPTURED}."
    if st.entropy is None:  # no logits: a canvas's random start (before its first step) or the canvas appended
        what = f"appended after {st.denoising} steps" if st.denoising else "its random start"
        return f"{head}: {what}; {CAPTURED}."
    accepted = st.states[-canvas_length:].count("a")
    return (f"{head}, step {st.denoising}: {accepted} accepted, mean entropy {float(np.mean(st.entropy)):.2f}; "
            f"{CAPTURED}.")


def fields(tok: Any, st: GemmaStep, eos_ids: list[int], prompt_len: int, canvas_length: int,
           plan: Plan | None = None) -> dict[str, Any]:
    """A step's display fields: strings, states, confidences, candidates, entropies (a denoising step's canvas),
    the `revision` letters when the run started from `plan`'s draft; the last cut at end-of-text, with text."""
    cands = [[pos, named_candidates(tok, c, eos_ids[0] if eos_ids else -1)] for pos, c in sorted(st.candidates.items())]
    n = answer_length(st.ids, eos_ids) if st.done else len(st.ids)
    shown = [legible(t) if state == "n" else t for t, state in zip(strings(tok, st.ids[:n], eos_ids), st.states[:n])]
    out: dict[str, Any] = {"tokens": shown, "states": st.states[:n],
           "confidence": np.round(st.confidence[:n], 4).tolist(), "committed": st.committed or None,
           "candidates": cands or None, "note": note(st, canvas_length)}
    if plan is not None:
        out["revision"] = revision_letters(plan, st.ids[:n], [state == "n" for state in st.states[:n]])
    if st.entropy is not None:  # a denoising step: the current canvas's positions, none for the finished ones
        done = len(st.ids) - len(st.entropy)
        out["entropy"] = [None] * done + np.round(st.entropy.astype(np.float64), 4).tolist()
    if st.entropy is None and not st.denoising and st.canvas:  # a later canvas's start: its positions are new
        out["inserted"] = list(range(len(st.ids) - canvas_length, len(st.ids)))
    if st.done:
        out.update(text=tok.decode([int(i) for i in st.ids[:n]]),
                   usage={"prompt_tokens": prompt_len, "completion_tokens": n},
                   deleted=list(range(n, len(st.ids))) or None)  # what end-of-text cut from the appended canvases
    return out


class GemmaSource(SamplerSource):
    """A DiffusionGemma model run by its own generate(), one frame per event (module docstring); the settings left
    out are read back from the model's generation config once it loads, so its header keeps the values that ran."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.opts = resolve(self.model.model, self.opts)

    def revise(self, revision: Revision, prompt: str) -> Plan:
        """Its plan for `revision` (app/sources/revise.py `plan_for`), kept for the next `stream`: the draft in
        DiffusionGemma's tokenizer, one canvas's worth (generate() seeds only its first canvas; the plan's note says
        so when the draft is longer), `unsure` read from one forward pass (`surprisal`: the encoder's call and the
        decoder's, counted in the run's nfe)."""
        from app.hf import diffusion_gemma

        m = self.model
        ids = [int(i) for i in self.tok.encode(clean_text(revision.text))]
        tokens = ids[:m.canvas_length]
        plan = plan_for(revision, self.name, tokens, "revise", m.canvas_length,
                        lambda: diffusion_gemma.surprisal(m, self.encode(prompt), tokens, revision.seed)[0],
                        doubt_passes=2)
        if len(ids) > m.canvas_length:
            plan = replace(plan, note=f"DiffusionGemma's generate() starts only its first canvas from a draft: it "
                                      f"kept the draft's first {counted(m.canvas_length, 'token')} and writes the "
                                      f"other {len(ids) - m.canvas_length} afresh.")
        return self.planned(plan)

    def stream(self, prompt: str, cancel: threading.Event, defer: bool = False) -> Iterator[Frame]:
        """Frames stamped on this source's clock, from its plan's draft after `revise`; with `defer`, each frame's
        strings wait for `Frame.ready()`."""
        from app.hf import diffusion_gemma

        clock = Clock(self.plan.seconds if self.plan is not None else 0.0)  # a draft's choosing passes count
        ids = self.encode(prompt)
        m = self.model
        plan = self.plan if self.plan is not None and self.plan.mode == "revise" else None
        draft, renoised, spent = (plan.tokens, plan.renoised, plan.nfe) if plan is not None else ((), (), 0)
        for st in diffusion_gemma.run(m, ids, self.opts, cancel, draft, renoised, spent):
            frame = Frame(t=clock(), step=st.step, final=st.done, nfe=st.nfe, refreshes=st.refreshes)
            frame.pending = functools.partial(fields, self.tok, st, m.eos_ids, len(ids), m.canvas_length, plan)
            yield frame if defer else frame.ready()


def gemma_prompt(chat: bool) -> Callable[[Any, str], list[int]]:
    """The prompt as DiffusionGemma reads it: its chat template when asked and it has one, else the ids its tokenizer
    gives the text (with the special tokens it adds itself)."""
    def ids(tok: Any, text: str) -> list[int]:
        if chat and getattr(tok.tok, "chat_template", None):
            return tok.prompt_ids(text, True)
        return [int(i) for i in tok.tok.encode(text)]

    return ids
