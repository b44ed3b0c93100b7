"""The lessons box: pick a lesson, read it, run its race, make its change; the page spotlights what it is about.

A lesson only sets the page's own controls (sources, settings, prompt) and then presses Run for the learner,
so what it shows is exactly what the learner can reproduce by hand. The spotlight is a CSS class on a part
of the player (app/view/player/player.css `.cv-spotlight`), toggled in the browser from a table of fixed
selectors. A lesson that shows the forward process loads it into the player as soon as it is chosen (a
recording like any other, written to a scratch file so that the exports can make it too). A board lesson has its
own Run and Try it, which run its board in the page's Board area (app/ui/board_tab.py) instead of a race.
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any, Callable

import gradio as gr

from app.engine.draft import Revision
from app.lessons.figures import Finished, shown
from app.lessons.forward_process import forward_recording
from app.lessons.guided import LESSONS, Lesson
from app.sources.base import REGISTRY
from app.trace.frames import write_recording
from app.trace.reading import RecordingError, read_recording
from app.ui import scratch
from app.ui.events import HIDDEN, QUIET, READS
from app.ui.player_ui import to_player

SPOTLIGHT_JS = """
(i) => {
  const selectors = %s;
  document.querySelectorAll('.cv-spotlight').forEach((e) => e.classList.remove('cv-spotlight'));
  const target = document.querySelector(selectors[Number(i)] || '');
  if (target) {
    target.classList.add('cv-spotlight');
    target.scrollIntoView({block: 'nearest'});
  }
  return [];
}
"""

# A lesson's race (Run or Try it) moves the lessons box right above the player (page CSS `body.cv-lesson-on`) and
# scrolls it up to its Run and Try it buttons (to its text where the window is too short for both), so the lesson and
# the panels showing its race are on screen together. The panels' text grows to at most 5 lines in lesson mode (page
# CSS) and the status to two lines as the race runs: GROWTH leaves room for that.
BESIDE_RACE_JS = """
(i) => {
  const GROWTH = 3 * 1.6 * 14 + 24;
  document.body.classList.add('cv-lesson-on');
  const top = (sel) => document.querySelector(sel).getBoundingClientRect().top - 8;
  const panels = document.querySelector('#player .cv-sides').getBoundingClientRect().bottom + GROWTH;
  window.scrollBy(0, panels - top('#lesson-run') <= innerHeight ? top('#lesson-run') : top('#lesson-text'));
  return [];
}
"""

# When a lesson's race ends, its text, the panels and its figures ("This race", right under the panels) come into view
# where the window holds them all; where it does not, a lesson about the metrics shows the panels down to the metrics
# table (right under them in lesson mode), and any other its text and the panels, its figures a scroll away.
IN_VIEW_JS = """
(i) => {
  const [metrics, figures] = %s[Number(i)];
  if (!figures) return [];
  const strip = document.querySelector('#player .cv-figures');
  const last = metrics ? document.querySelector('#player [data-part="metrics"]') : strip;
  let frames = 0;
  const scroll = () => {
    if (strip.hidden && frames++ < 300) return requestAnimationFrame(scroll);  /* until the player shows them */
    const box = (sel) => document.querySelector(sel).getBoundingClientRect();
    const end = last.getBoundingClientRect().bottom + 8, text = box('#lesson-text').top - 8;
    const [top, bottom] = end - text <= innerHeight ? [text, end]
      : metrics ? [box('#player .cv-sides').top - 8, end] : [text, box('#player .cv-sides').bottom + 8];
    window.scrollBy(0, Math.ceil(bottom - top > innerHeight ? (metrics ? bottom - innerHeight : top)
                                 : bottom > innerHeight ? bottom - innerHeight : Math.min(0, top)));
  };
  requestAnimationFrame(scroll);
  return [];
}
"""


def lesson_markdown(i: int) -> str:
    """A lesson as the page shows it: number, title, the explanation, where to look and what to try. Its words are
    text: `<`, `>` and `&` are written as entities, so a token such as <eos> shows as typed instead of being read as
    an HTML tag (which swallowed the rest of the lesson)."""
    lesson = LESSONS[i]
    title, text, look, try_it = (html.escape(part, quote=False)
                                 for part in (lesson.title, lesson.text, lesson.look, lesson.try_it))
    return (f"### Lesson {i + 1} of {len(LESSONS)}: {title}\n\n{text}\n\n"
            f"**Look at** {look} (outlined on the page).\n\n**Try it:** {try_it}")


def control_values(sources: dict[str, tuple[str, dict[str, Any]]], controls: dict[str, Any]) -> list[Any]:
    """Values for each side's picker, argument box and every setting widget, in `control_outputs` order.

    Settings of the chosen source kind that the lesson does not name go back to their defaults, so one
    lesson's changes never leak into the next; widgets of other kinds are left alone."""
    out: list[Any] = []
    for side, c in controls.items():
        spec, settings = sources[side]
        prefix, _, arg = spec.partition(":")
        out += [gr.update(value=prefix), gr.update(value=arg)]
        for kind, name, s, _ in c.settings:
            out.append(gr.update(value=settings.get(name, s.get("default"))) if kind == prefix else gr.skip())
    return out


