"""Be the sampler: a run of a diffusion model (the built-in twin, or a Hugging Face one) that the learner steps by
hand (app/engine/stepper.py), turned into the frames a race records and saved as a one-sided recording that the
normal player plays.

Each frame after the first says who chose its commits (`chosen_by`: user or model). Frames are stamped with the
model's own time (its passes), not the minutes the learner spent choosing, so the recording plays at the model's pace.
"""

from __future__ import annotations

import dataclasses
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from app.engine import stepper
from app.engine.diffusion import DiffusionSettings
from app.engine.pins import resolve_pins
from app.errors import UserError
from app.serving.input_limits import refusal
from app.sources.base import Source
from app.sources.local import EOS_MARK, SamplerSource, diffusion_frame, named_candidates
from app.trace.frames import Frame, Recording, clean_text, make_header, write_recording

BY_YOU = "you+"  # a saved run's source name is this and the model's: you+local-diffusion, you+hf-diffusion:ID
UNSTEPPABLE = ("{} cannot be stepped by hand: only a masked diffusion model has an order to choose; name "
               "local-diffusion or hf-diffusion:MODEL_ID_OR_PATH.")
MAX_OPEN = 32  # the most positions one block offers at once (the page has this many pickers)
WHO = {stepper.USER: "you", stepper.MODEL: "model"}  # how the canvas names who committed a position


@dataclass(frozen=True)
class HandRun:
    """A run stepped by hand so far: its source, prompt ids, engine state, the frames to record, the model's own
    seconds so far, who committed each answer position ("you", "model", "pin" or "" while masked), and a line
    saying what the last step did."""

    source: SamplerSource
    prompt: str
    ids: list[int]
    state: stepper.State
    frames: tuple[Frame, ...]
    seconds: float
    by: tuple[str, ...]
    note: str


def steppable(spec: str) -> str:
    """`spec` when it names a model the learner can step (the twin or a Hugging Face masked diffusion model); a
    UserError naming the fix for any other source, before anything is built for it."""
    if spec == "local-diffusion" or spec.startswith("hf-diffusion:"):
        return spec
    raise UserError(UNSTEPPABLE.format(repr(spec)[:80]))


def begin(source: Source, prompt: str) -> HandRun:
    """The all-masked start and the model's first pass; a UserError naming the fix for a source, prompt or settings
    it cannot step (a block longer than MAX_OPEN positions)."""
    if not isinstance(source, SamplerSource) or not isinstance(source.opts, DiffusionSettings):
        raise UserError(UNSTEPPABLE.format(source.name))
    s = source.opts
    if s.block_length > MAX_OPEN:
        raise UserError(f"A block of {s.block_length} positions is too many to choose from by hand: "
                        f"use a block length of at most {MAX_OPEN}.")
    for field, value in (("prompt", prompt or ""), ("pins", "\n".join(s.pins))):
        too_big = refusal(field, value)  # before tokenising: the work grows with the text
        if too_big:
            raise UserError(too_big)
    prompt = clean_text(prompt or "")
    ids = source.encode(prompt)
    pins = resolve_pins(source.tok, s.pins, s.gen_length)
    began = time.monotonic()
    state = stepper.start(source.model, ids, s, pins)
    seconds = time.monotonic() - began
    by = tuple("pin" if p in pins else "" for p in range(s.gen_length))
    first = diffusion_frame(source.tok, state.step, source.model.eos_id, len(ids), 0.0, sorted(pins))
    return HandRun(source, prompt, ids, state, (first,), seconds, by,
                   "Pick the positions to commit, or let the model choose.")


def named_positions(positions: list[int]) -> str:
    """Positions as the notes name them, plainly positions and not counts: "position 3", "positions 3 and 7",
    "positions 1, 4 and 9", "no position"."""
    if not positions:
        return "no position"
    if len(positions) == 1:
        return f"position {positions[0]}"
    return "positions " + ", ".join(map(str, positions[:-1])) + f" and {positions[-1]}"


