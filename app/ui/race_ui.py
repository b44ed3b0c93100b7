"""The race box: the prompt with its examples and pins, each side's source picker and settings, Run and Stop, and
the Run handler that races two sources under the page's policy and streams the player's updates."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Generator, Iterator

import gradio as gr

from app.engine.draft import Revision
from app.engine.pins import PINS_REFUSAL
from app.errors import UserError
from app.lessons.prompts import EXAMPLE_PROMPTS, QUESTIONS, STORY
from app.race.run import Race
from app.serving.input_limits import MAX_PROMPT_CHARS
from app.serving.policy import LOCAL, Policy
from app.sources.base import REGISTRY
from app.sources.listing import DEFAULT_MODELS
from app.sources.local import as_pins
from app.trace.frames import SIDES
from app.trace.scrub import known_keys, scrub_text
from app.trace.store import RUN_MAX_BYTES, DiskFull, make_room, user_dir, written
from app.ui.browser_race import ON_SERVER, TWINS, default_place, place_box
from app.ui.budgets import queued
from app.ui.draft_ui import DraftBox, draft_box, revision_of
from app.ui.events import HIDDEN, QUIET, READS
from app.ui.guard import UNREADABLE
from app.ui.live import live_updates
from app.ui.loading import while_loading
from app.ui.packed import Pack, gather, pack_box, unpacked
from app.ui.page_assets import STOP_JS
from app.ui.player_ui import to_player
from app.ui.sessions import after_stop, last_race, remember, session_of, stop_now, visitor_of
from app.ui.sources_ui import SideControls, shown_backend, side_controls
from app.ui.visitor import Visitor, visitor_source
from app.view.payload import UPDATE_INTERVAL, live_payload, message_payload, new_run_id, notice_payload
from app.view.side import SENTENCES

DEFAULT_PAIR = ("local-diffusion", "local-ar")
CHAT_KINDS = ("openai", "mercury")  # the sources that race chat models, which answer a question (QUESTIONS)
CUT_NOTE = (f"This run passed {RUN_MAX_BYTES // 2**20} MB, so its recording keeps only the frames up to there; "
            "the rest are shown here but not saved.")
Updates = Iterator[tuple[Any, Any]]  # (the player's update, the recording file shown) as the race goes


@dataclass
class RaceBox:
    """The race box's inputs and buttons; `pins_box` holds the pins, shown while a side's source writes around them."""

    prompt: Any
    pins: Any
    controls: dict[str, SideControls]
    run_btn: Any
    stop_btn: Any
    pins_box: Any = None
    place: Any = None  # "Run on: this server / your browser" (app/ui/browser_race.py), when the page offers it
    browser_run: Any = None  # the browser's Run, which races the twins on the visitor's device
    questions: Any = None  # the question chips, shown only while a side races a chat model (`asks`)
    draft: DraftBox | None = None  # "Start from": the draft a race may start from (app/ui/draft_ui.py)
    settings: Pack | None = None  # both sides' settings widgets, sent to the Run handler as one box (app/ui/packed.py)


def race_box(policy: Policy = LOCAL, browser: bool = False) -> RaceBox:
    """Builds the controls row where it is called, inside the open Blocks: prompt, pins, both sides, Run and Stop;
    with `browser` (the site's files are served), the choice to race the twins in the visitor's browser."""
    defaults = [p if p in REGISTRY else next(iter(REGISTRY)) for p in DEFAULT_PAIR]
    with gr.Row(elem_id="controls", equal_height=False):
        with gr.Column(scale=5, min_width=320):
            prompt = gr.Textbox(label="Prompt", lines=1, max_lines=6, elem_id="prompt", value=STORY,
                                placeholder="Ask something, then press Run.")
            gr.Examples([[p] for p in EXAMPLE_PROMPTS.values()], inputs=[prompt], label="Example prompts",
                        example_labels=list(EXAMPLE_PROMPTS), elem_id="prompt-examples",
                        examples_per_page=len(EXAMPLE_PROMPTS))
            with gr.Column(visible=asks(defaults), elem_id="question-examples-box") as questions:
                gr.Examples([[p] for p in QUESTIONS.values()], inputs=[prompt],
                            label="Questions (for a chat model; the built-in twins write stories)",
                            example_labels=list(QUESTIONS), elem_id="question-examples",
                            examples_per_page=len(QUESTIONS))
            with gr.Row(equal_height=False, elem_id="before-run"):  # one line while both are closed
                pinnable = takes_pins(policy, [(p, DEFAULT_MODELS.get(p, "")) for p in defaults])
                with gr.Accordion("Pinned text (diffusion side)", open=False, elem_id="pins-box",
                                  visible=pinnable) as box:
                    pins = gr.Textbox(label="One POSITION:TEXT a line (optional)", lines=2, elem_id="pins",
                                      placeholder="48:The end.",
                                      info="An autoregressive model cannot see text that comes after what it "
                                           "writes, so it ignores pins and continues the prompt.")
                draft = draft_box()
        controls = {}
        for side, default in zip(SIDES, defaults):
            with gr.Column(scale=3, min_width=220):
                controls[side] = side_controls(side, default, policy)
        with gr.Column(scale=1, min_width=110, elem_id="run-stop"):
            place, browser_run = place_box(policy, tuple(defaults) == TWINS) if browser else (None, None)
            server = place is None or tuple(defaults) != TWINS or default_place(policy) == ON_SERVER
            run_btn = gr.Button("Run", variant="primary", elem_id="run", visible=server)
            stop_btn = gr.Button("Stop", variant="stop", elem_id="stop")
        settings = pack_box([*controls["left"].widgets(), *controls["right"].widgets()], "race-settings",
                            "Both sides' settings")
    return RaceBox(prompt, pins, controls, run_btn, stop_btn, box, place, browser_run, questions, draft, settings)


def asks(kinds: list[Any]) -> bool:
    """Whether a question chip is offered: some side races a chat model (`CHAT_KINDS`); the twins write stories."""
    return any(kind in CHAT_KINDS for kind in kinds)


def takes_pins(policy: Policy, picked: list[tuple[Any, Any]]) -> bool:
    """Whether any side's picked (kind, model) writes around pinned text: its backend declares pins."""
    return any(b is not None and b.pins for b in (shown_backend(policy, kind, arg) for kind, arg in picked))


def wire_pins(box: RaceBox, policy: Policy) -> None:
    """Picking either side's kind or model shows the pins box only while a side takes pins."""
    left, right = box.controls["left"], box.controls["right"]
    picked = [left.kind, left.arg, right.kind, right.arg]

    def show(lkind: Any, larg: Any, rkind: Any, rarg: Any) -> Any:
        return gr.update(visible=takes_pins(policy, [(lkind, larg), (rkind, rarg)]))

    for component in picked:
        component.change(show, inputs=picked, outputs=[box.pins_box], **queued("models"), **HIDDEN,
                         api_name=False)


def wire_questions(box: RaceBox) -> None:
    """Picking either side's kind shows the question chips only while a side races a chat model."""
    kinds = [box.controls["left"].kind, box.controls["right"].kind]

    def show(left: Any, right: Any) -> Any:
        return gr.update(visible=asks([left, right]))

    for component in kinds:
        component.change(show, inputs=kinds, outputs=[box.questions], **queued("models"), **HIDDEN,
                         api_name=False)


def race_starter(box: RaceBox, policy: Policy, owner: Any, shown: list[Any],
                 refresh: Callable[[Any], Any]) -> Callable[..., Any]:
    """`start_race(event, api_name=False, lesson=None)`: chains a race after `event` (the Run button, a lesson) into
    the player and what it holds (`shown`), and returns the race event; `refresh(event)` refreshes the library after
    it."""
    left, right = box.controls["left"], box.controls["right"]
    drafts = box.draft.inputs() if box.draft is not None else []
    assert box.settings is not None
    pack = box.settings
    inputs = [owner, box.prompt, box.pins, *left.picker(), *right.picker(), pack.box, *drafts]

    def start_race(event: Any, api_name: str | bool = False,
                   lesson: tuple[Any, Callable[[Any], tuple[str, Revision | None]]] | None = None) -> Any:
        """Chains a race after `event` (the Run button, a lesson); the library refreshes when it ends. `lesson`, for a
        lesson's race: (an input, the lesson's name and its own draft from its value); the header keeps the name."""
        extra, name = ([lesson[0]], lesson[1]) if lesson else ([], None)
        handler = run_race(left, right, pack, policy, name, len(drafts))
        race = gather(event, pack).then(handler, inputs=inputs + extra, outputs=shown, **queued("race"), **HIDDEN,
                                        api_name=api_name)
        refresh(race)
        return race
    return start_race


def wire_stop(box: RaceBox, races: list[Any], shown: list[Any], refresh: Callable[[Any], Any]) -> None:
    """Stop pauses any replay in the player, tells the session's race to stop at once (off the queue: a click that
    waited its turn behind the race it stops came after the race had finished) and cancels the `races` (Run's and the
    lessons', one still loading its models included); then it shows the saved run and refreshes the library."""
    stop = box.stop_btn.click(stop_now, inputs=None, outputs=None, cancels=races, js=STOP_JS, queue=False, **QUIET)
    refresh(stop.then(after_stop, inputs=None, outputs=shown, **READS, **QUIET))


def prompt_refusal(prompt: str, run_id: str) -> dict[str, Any] | None:
    """The payload that says why a prompt cannot race (empty, or too long), or None."""
    if not prompt.strip():  # a word in the player's status; the run it shows stays loaded
        return notice_payload(SENTENCES["empty_prompt"])
    if len(prompt) > MAX_PROMPT_CHARS:
        return message_payload(f"The prompt is over {MAX_PROMPT_CHARS:,} characters; shorten it.", run_id)
    return None


def pin(pins: str, sides: list[tuple[str, dict[str, Any]]], policy: Policy = LOCAL) -> bool:
    """Puts `pins` into the settings of each side of (spec, settings) whose source writes around them (its backend
    declares pins); False when pins are given and no side can take them."""
    if not (pins or "").strip():
        return True
    takers = [st for spec, st in sides if takes_pins(policy, [spec.partition(":")[::2]])]
    for st in takers:
        st["pins"] = pins
    return bool(takers)


def pins_refusal(pins: str) -> str | None:
    """Why the pins cannot be read (a line that is not POSITION:TEXT, no text after the colon), before any model
    loads; None when each line reads. The race does not start: neither side runs and nothing is saved."""
    try:
        as_pins(pins or "")
    except UserError as e:
        return str(e)
    return None


def unfit_pins(race: Race) -> str | None:
    """Why a side's pins do not fit its loaded model (text its tokenizer cannot spell, past the answer, overlapping),
    checked before either side runs; None when they fit or no side has pins."""
    for s in race.sides.values():
        if s.source is not None:
            try:
                s.source.check_pins()
            except UserError as e:
                return str(e)
    return None


def run_race(left: SideControls, right: SideControls, pack: Pack, policy: Policy = LOCAL,
             lesson: Callable[[Any], tuple[str, Revision | None]] | None = None, n_draft: int = 0) -> Any:
    """The Run handler: starts a race under `policy` and yields coalesced player payloads until it ends or is
    cancelled; the run is saved in the visitor's own library. Its inputs after the prompt and pins: each side's kind,
    model and key, then `pack`'s box with both sides' settings (app/ui/packed.py), then `n_draft` "Start from" inputs
    (app/ui/draft_ui.py; a lesson's race ignores them: it starts from the lesson's own draft, or from nothing). With
    `lesson`, the handler takes one more input, last, from which `lesson` gives the name of the guided lesson that set
    the race up (its recording's header keeps it) and that lesson's draft."""
    n_picked, n_left = len(left.picker()), len(left.widgets())

    def run(request: gr.Request, owner: Any, prompt: str, pins: str, *values: Any) -> Updates:
        at = 2 * n_picked  # each side's kind, model and key; then the box; then the rest
        picked, packed, rest = values[:at], values[at], values[at + 1:]
        named, own_draft = lesson(rest[n_draft]) if lesson is not None else (None, None)
        drafted = list(rest[:n_draft])
        try:
            settings = unpacked(pack, packed)  # the guard has checked each value against its widget
        except (ValueError, TypeError, gr.Error):
            raise gr.Error(UNREADABLE, print_exception=False) from None
        visitor = visitor_of(policy, owner, request)
        run_id = new_run_id()
        prompt = prompt or ""
        refusal = prompt_refusal(prompt, run_id)
        if refusal is not None:
            yield to_player(refusal), gr.skip()
            return
        sides = {"left": left.read([*picked[:n_picked], *settings[:n_left]]),
                 "right": right.read([*picked[n_picked:], *settings[n_left:]])}
        if not pin(pins, [(spec, st) for spec, st, _ in sides.values()], policy):
            yield to_player(notice_payload(PINS_REFUSAL)), gr.skip()
            return
        unreadable = pins_refusal(pins)  # bad input is refused before the race: no half-failed run is saved
        try:
            draft = own_draft if named else (revision_of(drafted, visitor, last_race(session_of(request)))
                                             if drafted else None)
        except UserError as e:
            unreadable = unreadable or str(e)
        if unreadable is None and draft is not None and (pins or "").strip():
            unreadable = "Pins and a draft both fix text before the run: start from the draft or pin text, not both."
        if unreadable is not None:
            yield to_player(notice_payload(unreadable)), gr.skip()
            return
        refused: list[str] = []  # why the race is shown but not saved (a disk bound), if it is
        race = yield from _loaded(visitor, prompt, sides, refused, run_id, named, draft)
        if race is not None:
            yield from _raced(race, run_id, refused, session_of(request), visitor)

    return run


def _loaded(visitor: Visitor, prompt: str, sides: dict[str, tuple[str, dict[str, Any], dict[str, Any]]],
            refused: list[str], run_id: str, lesson: str | None = None, draft: Revision | None = None
            ) -> Generator[tuple[Any, Any], None, Race | None]:
    """Builds the race (a guided `lesson`'s, when named) on a worker thread, saying "Loading..." meanwhile; returns it
    (None when its recording file could not be made, or when a side's pins do not fit its model: then it is closed
    unstarted and its file removed, and the status line says why). A disk bound that refuses the recording is noted in
    `refused` and the race runs unsaved."""
    (lspec, lset, lkey), (rspec, rset, rkey) = sides["left"], sides["right"]

    def build() -> Race:
        try:
            make_room(visitor.owner, visitor.address)
        except DiskFull as e:
            refused.append(str(e))
        cap = 0 if refused else (RUN_MAX_BYTES if visitor.owner is not None else None)
        return Race(prompt, lspec, rspec, settings={"left": lset, "right": rset},
                    secrets={"left": lkey, "right": rkey}, make=visitor_source(visitor),
                    folder=user_dir(visitor.owner), max_bytes=cap, lesson=lesson, draft=draft)

    keys = known_keys({"left": lkey, "right": rkey})
    loading = while_loading(build, scrub_text(f"{lspec} and {rspec}", keys), abandon=_abandon)
    said = False  # whether the player shows "Loading...", which a refusal then replaces
    try:
        while True:
            yield to_player(message_payload(next(loading))), gr.skip()
            said = True
    except StopIteration as built:
        race: Race = built.value
        unfit = unfit_pins(race)
        if unfit is None:
            return race
        _abandon(race)
        race.path.unlink(missing_ok=True)
        yield to_player(message_payload(unfit, run_id) if said else notice_payload(unfit)), gr.skip()
        return None
    except OSError as e:
        yield to_player(message_payload(f"Could not create the recording file: {e.strerror or e}.", run_id)), gr.skip()
        return None


def _raced(race: Race, run_id: str, refused: list[str], session: str, visitor: Visitor) -> Updates:
    """The race's live updates for the player until it ends or the visitor stops it; then it is closed, its file
    removed if no side made a frame, and what it wrote counted against the visitor's address (`written`)."""
    entry = {"race": race, "path": race.path, "run": run_id}
    remember(session, entry)
    updates = live_updates(race, interval=UPDATE_INTERVAL)
    try:
        for seq, snapshot in enumerate(updates):
            notes = refused or ([CUT_NOTE] if race.writer.full else [])
            yield to_player({**live_payload(snapshot, run_id, seq), **({"warnings": notes} if notes else {})}), \
                (gr.skip() if refused else str(race.path))
        entry["shown"] = True  # it ended on its own, its last update sent: a later Stop leaves the player alone
    finally:
        updates.close()
        race.stop()
        race.close()
        entry["race"] = None  # the file is complete; let the frames go
        discard_if_empty(race)
        if not refused:
            written(visitor.owner, visitor.address, race.path)


def discard_if_empty(race: Race) -> None:
    """A race whose every side failed before a frame leaves nothing to replay: its file is removed, so the library
    lists no failed run as if it were one (a run where a side failed after frames stays, marked failed)."""
    if all(s.status == "error" and not s.frames for s in race.sides.values()):
        try:
            race.path.unlink()
        except OSError:
            pass


def _abandon(race: Race) -> None:
    """A race whose sources finished loading after its visitor stopped waiting: closed, never started."""
    race.stop()
    race.close()
