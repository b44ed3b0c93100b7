"""The "Be the sampler" box: the learner steps the built-in diffusion twin by hand (app/lessons/by_hand.py), choosing
which masked positions of the current block to commit (by clicking them on the canvas, or a candidate in their picker),
and saves the run to their library to play it in the player.

Every model string reaches the page through Gradio components that escape it (the canvas's HighlightedText, each
position's Radio choices); the page's runs are kept in a HandRuns (app/ui/hand_runs.py), each under a ticket that only
its session's gr.State holds, so two visitors never share one, and what a visitor keeps is bounded.
"""

from __future__ import annotations

import contextlib
import threading
from pathlib import Path
from typing import Any, Callable, Iterator

import gradio as gr

from app.engine import sampling
from app.engine.diffusion import SCORINGS
from app.errors import UserError
from app.lessons import by_hand
from app.lessons.prompts import STORY
from app.race.compute import COMPUTE
from app.trace.store import make_room, user_dir, written
from app.ui.budgets import queued
from app.ui.events import QUIET
from app.ui.hand_runs import ENDED, HandRuns
from app.ui.sources_ui import shown_backend
from app.ui.visitor import Visitor, visitor_source
from app.view.theme import THEME, light

LEAVE = "-"  # a picker's value while its position stays masked
TWIN = "local-diffusion"  # the model the box steps unless the learner names a Hugging Face one
HAND_LONGEST = 64  # the longest answer offered: the learner commits every token by hand
HAND_LENGTHS = [n for n in sampling.LENGTHS if n <= HAND_LONGEST]
HAND_BLOCKS = [b for b in sampling.BLOCKS if b <= by_hand.MAX_OPEN]  # a block's open positions all get a picker
COLOURS = {who: light(name) for who, name in THEME["by_hand"].items()}  # who committed each canvas piece (theme.json)


@contextlib.contextmanager
def compute_slot() -> Iterator[None]:
    """Holds one of the CPU slots races and sweeps share (app/race/compute.py) while the model runs, first come first
    served, so hand-stepped runs cannot crowd out the races' local models."""
    COMPUTE.acquire(1, threading.Event())
    try:
        yield
    finally:
        COMPUTE.release(1)


def read_picks(run: by_hand.HandRun, values: list[Any]) -> dict[int, int | None]:
    """The learner's picks from the position pickers, in the order the run offered its open positions."""
    picks: dict[int, int | None] = {}
    for pos, value in zip(run.state.open, values):
        if value in (None, "", LEAVE):
            continue
        try:
            picks[pos] = int(value)
        except (TypeError, ValueError):
            raise UserError(f"Position {pos} has no candidate {str(value)[:20]!r}: pick one from its list.") from None
    return picks


def toggle(run: by_hand.HandRun, index: Any, values: list[Any]) -> list[Any]:
    """Clicking a piece of the canvas: an open position's picker takes the model's guess there, or, when it already
    has a pick, goes back to leaving it masked; the other pickers stay as they are."""
    out: list[Any] = [gr.skip()] * by_hand.MAX_OPEN
    open_ = run.state.open
    if isinstance(index, int) and index in open_:
        slot = open_.index(index)
        out[slot] = LEAVE if values[slot] not in (None, "", LEAVE) else str(run.state.guesses()[index])
    return out


def board(run: by_hand.HandRun, note: str | None = None, ticket: Any = None) -> list[Any]:
    """The box's outputs for a run: its ticket (a new run's; else the state stays), the canvas, the note, and one
    picker per open position (the rest hidden)."""
    shown = by_hand.choices(run)
    pickers = []
    for i in range(by_hand.MAX_OPEN):
        if i < len(shown):
            pos, confidence, cands = shown[i]
            pickers.append(gr.update(visible=True, value=LEAVE,
                                     label=f"Position {pos} \u00b7 confidence {confidence:.0%}",
                                     choices=[("leave masked", LEAVE)] + [(label, str(t)) for label, t in cands]))
        else:
            pickers.append(gr.update(visible=False, value=LEAVE, choices=[("leave masked", LEAVE)]))
    return [gr.skip() if ticket is None else ticket, gr.update(value=by_hand.canvas(run)), note or run.note, *pickers]