def advance(run: HandRun, picks: dict[int, int | None] | None = None) -> HandRun:
    """Commits the learner's picks ({position: token id, or None for the model's guess}), or, without picks, what
    the configured rule chooses; then the model's next pass. The note compares the learner's order with the rule's."""
    rule = run.state.rule()
    began = time.monotonic()
    state = stepper.advance(run.source.model, run.state, picks)
    seconds = run.seconds + time.monotonic() - began
    # stamped when the pass this commit took from had ended (the next pass, timed with it, counts for the next frame)
    frame = diffusion_frame(run.source.tok, state.step, run.source.model.eos_id, len(run.ids), round(run.seconds, 6))
    frame.chosen_by = state.chosen_by
    by = list(run.by)
    for pos in state.step.committed:
        by[pos] = WHO[state.chosen_by or stepper.MODEL]
    for pos in state.step.remasked:
        by[pos] = ""
    scoring = run.source.opts.scoring
    if state.chosen_by == stepper.USER:
        note = (f"You committed {named_positions(state.step.committed)}; "
                f"by {scoring} the model would have committed {named_positions(rule)}.")
    else:
        note = f"The model committed {named_positions(state.step.committed)} by {scoring}."
        if state.step.remasked:
            note += f" It reopened {named_positions(state.step.remasked)}."
    if state.done:
        note += " The answer is complete: save it to play it in the player."
    return dataclasses.replace(run, state=state, frames=run.frames + (frame,), seconds=seconds, by=tuple(by),
                               note=note)


def finish(run: HandRun) -> HandRun:
    """The model commits whatever is left by its rule, one pass at a time."""
    while not run.state.done:
        run = advance(run)
    return run


def canvas(run: HandRun) -> list[tuple[str, str]]:
    """The answer so far as (text, who) pieces: committed tokens named by who committed them, the masked positions
    of the current block as [POSITION] ("open") so they match the pickers, other masked positions as "masked"."""
    frame = run.frames[-1]
    shown = set(run.state.open)
    out = []
    for pos, (text, masked) in enumerate(zip(frame.tokens, frame.masked or [False] * len(frame.tokens))):
        if not masked:
            out.append((text, run.by[pos] or "model"))
        else:
            out.append((f"[{pos}]", "open") if pos in shown else ("\u2591", "masked"))
    return out


def choices(run: HandRun) -> list[tuple[int, float, list[tuple[str, int]]]]:
    """For each masked position of the current block: (position, the model's confidence there, its candidates as
    (label, token id) best first, each label the token in quotes and its probability)."""
    tok, eos = run.source.tok, run.source.model.eos_id
    confidence = run.state.confidence()
    out = []
    for pos, cands in run.state.candidates().items():
        names = named_candidates(tok, cands, eos)
        labels = [(name if name == EOS_MARK else quoted(name)) + f" {p:.0%}" for name, p in names]
        out.append((pos, confidence[pos], list(zip(labels, [token for token, _ in cands]))))
    return out


def quoted(name: str) -> str:
    """A token string in quotes with its spaces visible and its line breaks and tabs written as \\n and \\t."""
    return "\u201c" + name.replace("\n", "\\n").replace("\t", "\\t") + "\u201d"


def recording_name() -> str:
    """A new file name that says when and that the learner sampled."""
    return f"{time.strftime('%Y%m%d-%H%M%S')}-you-sampled-{uuid.uuid4().hex[:6]}.jsonl"


def save(run: HandRun, folder: str | Path) -> Path:
    """Writes the run as a recording in `folder` (one side, named BY_YOU + the model's source name): done when the
    answer is complete, else stopped where the learner left it. Returns its path."""
    path, t = Path(folder) / recording_name(), run.frames[-1].t
    end = ({"status": "done", "t": t} if run.state.done else
           {"status": "stopped", "message": "Saved before the answer was complete.", "t": t})
    header = make_header(run.prompt, {"left": {"name": BY_YOU + run.source.name, "settings": run.source.settings()}})
    return write_recording(Recording(header, {"left": list(run.frames)}, {"left": end}, []), path)