def changes(lesson: Lesson) -> str:
    """What "Try it" changes, each setting with its old and new value, as text: "Left threshold: 0.9 → 0.1"."""
    spec, before = lesson.sources()[lesson.try_side]
    kind = REGISTRY.get(spec.partition(":")[0])
    known = kind.settings if kind is not None else {}
    parts = []
    for name, new in lesson.try_settings.items():
        entry = known.get(name, {})
        label = str(entry.get("label", name)).split(" (")[0].lower()
        parts.append(f"{lesson.try_side.capitalize()} {label}: {before.get(name, entry.get('default'))} \u2192 {new}")
    return "; ".join(parts)


def change_note(lesson: Lesson) -> str:
    """What "Try it" changed, as the page shows it beside the button: "**Changed:** Left threshold: 0.9 → 0.1"."""
    return "**Changed:** " + html.escape(changes(lesson), quote=False)


def lesson_race(i: Any, tried: bool = False) -> tuple[str, Revision | None]:
    """What a lesson's race needs beside the page's controls: its name (`lesson_name`) and the draft it starts from
    (its own, or None: a lesson's race never takes the page's "Start from" box)."""
    return lesson_name(i, tried), LESSONS[int(i)].draft


def lesson_name(i: Any, tried: bool = False) -> str:
    """The name a lesson's race is recorded under (its header's `lesson`, which names it in the presenter's picker):
    "Lesson 6: Which positions get committed ...", and for its "Try it" race what that changed."""
    lesson = LESSONS[int(i)]
    name = f"Lesson {int(i) + 1}: {lesson.title}"
    return f"{name} (tried: {changes(lesson)})" if tried else name


def figures_update(i: int, path: Any) -> Any:
    """The player's update that shows the figures lesson `i` quotes, measured on the finished race in the file at
    `path`, right under the panels ("This race"); nothing for a lesson that quotes none or a file it cannot read."""
    lesson = LESSONS[int(i)]
    if not lesson.figures or not path:
        return gr.skip()
    try:
        rec = read_recording(path)
    except (RecordingError, OSError):
        return gr.skip()
    draft = (lesson.story, lesson.draft.text) if lesson.draft is not None else None
    return to_player({"figures": shown(lesson.figures, Finished(str(rec.header.get("prompt", "")), rec.frames,
                                                                draft))})


def noising_file(lesson: Lesson) -> Path | None:
    """The forward-process recording a lesson shows when chosen, written to a fresh scratch file; None for the
    lessons that show none."""
    if lesson.noising is None:
        return None
    rec = forward_recording(read_recording(lesson.noising))
    return write_recording(rec, scratch.new_dir("lesson") / f"forward-process-{lesson.noising.stem}.jsonl")


def control_outputs(controls: dict[str, Any]) -> list[Any]:
    """The widgets a lesson sets: per side, the picker, the argument box and every setting widget."""
    out: list[Any] = []
    for c in controls.values():
        out += [c.kind, c.arg, *(component for _, _, _, component in c.settings)]
    return out


def board_buttons() -> tuple[Any, Any]:
    """A board lesson's Run and Try it, which stand in for the race's (hidden until such a lesson is chosen)."""
    return (gr.Button("Run this lesson's board", variant="primary", elem_id="lesson-board", visible=False),
            gr.Button("Try it: make the change and run the board again", elem_id="lesson-board-try", visible=False))


def shown_buttons(i: int) -> list[Any]:
    """The race's Run and Try it, then the board's, shown or hidden for lesson `i`: a board lesson shows the board's."""
    board = bool(LESSONS[i].board)
    return [gr.update(visible=v) for v in (not board, not board, board, board)]


def wire_boards(start_board: Callable[[Any, Any, bool], Any] | None, pick: Any, changed: Any,
                buttons: tuple[Any, Any], spotlight: str) -> None:
    """A board lesson's two buttons: each says what it changed (its "Try it" change, or nothing), spotlights the Board
    area and runs the lesson's board there: `start_board(event, lesson, tried)` (app/ui/board_tab.py `board_starter`)
    chains after `event` the board of the lesson whose index the input `lesson` holds (None: a page without one)."""
    if start_board is None:
        return
    quiet = {**QUIET, "queue": False}
    for button, tried in zip(buttons, (False, True)):
        def said(i: Any, tried: bool = tried) -> str:
            return change_note(LESSONS[int(i)]) if tried else ""

        start_board(button.click(said, inputs=[pick], outputs=[changed], **quiet)
                    .then(fn=None, js=spotlight, inputs=[pick], **quiet), pick, tried)