def said(text: str, extra: int = 0) -> list[Any]:
    """The box's outputs (and `extra` more) left as they are but for the note, which says `text`."""
    return [gr.skip(), gr.skip(), text, *[gr.skip()] * (by_hand.MAX_OPEN + extra)]


def whose(visitor: Visitor) -> str | None:
    """Whose cap a visitor's runs count against: on a served page their client address (else their owner id); on a
    local page nobody's (the visitor is the host)."""
    if not visitor.policy.served:
        return None
    return visitor.address or visitor.owner or "unknown"


def ended(ticket: Any, extra: int = 0) -> list[Any]:
    """What a step says without a run: press Start first, or (with a ticket) that the run has ended."""
    return said(ENDED if ticket else "Press Start first.", extra)


def hand_settings(visitor: Visitor, spec: str, settings: dict[str, Any]) -> dict[str, Any]:
    """The box's settings that the model's backend honours (the learned filter only the twin ships); a UserError
    when that backend has no order to step by hand (LLaDA2.x, which diffusers' pipeline decodes)."""
    backend = shown_backend(visitor.policy, *spec.partition(":")[::2])
    if backend is None or "scoring" not in backend.names:
        raise UserError(by_hand.UNSTEPPABLE.format(repr(spec)[:80]))
    return {k: v for k, v in settings.items() if k in backend.names}


class HandBox:
    """The box's handlers and the page's runs they step (kept in a HandRuns that goes with the page); each
    session's gr.State holds only its run's ticket. `show(path)` is the player's update for a recording."""

    def __init__(self, show: Callable[[Path], Any]) -> None:
        self.runs = HandRuns()
        self.show = show

    def kept(self, ticket: Any) -> by_hand.HandRun | None:
        """The run a session's ticket names; None before Start or once it has ended."""
        return self.runs.get(ticket) if ticket else None

    def on_start(self, visitor: Visitor, prompt_text: str, gen_length: Any, block_length: Any, rule: str,
                 pinned: str, model_name: str) -> list[Any]:
        """Start: opens a stepped run of the chosen model on the prompt, the model's rule committing one position a
        pass, and keeps it under a new ticket (ending the visitor's least recently used run when they keep all they
        may)."""
        settings = {"gen_length": gen_length, "block_length": block_length, "scoring": rule, "temperature": 0.0,
                    "threshold": 0.0, "filter": 0.0,  # one commit a pass by the rule, so its order is plain to see
                    "pins": pinned or ""}
        try:
            spec = by_hand.steppable((model_name or "").strip() or TWIN)
            with compute_slot():
                source = visitor_source(visitor)(spec, **hand_settings(visitor, spec, settings))
                run = by_hand.begin(source, prompt_text or "")
            return board(run, ticket=self.runs.keep(whose(visitor), run))
        except UserError as e:
            return said(str(e))

    def _step(self, ticket: Any, picks: Callable[[by_hand.HandRun], Any]) -> list[Any]:
        """One step of the ticket's run: commits `picks(run)` (None: the model's rule chooses), or says why not."""
        current_run = self.kept(ticket)
        if current_run is None:
            return ended(ticket)
        try:
            with compute_slot():
                run = by_hand.advance(current_run, picks(current_run))
        except UserError as e:
            return said(str(e))
        self.runs.put(ticket, run)
        return board(run)

    def on_commit(self, ticket: Any, *values: Any) -> list[Any]:
        """Commit my picks: the positions and candidates the learner chose."""
        return self._step(ticket, lambda r: read_picks(r, list(values)))

    def on_model(self, ticket: Any) -> list[Any]:
        """Let the model choose: one step by its rule."""
        return self._step(ticket, lambda r: None)

    def on_canvas(self, ticket: Any, evt: gr.SelectData, *values: Any) -> list[Any]:
        """A click on a position of the canvas opens or closes its picker."""
        current_run = self.kept(ticket)
        if current_run is None:
            return [gr.skip()] * by_hand.MAX_OPEN
        return toggle(current_run, evt.index, list(values))

    def on_save(self, visitor: Visitor, ticket: Any) -> list[Any]:
        """Finish and save: the rest of the run by the model's rule, saved in the visitor's recordings and shown in
        the player."""
        current_run = self.kept(ticket)
        if current_run is None:
            return ended(ticket, extra=2)
        try:
            with compute_slot():
                finished = by_hand.finish(current_run)
            self.runs.put(ticket, finished)
            make_room(visitor.owner, visitor.address)
            folder = user_dir(visitor.owner)
            folder.mkdir(parents=True, exist_ok=True)
            path = by_hand.save(finished, folder)
            written(visitor.owner, visitor.address, path)
        except (UserError, OSError) as e:
            return said(f"Could not save the run: {e.strerror or e}." if isinstance(e, OSError) else str(e), extra=2)
        note_text = f"Saved as {path.name} in your recordings; it is in the player above."
        return [*board(finished, note_text), self.show(path), str(path)]


