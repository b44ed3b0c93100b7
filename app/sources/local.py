"""`local-diffusion`, `local-uniform` and `local-ar`: the built-in twin models run by the samplers, one Frame per step.

Frames show the answer region only. A committed end-of-text shows as EOS_MARK while the sampler runs,
so EOS flooding (end-of-text filling the right of the answer early) is visible; the final frame is cut
at the first end-of-text and carries the answer text. The Hugging Face sources reuse these frame builders.
"""

from __future__ import annotations

import dataclasses
import functools
import threading
import unicodedata
from typing import Any, Callable, Iterator

import numpy as np

from app.engine import autoregressive, diffusion, uniform
from app.engine.autoregressive import TWIN_AR, ARSettings
from app.engine.diffusion import TWIN_DIFFUSION, DiffusionSettings
from app.engine.draft import Plan, Revision, causal_surprisal, surprisal
from app.engine.options import coerce, lines
from app.engine.pins import AR_PINS, parse_pin, resolve_pins
from app.engine.sampling import check_prompt
from app.engine.uniform import UniformSettings
from app.errors import UserError
from app.sources.base import SourceBase, SourceKind, register
from app.sources.revise import header_entry, plan_for, revision_letters
from app.trace.frames import Clock, Frame, clean_text

EOS_MARK = "<eos>"
UNREADABLE = "\u00b7"  # a middle dot: what a noise token shows for each character that is no text (`legible`)


def legible(piece: str) -> str:
    """A noise token as the panel shows it: each character that is no visible text (a lone byte's replacement
    character, a control character, a newline) drawn as UNREADABLE, one for one, so the token keeps its width and a
    random draw never shows raw bytes or breaks the line. Why: noise is random, and should look random, not broken."""
    return "".join(UNREADABLE if c == "\ufffd" or unicodedata.category(c)[0] in "CZ" and c != " " else c
                   for c in piece)


def sampler_settings(cls: type, given: dict[str, Any], source: str, base: Any = None) -> Any:
    """A sampler's settings from the page's or the CLI's raw values (`coerce`, with pins read and checked); what
    the source does not honour was refused before (app/sources/base.py `honoured`)."""
    return coerce(cls, given, source, base, read_tuple=as_pins)


def as_pins(value: Any) -> tuple[str, ...]:
    """Pins from the CLI (a list) or the page (one "POSITION:TEXT" a line), each checked for its form."""
    pins = tuple(clean_text(v) for v in lines(value))
    for spec in pins:
        parse_pin(spec)
    return pins


def _strings(tok: Any, ids: np.ndarray, show: np.ndarray, eos_id: int) -> list[str]:
    """Display strings: "" where hidden, EOS_MARK for end-of-text, each run of other tokens decoded together."""
    out = [""] * len(ids)
    run: list[int] = []

    def flush() -> None:
        if run:
            for i, piece in zip(run, tok.token_strings([int(ids[j]) for j in run])):
                out[i] = piece
            run.clear()

    for i in range(len(ids)):
        if show[i] and ids[i] != eos_id:
            run.append(i)
            continue
        flush()
        if show[i]:
            out[i] = EOS_MARK
    flush()
    return out


def named_candidates(tok: Any, cands: list[tuple[int, float]], eos_id: int) -> list[list[Any]]:
    """(token id, probability) candidates as [display string, probability rounded to 4 places]."""
    names = tok.token_strings([i for i, _ in cands])
    return [[EOS_MARK if i == eos_id else name, round(p, 4)] for (i, p), name in zip(cands, names)]


def _diffusion_fields(tok: Any, st: diffusion.Step, eos_id: int, prompt_len: int,
                      pinned: list[int] | None, plan: Plan | None = None) -> dict[str, Any]:
    """A diffusion Step's display fields: strings, masks, confidences, candidates (the last cut at end-of-text),
    `pinned`, the positions given before the run (the caller passes them for the first step only), and with a
    revision's `plan` each token's `revision` letter."""
    out = _diffusion_display(tok, st, eos_id, prompt_len, pinned)
    if plan is not None:
        n = len(out["tokens"])
        out["revision"] = revision_letters(plan, st.ids[:n], st.masked[:n])
    return out


