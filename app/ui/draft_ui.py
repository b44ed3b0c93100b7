"""The race box's "Start from" (issue 53): beside the prompt, a draft to start from (nothing, a draft typed, a side of
the session's last race, or a recording of the visitor's own library), the share of it to re-noise and where; read
into the race's one `Revision` by `revision_of`, each side then starting from it by its own means."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gradio as gr

from app.engine.draft import Revision
from app.errors import UserError
from app.sources.revise import recorded_answer
from app.trace.frames import SIDES
from app.ui.visitor import Visitor

NOTHING, TYPED, LAST, LIBRARY = "nothing", "a draft I type", "the last race's side", "a recording from my library"
STARTS = (NOTHING, TYPED, LAST, LIBRARY)
WHERE = {"random": "random", "least sure": "unsure", "a span": "span"}  # the page's words -> Revision.where
DEFAULT_SHARE = 30  # percent


@dataclass
class DraftBox:
    """The "Start from" inputs, in the order the Run handler reads them (`inputs`)."""

    start: Any
    text: Any
    side: Any
    recording: Any
    share: Any
    where: Any
    span: Any
    seed: Any

    def inputs(self) -> list[Any]:
        """The components whose values `revision_of` reads, in its order."""
        return [self.start, self.text, self.side, self.recording, self.share, self.where, self.span, self.seed]


def draft_box() -> DraftBox:
    """Builds the "Start from" accordion where it is called (under the prompt), closed, starting from nothing."""
    with gr.Accordion("Start from a draft", open=False, elem_id="draft-box"):
        start = gr.Radio(list(STARTS), value=NOTHING, label="Start from", elem_id="start-from",
                         info="A diffusion side re-noises part of the draft and repairs it in place; an autoregressive "
                              "side keeps the draft up to the first re-noised position and writes the rest again.")
        text = gr.Textbox(label="Draft (for a draft I type)", lines=2, elem_id="draft-text",
                          placeholder=" She liked to play in the park with her red ball.")
        with gr.Row():
            side = gr.Radio(list(SIDES), value="left", label="Side (of the last race or the recording)",
                            elem_id="draft-side")
            recording = gr.Textbox(label="Recording (from your library, like user/NAME.jsonl)", lines=1,
                                   elem_id="draft-recording", placeholder="user/NAME.jsonl")
        with gr.Row():
            share = gr.Slider(0, 100, value=DEFAULT_SHARE, step=5, label="Re-noise (% of the draft's tokens)",
                              elem_id="renoise")
            where = gr.Radio(list(WHERE), value="random", label="Which tokens", elem_id="renoise-where")
            span = gr.Textbox(label="Span START:END (answer tokens, for a span)", lines=1, elem_id="renoise-span",
                              placeholder="4:12")
            seed = gr.Number(value=0, precision=0, minimum=0, label="Seed (of the random tokens, also within a span)",
                             elem_id="renoise-seed")
    return DraftBox(start, text, side, recording, share, where, span, seed)


def revision_of(values: list[Any], visitor: Visitor, last_race: Path | None) -> Revision | None:
    """The revision the "Start from" values ask for, None for nothing; a UserError naming the fix for a draft that
    cannot be read. A recording comes only from the bundled examples or the visitor's own library (`recorded_answer`
    with their owner, no file paths); the last race is the session's own, kept by the server."""
    start, text, side, recording, share, where, span, seed = values
    if start in (None, NOTHING):
        return None
    if side not in SIDES:
        raise UserError("Pick the left or the right side to start from.")
    if start == TYPED:
        draft = str(text or "")
    elif start == LAST:
        if last_race is None or not last_race.is_file():
            raise UserError("There is no saved last race in this tab to start from: run a race first, or type a "
                            "draft.")
        draft = recorded_answer(f"{last_race}#{side}")
    elif start == LIBRARY:
        draft = recorded_answer(f"{(recording or '').strip()}#{side}", owner=visitor.owner, paths=False)
    else:
        raise UserError("Pick what to start from: nothing, a draft you type, the last race or a recording.")
    if where not in WHERE:
        raise UserError("Pick which tokens to re-noise: random, least sure or a span.")
    placed = str(span or "").strip() if WHERE[where] == "span" else WHERE[where]
    if not isinstance(share, (int, float)) or not 0 <= share <= 100:
        raise UserError("The re-noise share is a percentage from 0 to 100; use its slider.")
    drawn = int(seed) if isinstance(seed, (int, float)) and float(seed).is_integer() else seed  # Number gives 3.0
    return Revision(draft, share=float(share) / 100, where=placed, seed=drawn)