def sampler_box(handler: Callable[[Callable[..., Any]], Callable[..., Any]], owner: Any, player: Any, current: Any,
                show: Callable[[Path], Any]) -> Any:
    """Builds the box where it is called, inside the open Blocks, and wires it; returns the save event, for the page
    to refresh its library after. `handler(fn)` makes a Gradio handler of `fn(visitor, *values)` (the page's
    as_visitor); `show(path)` is the player's update for a recording."""
    with gr.Accordion("Be the sampler: choose the order yourself", open=False, elem_id="sampler"):
        gr.Markdown("The diffusion model proposes; you decide. Each step it shows its top candidates and its "
                    "confidence for every masked position of the current block: click the positions to commit "
                    "(and, if you like, pick their candidates below), or let the model choose by its rule, and "
                    "compare your order with its own. Save the run to play it back in the player; "
                    "your choices are marked as yours.")
        with gr.Row():
            prompt = gr.Textbox(value=STORY, label="Prompt", lines=1, max_lines=3, elem_id="sampler-prompt", scale=4)
            length = gr.Dropdown(HAND_LENGTHS, value=32, label="Answer length", elem_id="sampler-length", scale=1)
            block = gr.Dropdown(HAND_BLOCKS, value=16, label="Block length", elem_id="sampler-block", scale=1)
            scoring = gr.Dropdown(list(SCORINGS), value="confidence", label="The model's rule",
                                  elem_id="sampler-scoring", scale=1)
            start_btn = gr.Button("Start", variant="primary", elem_id="sampler-start", scale=1)
        model = gr.Textbox(value=TWIN, label="Model: the built-in diffusion twin, or hf-diffusion:MODEL_ID_OR_PATH "
                           "(a Hugging Face masked diffusion model on this machine)", lines=1, max_lines=1,
                           elem_id="sampler-model-name")
        pins = gr.Textbox(label="Pinned text (optional): one POSITION:TEXT a line, fixed before the first step",
                          lines=1, max_lines=3, elem_id="sampler-pins", placeholder="28:The end.")
        run = gr.State(None)  # the run's ticket in app/ui/hand_runs.py (the run itself is kept there, bounded)
        canvas = gr.HighlightedText(label="The answer so far: click a position [N] to commit the model's guess there",
                                    color_map=COLOURS,
                                    show_legend=True, combine_adjacent=False, elem_id="sampler-canvas")
        note = gr.Textbox(label="What happened", interactive=False, elem_id="sampler-note", lines=1)
        with gr.Row():
            commit_btn = gr.Button("Commit my picks", variant="primary", elem_id="sampler-commit")
            model_btn = gr.Button("Let the model choose", elem_id="sampler-model")
            save_btn = gr.Button("Finish and save", elem_id="sampler-save")
        with gr.Row(elem_id="sampler-positions"):
            pickers = [gr.Radio(choices=[("leave masked", LEAVE)], value=LEAVE, visible=False, min_width=200,
                                elem_id=f"sampler-pos-{i}") for i in range(by_hand.MAX_OPEN)]

    shown = [run, canvas, note, *pickers]
    quiet = {**QUIET, **queued("sampler")}
    box = HandBox(show)
    start_btn.click(handler(box.on_start), inputs=[owner, prompt, length, block, scoring, pins, model], outputs=shown,
                    **quiet)
    commit_btn.click(box.on_commit, inputs=[run, *pickers], outputs=shown, **quiet)
    canvas.select(box.on_canvas, inputs=[run, *pickers], outputs=pickers, **quiet)
    model_btn.click(box.on_model, inputs=[run], outputs=shown, **quiet)
    return save_btn.click(handler(box.on_save), inputs=[owner, run], outputs=[*shown, player, current], **quiet)