def _diffusion_display(tok: Any, st: diffusion.Step, eos_id: int, prompt_len: int,
                       pinned: list[int] | None) -> dict[str, Any]:
    """`_diffusion_fields` but the revision letters."""
    cands: list[list[Any]] | None = [[pos, named_candidates(tok, c, eos_id)]
                                     for pos, c in sorted(st.candidates.items())] or None
    if not st.done:
        return {"tokens": _strings(tok, st.ids, ~st.masked, eos_id), "masked": st.masked.tolist(),
                "confidence": np.round(st.confidence, 4).tolist(), "committed": st.committed or None,
                "remasked": st.remasked or None, "candidates": cands, "pinned": pinned or None}
    n = diffusion.answer_length(st.ids, st.masked, eos_id)
    return {"tokens": _strings(tok, st.ids[:n], ~st.masked[:n], eos_id), "masked": st.masked[:n].tolist(),
            "confidence": np.round(st.confidence[:n], 4).tolist(), "text": tok.decode([int(i) for i in st.ids[:n]]),
            "committed": [i for i in st.committed if i < n] or None,
            "remasked": [i for i in st.remasked if i < n] or None,
            "candidates": [c for c in cands or [] if c[0] < n] or None,
            "usage": {"prompt_tokens": prompt_len, "completion_tokens": n},
            "pinned": [i for i in pinned or () if i < n] or None}


def _ar_fields(tok: Any, st: autoregressive.ARStep, eos_id: int, prompt_len: int,
              plan: Plan | None = None) -> dict[str, Any]:
    """An AR step's display fields: the token strings, confidences, candidates, and the text when it is done; with a
    revision's `plan` (a prefix kept), the `revision` letters of the kept prefix and what it writes after it."""
    out = _ar_display(tok, st, eos_id, prompt_len)
    if plan is not None:
        out["revision"] = revision_letters(plan, st.ids, [False] * len(st.ids)) or None
    return out


def _ar_display(tok: Any, st: autoregressive.ARStep, eos_id: int, prompt_len: int) -> dict[str, Any]:
    """`_ar_fields` but the revision letters."""
    return {"tokens": tok.token_strings(st.ids) if st.ids else [], "confidence": [round(c, 4) for c in st.confidence],
            "committed": [st.step - 1] if st.step and len(st.ids) == st.step else None,
            "candidates": [[st.step - 1, named_candidates(tok, st.candidates, eos_id)]] if st.candidates else None,
            "text": tok.decode(st.ids) if st.done else None,
            "usage": {"prompt_tokens": prompt_len, "completion_tokens": len(st.ids)} if st.done else None}


def _uniform_fields(tok: Any, st: uniform.UniformStep, eos_id: int, prompt_len: int,
                    plan: Plan | None = None) -> dict[str, Any]:
    """A uniform-state step's display fields: every position's token, the random ones too, with its state ("a"
    accepted, "n" noise: a random token not yet accepted), each predicted position's entropy and the candidates of
    those accepted; the last step cut at end-of-text, with the text; with a revision's `plan`, the `revision`
    letters."""
    out = _uniform_display(tok, st, eos_id, prompt_len)
    if plan is not None:
        n = len(out["tokens"])
        out["revision"] = revision_letters(plan, st.ids[:n], ~st.accepted[:n])
    return out


def _uniform_display(tok: Any, st: uniform.UniformStep, eos_id: int, prompt_len: int) -> dict[str, Any]:
    """`_uniform_fields` but the revision letters."""
    cands: list[list[Any]] = [[pos, named_candidates(tok, c, eos_id)] for pos, c in sorted(st.candidates.items())]
    if not st.done:
        tokens = _strings(tok, st.ids, st.accepted, eos_id)  # runs of accepted tokens decode together, as they read
        noise = np.flatnonzero(~st.accepted)  # each random token on its own, so it never alters an accepted one
        for i in noise:
            tokens[i] = legible(tok.token_strings([int(st.ids[i])])[0])
        return {"tokens": tokens, "states": "".join("a" if a else "n" for a in st.accepted),
                "committed": st.newly or None, "candidates": cands or None, "entropy": _entropies(st.entropy)}
    ids = uniform.answer(st, eos_id)
    n = len(ids)
    return {"tokens": _strings(tok, ids, np.ones(n, dtype=bool), eos_id), "states": "a" * n,
            "text": tok.decode(ids.tolist()),
            "committed": [i for i in st.newly if i < n] or None,
            "candidates": [c for c in cands if c[0] < n] or None, "entropy": _entropies(st.entropy[:n]),
            "usage": {"prompt_tokens": prompt_len, "completion_tokens": n}}