def lessons_box(prompt: Any, pins: Any, controls: dict[str, Any]) -> Callable[..., list[Any]]:
    """Builds the lessons accordion where it is called, inside the open Blocks. Returns `wire(start_race, show,
    shown, start_board)`, to call once the player exists: `start_race(event, lesson=(input, name))` chains a race after
    an event, its recording named by the lesson and started from its draft (`lesson_race`), and returns the race
    event; `show(path)` gives the values of the components `shown` (the player and what it holds, the recording file
    last) that load a recording file into the player, playing; `start_board` runs a board lesson's board
    (`wire_boards`); `wire` returns the race events."""
    with gr.Accordion("Lessons: how diffusion decoding differs from typing", open=True, elem_id="lessons"):
        with gr.Row():
            pick = gr.Dropdown(choices=[(f"{i + 1}. {lesson.title}", i) for i, lesson in enumerate(LESSONS)],
                               value=0, label="Lesson", elem_id="lesson-pick", scale=4)
            prev_btn = gr.Button("\u25c0 Previous", elem_id="lesson-prev", scale=1)
            next_btn = gr.Button("Next \u25b6", elem_id="lesson-next", scale=1)
        with gr.Row():
            run_btn = gr.Button("Run this lesson's race", variant="primary", elem_id="lesson-run")
            try_btn = gr.Button("Try it: make the change and run again", elem_id="lesson-try")
            boards = board_buttons()
            changed = gr.Markdown("", elem_id="lesson-change")  # what "Try it" changed: old and new value, beside it
        text = gr.Markdown(lesson_markdown(0), elem_id="lesson-text")  # last, so it sits right above the player
    outputs = control_outputs(controls)
    spotlight = SPOTLIGHT_JS % json.dumps([lesson.point for lesson in LESSONS])
    in_view = IN_VIEW_JS % json.dumps([[lesson.point == '[data-part="metrics"]', bool(lesson.figures)]
                                       for lesson in LESSONS])
    quiet = {**QUIET, "queue": False}

    def setup(i: int) -> list[Any]:  # the lesson's own race
        lesson = LESSONS[int(i)]
        return [gr.update(value=lesson.prompt), gr.update(value=lesson.pins),
                *control_values(lesson.sources(), controls), ""]

    def change(i: int) -> list[Any]:  # the lesson's own race with its one change, whatever the page held before
        lesson = LESSONS[int(i)]
        return [gr.update(value=lesson.prompt), gr.update(value=lesson.pins),
                *control_values(lesson.changed(), controls), change_note(lesson)]

    def wire(start_race: Callable[..., Any], show: Callable[[Path], list[Any]], shown: list[Any],
             start_board: Callable[[Any, Any, bool], Any] | None = None) -> list[Any]:
        def choose(i: int) -> list[Any]:  # the text, its buttons, and in the same answer any recording it shows
            path = noising_file(LESSONS[int(i)])
            return [lesson_markdown(int(i)), "", *shown_buttons(int(i)),
                    *(show(path) if path else [gr.skip()] * len(shown))]

        pick.change(choose, inputs=[pick], outputs=[text, changed, run_btn, try_btn, *boards, *shown], **quiet) \
            .then(fn=None, js=spotlight, inputs=[pick], **quiet)
        wire_boards(start_board, pick, changed, boards, spotlight)  # a board lesson fills the Board area instead
        prev_btn.click(lambda i: max(0, int(i) - 1), inputs=[pick], outputs=[pick], **quiet)
        next_btn.click(lambda i: min(len(LESSONS) - 1, int(i) + 1), inputs=[pick], outputs=[pick], **quiet)
        races = []
        for button, values, tried in ((run_btn, setup, False), (try_btn, change, True)):
            named = (pick, lambda i, tried=tried: lesson_race(i, tried))  # the header names the lesson
            race = start_race(button.click(values, inputs=[pick], outputs=[prompt, pins, *outputs, changed],
                                           **quiet)
                              .then(fn=None, js=spotlight, inputs=[pick], **quiet)
                              .then(fn=None, js=BESIDE_RACE_JS, inputs=[pick], **quiet), lesson=named)
            race.then(figures_update, inputs=[pick, shown[-1]], outputs=[shown[0]], **HIDDEN,
                      api_name=False, **READS).then(fn=None, js=in_view, inputs=[pick], **quiet)
            races.append(race)
        return races

    return wire