def _entropies(entropy: np.ndarray) -> list[float | None] | None:
    """Each position's entropy rounded to 4 places, None where nothing was predicted (nan); None when none was."""
    if not np.isfinite(entropy).any():
        return None
    return [round(float(e), 4) if np.isfinite(e) else None for e in entropy]


def _framed(t: float, st: Any, build: Callable[[], dict[str, Any]], defer: bool,
            refreshes: int | None = None) -> Frame:
    """The frame of one sampler step stamped at `t`; its display fields are built now, or by whoever calls
    `Frame.ready()` when `defer` (the race's recorder thread), so decoding stays off the model's clock. `refreshes`:
    a diffusion step's block-start passes (the other samplers count none)."""
    frame = Frame(t=t, step=st.step, final=st.done, nfe=st.nfe, refreshes=refreshes)
    frame.pending = build
    return frame if defer else frame.ready()


def diffusion_frame(tok: Any, st: diffusion.Step, eos_id: int, prompt_len: int, t: float,
                    pinned: list[int] | None = None, plan: Plan | None = None) -> Frame:
    """One diffusion Step as the ready Frame `diffusion_frames` would make of it, stamped at `t` (for a run stepped
    by hand, app/lessons/by_hand.py, or a family's own sampler); `pinned`: the pinned positions, passed for the first
    step only; `plan`: a revision's, whose `revision` letters each frame then carries."""
    return _framed(t, st, functools.partial(_diffusion_fields, tok, st, eos_id, prompt_len, pinned, _revising(plan)),
                   False, st.refreshes)


def _revising(plan: Plan | None) -> Plan | None:
    """The plan a sampler starts from: a `revise` plan; None for no draft or a side that writes from nothing."""
    return plan if plan is not None and plan.mode != "cannot" else None


def diffusion_frames(model: Any, tok: Any, prompt_ids: list[int], s: DiffusionSettings,
                     cancel: threading.Event, clock: Clock, defer: bool = False,
                     plan: Plan | None = None) -> Iterator[Frame]:
    """Runs the diffusion sampler and turns each Step into a Frame (the last cut at end-of-text, with text); the
    first frame lists the pinned positions, which stay as given in every later one. With a revision's `plan` the
    run starts from its draft, the re-noised positions masked, and each frame carries its `revision` letters."""
    pins = resolve_pins(tok, s.pins, s.gen_length)
    draft = _revising(plan)
    for st in diffusion.generate(model, prompt_ids, s, cancel, pins, draft=draft):
        given = sorted(pins) if st.step == 0 else None
        build = functools.partial(_diffusion_fields, tok, st, model.eos_id, len(prompt_ids), given, draft)
        yield _framed(clock(), st, build, defer, st.refreshes)


def ar_frames(model: Any, tok: Any, prompt_ids: list[int], s: ARSettings,
              cancel: threading.Event, clock: Clock, defer: bool = False,
              plan: Plan | None = None) -> Iterator[Frame]:
    """Runs the AR sampler: one Frame per token, the last final with the answer text. With a revision's `prefix`
    plan it keeps the draft's first `kept_prefix` tokens (a first frame shows them) and writes the rest after them."""
    draft = _revising(plan)
    if draft is None:
        for st in autoregressive.generate(model, prompt_ids, s, cancel):
            build = functools.partial(_ar_fields, tok, st, model.eos_id, len(prompt_ids))
            yield _framed(clock(), st, build, defer)
        return
    yield from _ar_prefix_frames(model, tok, prompt_ids, s, cancel, clock, defer, draft)


def _ar_prefix_frames(model: Any, tok: Any, prompt_ids: list[int], s: ARSettings, cancel: threading.Event,
                      clock: Clock, defer: bool, draft: Plan) -> Iterator[Frame]:
    """The AR sampler after a kept prefix of the draft: each step's answer is the prefix then what it wrote, its nfe
    counting the passes that chose the positions; the prefix alone when it fills the answer."""
    head = list(draft.tokens[: draft.kept_prefix or 0])
    start = autoregressive.ARStep(0, head, [1.0] * len(head), draft.nfe, done=len(head) >= s.gen_length)
    yield _framed(clock(), start, functools.partial(_ar_fields, tok, start, model.eos_id, len(prompt_ids), draft),
                  defer)
    if start.done:
        return
    rest = dataclasses.replace(s, gen_length=s.gen_length - len(head), min_length=max(0, s.min_length - len(head)))
    for st in autoregressive.generate(model, [*prompt_ids, *head], rest, cancel):
        whole = autoregressive.ARStep(len(head) + st.step, head + st.ids, [1.0] * len(head) + st.confidence,
                                      st.nfe + draft.nfe, st.done, st.candidates)
        build = functools.partial(_ar_fields, tok, whole, model.eos_id, len(prompt_ids), draft)
        yield _framed(clock(), whole, build, defer)


def uniform_frames(model: Any, tok: Any, prompt_ids: list[int], s: UniformSettings,
                   cancel: threading.Event, clock: Clock, defer: bool = False,
                   plan: Plan | None = None) -> Iterator[Frame]:
    """Runs the uniform-state sampler: the all-noise canvas first, then one Frame per call of the network. With a
    revision's `plan` the canvas starts from its draft, the re-noised positions noise, each frame with its letters."""
    draft = _revising(plan)
    for st in uniform.generate(model, prompt_ids, s, cancel, draft=draft):
        build = functools.partial(_uniform_fields, tok, st, model.eos_id, len(prompt_ids), draft)
        yield _framed(clock(), st, build, defer)


FRAMES: dict[type, Callable[..., Iterator[Frame]]] = {
    DiffusionSettings: diffusion_frames, UniformSettings: uniform_frames, ARSettings: ar_frames}


class SamplerSource(SourceBase):
    """A model + tokenizer (loaded once per process) driven by the diffusion or the AR sampler."""

    cpu_bound = True  # a race gives this side one of the shared CPU slots (app/race/compute.py)
    defers = True  # stream(defer=True) leaves decoding to Frame.ready(), off this source's clock

    def __init__(self, name: str, load: Callable[[], tuple[Any, Any]], settings: Any,
                 prompt_ids: Callable[[Any, str], list[int]], extra: dict[str, Any] | None = None,
                 applied: tuple[str, ...] | None = None) -> None:
        """`applied`: the settings of `settings` this source's backend applies (None: all), the only ones its
        recording's header keeps; `extra`: what else it records (the model, its device)."""
        self.name = name
        self.model, self.tok = load()
        if isinstance(settings, DiffusionSettings):  # a cache the model cannot keep is neither run nor recorded
            settings = diffusion.honoured(self.model, settings)
        self.opts = settings
        self._prompt_ids = prompt_ids
        self.extra = extra or {}
        self.applied = applied

    def settings(self) -> dict[str, Any]:
        ran = self.opts.to_json()
        return {**{k: v for k, v in ran.items() if self.applied is None or k in self.applied}, **self.extra}

    def encode(self, prompt: str) -> list[int]:
        """The prompt's token ids as this source feeds them to its model; a UserError when it is empty."""
        if not prompt.strip():
            raise UserError("The prompt is empty: type a prompt.")
        return self._prompt_ids(self.tok, clean_text(prompt))

    def fits(self, prompt: str) -> None:
        """Raises the UserError a run of these settings raises before its first pass (the sampler's own check): the
        prompt empty, or it and the answer length past the model's context. For frames this server did not make (a
        race run in a visitor's browser), whose settings must meet the same bounds as a race run here."""
        check_prompt(self.encode(prompt), self.opts.gen_length, self.model.max_len)

    def check_pins(self) -> None:
        """Raises the UserError `diffusion_frames` raises for these settings' pins before its first pass (the pins
        resolved by this model's tokenizer against the answer length); nothing without pins."""
        pins = getattr(self.opts, "pins", ())
        if pins:
            resolve_pins(self.tok, pins, self.opts.gen_length)

    def revise(self, revision: Revision, prompt: str) -> Plan:
        """Its plan for `revision` (app/sources/revise.py `plan_for`), the draft in its own tokenizer: in place on a
        masked or uniform model, `unsure` read from one forward pass; a prefix kept on an AR model, `unsure` read
        left to right. The families that decode their own way (LLaDA2's pipeline, DiffusionGemma's generate) plan
        with a `revise` of their own (app/sources/hf.py, hf_gemma.py)."""
        ids, draft = self.encode(prompt), list(self.tok.encode(clean_text(revision.continuing(prompt))))
        if isinstance(self.opts, ARSettings):
            plan = plan_for(revision, self.name, draft, "prefix", self.opts.gen_length,
                            lambda: causal_surprisal(self.model, ids, draft), doubt_passes=len(draft))
        else:
            plan = plan_for(revision, self.name, draft, "revise", self.opts.gen_length,
                            lambda: surprisal(self.model, ids, draft))
        return self.planned(plan)

    def draft_json(self) -> dict[str, Any] | None:
        """Its plan as the header keeps it, the draft's tokens as this tokenizer shows them."""
        if self.plan is None:
            return None
        return header_entry(self.plan, self.tok.token_strings(list(self.plan.tokens)) if self.plan.tokens else None)

    def stream(self, prompt: str, cancel: threading.Event, defer: bool = False) -> Iterator[Frame]:
        """Frames stamped on this source's clock; with `defer`, each frame's strings wait for `Frame.ready()`; after
        `revise`, the run starts from its plan."""
        clock = Clock(self.plan.seconds if self.plan is not None else 0.0)  # a draft's choosing passes count
        ids = self.encode(prompt)
        yield from FRAMES[type(self.opts)](self.model, self.tok, ids, self.opts, cancel, clock, defer, self.plan)


@functools.lru_cache(maxsize=4)
def twin(kind: str, folder: str | None = None) -> tuple[Any, Any]:
    """The shipped twin ("diffusion", "uniform" or "ar") and its tokenizer, loaded once per process."""
    try:
        from app.engine.model import DEFAULT_MODELS_DIR, load_twin

        return load_twin(kind, folder or DEFAULT_MODELS_DIR)
    except UserError:
        raise
    except (OSError, ValueError, KeyError, ImportError) as e:
        raise UserError(f"The built-in {kind} model could not be loaded ({type(e).__name__}): restore assets/models/ "
                        "from the repository or retrain it with python -m app.training.train.") from None


def _plain_prompt(tok: Any, prompt: str) -> list[int]:
    """The twins continue text: the prompt as typed, without trailing spaces (a lone space token derails them)."""
    return list(tok.encode(prompt.rstrip()))


def make_local_diffusion(**settings: Any) -> SamplerSource:
    s = sampler_settings(DiffusionSettings, settings, "local-diffusion", base=TWIN_DIFFUSION)
    return SamplerSource("local-diffusion", lambda: twin("diffusion"), s, _plain_prompt)


def make_local_uniform(**settings: Any) -> SamplerSource:
    s = sampler_settings(UniformSettings, settings, "local-uniform")
    return SamplerSource("local-uniform", lambda: twin("uniform"), s, _plain_prompt)


def make_local_ar(**settings: Any) -> SamplerSource:
    s = sampler_settings(ARSettings, settings, "local-ar", base=TWIN_AR)
    return SamplerSource("local-ar", lambda: twin("ar"), s, _plain_prompt)


# The twins' settings that the visitor's browser races exactly as these sources do (app/site/js/, the static site's
# one JavaScript copy of the samplers, with numpy's seeded generator in app/site/js/rng.js): the site writes their
# declarations into twins.json for its page's controls and race.js's checks, and the served page's browser race
# (app/ui/browser_race.py `spec_of`) marks them, so the three read one list. Pins race on the server only.
BROWSER_SETTINGS: dict[str, tuple[str, ...]] = {
    "local-diffusion": ("gen_length", "steps", "block_length", "scoring", "schedule", "temperature", "top_k",
                        "threshold", "factor", "filter", "remask", "eos_discount", "no_repeat", "no_repeat_ngram",
                        "min_gap", "min_length", "stop_at_eos", "prefix_cache", "dual_cache", "lookahead", "seed"),
    "local-ar": ("gen_length", "temperature", "top_k", "top_p", "no_repeat", "no_repeat_ngram", "min_length",
                 "stop_at_eos", "seed"),
}

register(SourceKind(prefix="local-diffusion", make=make_local_diffusion, label="Built-in diffusion twin",
                    options=(TWIN_DIFFUSION,)))
register(SourceKind(prefix="local-uniform", make=make_local_uniform,
                    label="Built-in uniform-state diffusion twin (starts from noise)", options=(UniformSettings(),)))
register(SourceKind(prefix="local-ar", make=make_local_ar, label="Built-in autoregressive twin",
                    options=(TWIN_AR,), why_not={"pins": AR_PINS}))
