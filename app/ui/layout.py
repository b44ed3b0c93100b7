"""The Converge page: two source pickers, a prompt, Run and Stop, the lessons, the client-side player, the
recording library, the exports, the sweep charts and "Be the sampler" (app/ui/sampler_ui.py).

The server never builds HTML from model output, prompts or files: it sends data as the player's
`payload` prop and the player (app/view/player/) writes every string with textContent. The source pickers and
their settings are rendered from the registry, so a new source needs no change here. The first screen
is the race: a filled prompt with example prompts, the pickers and Run in one row, then the player with the
first bundled example loaded and ready to play; the lessons, the twins' note, the library, exports and sweeps
come below it (the lessons move above it once a lesson's race runs, app/ui/lessons_ui.py). `?presenter=1` opens the page in presenter mode, which shows only the race. The `mercury` and
`openai` pickers offer the models their endpoint lists (app/sources/listing.py, under the policy's rules).
"""

from __future__ import annotations

import json
import os
import sys
import threading
from pathlib import Path
from typing import Any, Callable, Iterator

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

import gradio as gr  # noqa: E402
from starlette.middleware import Middleware  # noqa: E402

from app import library  # noqa: E402
from app.engine.about import twins_note  # noqa: E402
from app.engine.pins import AR_REFUSAL  # noqa: E402
from app.errors import SourceError  # noqa: E402
from app.input_limits import MAX_PROMPT_CHARS  # noqa: E402
from app.prompts import EXAMPLE_PROMPTS, STORY  # noqa: E402
from app.policy import LOCAL, Policy, from_launch  # noqa: E402
from app.race import Race  # noqa: E402
from app.scrub import known_keys, scrub_text  # noqa: E402
from app.sources.base import REGISTRY, load_plugins  # noqa: E402
from app.store import RUN_MAX_BYTES, DiskFull, locate, make_room, user_dir  # noqa: E402
from app.trace import MAX_RECORDING_BYTES, SIDES, RecordingError  # noqa: E402
from app.ui import door, library_ui, scratch  # noqa: E402
from app.ui.address import address_of  # noqa: E402
from app.ui.guard import GuardedBlocks, declared  # noqa: E402
from app.ui.visitor import Visitor, new_owner, owner_of, visitor_source  # noqa: E402
from app.ui.lessons_ui import lessons_box  # noqa: E402
from app.ui.pairs_ui import pairs_box  # noqa: E402
from app.ui.loading import while_loading  # noqa: E402
from app.ui.sampler_ui import sampler_box  # noqa: E402
from app.ui.sources_ui import SideControls, _models, _pick, side_controls  # noqa: E402
from app.ui.export_job import run_export  # noqa: E402
from app.ui.sweeps_tab import sweeps_tab  # noqa: E402
from app.view.live import live_updates  # noqa: E402
from app.view.payload import (UPDATE_INTERVAL, asset, live_payload, load_payload, message_payload,  # noqa: E402
                              new_run_id, notice_payload, player_json)
from app.view.side import SENTENCES  # noqa: E402

DEFAULT_PAIR = ("local-diffusion", "local-ar")
RACE_CONCURRENCY = 8  # races at once across all users; their local-model sides share CPU slots (app/compute.py)
MAX_SESSIONS = 256  # finished sessions remembered (for Stop's "show the saved run") before the oldest go
QUEUE_SIZE = 64  # sessions waiting for a race slot before new ones are told the queue is full
RECORDING_CONCURRENCY = 2  # handlers that read a whole recording (after Stop, Load, Upload, Download) at once
CUT_NOTE = (f"This run passed {RUN_MAX_BYTES // 2**20} MB, so its recording keeps only the frames up to there; "
            "the rest are shown here but not saved.")
UI_DIR = Path(__file__).resolve().parent  # the page's own script files
CACHE_LIFETIME = (3600, 3600)  # Gradio's copies of handed-out files (downloads, exports) go after an hour

PLAYER_GLUE = """
const mount = element.querySelector('.cv-mount');
const query = new URLSearchParams(window.location.search);
const onPresenter = (on) => document.body.classList.toggle('cv-presenting', on);
let picker = null;  // the presenter's compact picker (app/ui/presenter_picker.js), made on first use
const onPick = () => { picker = picker || window.ConvergePicker(mount); picker.toggle(); };
const player = window.ConvergePlayer.create(mount, {presenter: query.get('presenter') === '1', onPresenter, onPick});
const show = () => {
  if (!props.payload) return;
  const data = JSON.parse(props.payload);
  player.update(data);
  if (data.reveal) mount.scrollIntoView({block: 'start'});  // a recording loaded from the library shows itself
};
show();
watch('payload', show);
"""

# an export reads the player's clock (data-view) at the click, so the exported file opens on the same clock
CLOCK_JS = ("(current, clock) => [current, document.querySelector('#player .cv-player')?.getAttribute('data-view') "
            "=== 'passes' ? 'passes' : 'time']")

PAGE_CSS = """
#converge-title h1 { display: inline; font-size: 1.5em; margin: 0 0.6em 0 0; }
#converge-title p { display: inline; margin: 0; }
#run-stop { justify-content: flex-start; }
#player { min-height: 200px; }
#player .cv-legend { position: static; }
#player .cv-player:not(.cv-presenter) .cv-text { min-height: calc(1.6em * 3); }
#player .cv-player:not(.cv-presenter) .cv-heatmap { height: 72px; }
#player .cv-player:not(.cv-presenter) .cv-caption-line { font-size: 1em; }
#prompt textarea { overflow-wrap: anywhere; }
#controls .column { gap: 8px; }  /* with the one-line prompt and the 72 px heatmaps, the Play row shows on the first screen */
@media (max-height: 740px) { #converge-title { display: none; } }  /* and at 1280x720 too */
#left-settings, #right-settings, #pins-box { position: relative; overflow: visible !important; }
#left-settings > .label-wrap ~ div, #right-settings > .label-wrap ~ div, #pins-box > .label-wrap ~ div {
  position: absolute; left: -1px; right: -1px; top: 100%; z-index: 60; max-height: min(62vh, 560px); overflow: auto;
  background: var(--block-background-fill); border: 1px solid var(--border-color-primary);
  border-radius: 0 0 var(--block-radius) var(--block-radius); box-shadow: 0 8px 18px rgba(0, 0, 0, 0.25);
  padding: 8px; box-sizing: border-box;
}  /* settings open over the page instead of pushing the panels down */
body.cv-lesson-on #player, body.cv-lesson-on #player ~ * { order: 2; }
body.cv-lesson-on #lessons { order: 1; }  /* once a lesson races, its box sits right above the player */
body.cv-lesson-on #player .cv-player:not(.cv-presenter) .cv-text { --cv-lines: 5; }  /* and the panels fit under it */
#sampler.cv-spotlight { outline: 4px solid var(--body-text-color); outline-offset: 4px; }
.gradio-container { overflow: clip !important; }
body.cv-presenting #converge-title, body.cv-presenting #controls, body.cv-presenting #library-area,
body.cv-presenting #sweeps, body.cv-presenting #lessons, body.cv-presenting #pairs, body.cv-presenting #twins-about,
body.cv-presenting #sampler,
body.cv-presenting #trust-note,
body.cv-presenting footer { display: none !important; }
body.cv-presenting .gradio-container { max-width: 100% !important; padding-top: 0 !important; }
body.cv-presenting .gradio-container > .main { padding-top: 0 !important; padding-bottom: 0 !important; }
"""

LIBRARY_HEADERS = ["Name", "Kind", "Caption or prompt", "Sources", "Date", "Duration", "Note"]
EXPORT_FORMATS = ("html", "gif", "mp4", "csv")

_sessions: dict[str, dict[str, Any]] = {}  # session hash -> {"race", "path", "run"} of its latest race
_sessions_lock = threading.Lock()


def to_player(payload: dict[str, Any]) -> dict[str, Any]:
    """An update of the player's `payload` prop, sent as one JSON string.

    A string is replaced whole from one update to the next; Gradio 6.31's per-element diff of nested
    lists renumbers deletions once per enclosing list (gradio.utils.diff) and corrupts rows that shrink.
    """
    return gr.update(payload=player_json(payload))


def show_recording(path: Path) -> dict[str, Any]:
    """The player's update that loads the recording at `path`, at its start, ready to play."""
    return to_player(load_payload(path, name=path.name, cursor="start"))


def launch_options() -> dict[str, Any]:
    """Safe launch defaults: no monitoring endpoint, no run history in the browser, a file size cap."""
    return {"enable_monitoring": False, "max_file_size": MAX_RECORDING_BYTES, "run_history": False,
            "ssr_mode": False, "css": PAGE_CSS, "show_error": False,
            "app_kwargs": {"middleware": [Middleware(door.Door)]}}  # fair queueing and uploads (app/ui/door.py)


def _session(request: gr.Request | None) -> str:
    return (request.session_hash if request is not None else None) or "no-session"


def visitor_of(policy: Policy, token: Any, request: gr.Request | None) -> Visitor:
    """The visitor behind a request: the page's policy and their owner id (from the browser, else the session)."""
    return Visitor(policy, owner_of(policy, token, request.session_hash if request is not None else None),
                   address_of(request))


def as_visitor(policy: Policy, fn: Callable[..., Any]) -> Callable[..., Any]:
    """A Gradio handler for `fn(visitor, *values)` whose first input is the session's owner id (a gr.State, which
    the queue API cannot set: only the page-load handler does, from the browser's stored id)."""
    def handler(request: gr.Request, owner: Any, *values: Any) -> Any:
        return fn(visitor_of(policy, owner, request), *values)
    handler.__name__ = handler.__qualname__ = fn.__name__  # named for what it runs (not functools.wraps: Gradio
    return handler                                          # must see this signature, not fn's)


def remember(session: str, entry: dict[str, Any]) -> None:
    """Keeps a session's latest race; of the sessions whose race has ended, only the latest MAX_SESSIONS stay
    (API clients never unload, so nothing else would ever drop them)."""
    with _sessions_lock:
        _sessions.pop(session, None)  # re-inserted last: the dict stays in order of last use
        _sessions[session] = entry
        finished = [k for k, e in _sessions.items() if e["race"] is None]
        for stale in finished[: max(0, len(finished) - MAX_SESSIONS)]:
            del _sessions[stale]


def run_race(left: SideControls, right: SideControls, policy: Policy = LOCAL) -> Any:
    """The Run handler: starts a race under `policy` and yields coalesced player payloads until it ends or is
    cancelled; the run is saved in the visitor's own library."""
    n_left = len(left.inputs())

    def run(request: gr.Request, owner: Any, prompt: str, pins: str, *values: Any) -> Iterator[tuple[Any, Any]]:
        visitor = visitor_of(policy, owner, request)
        run_id = new_run_id()
        prompt = prompt or ""
        if not prompt.strip():  # a word in the player's status; the run it shows stays loaded
            yield to_player(notice_payload(SENTENCES["empty_prompt"])), gr.skip()
            return
        if len(prompt) > MAX_PROMPT_CHARS:
            yield to_player(message_payload(f"The prompt is over {MAX_PROMPT_CHARS:,} characters; shorten it.",
                                            run_id)), gr.skip()
            return
        lspec, lset, lkey = left.read(list(values[:n_left]))
        rspec, rset, rkey = right.read(list(values[n_left:]))
        if (pins or "").strip():
            takers = [st for spec, st in ((lspec, lset), (rspec, rset)) if spec.split(":")[0].endswith("diffusion")]
            if not takers:
                yield to_player(notice_payload(AR_REFUSAL)), gr.skip()
                return
            for st in takers:
                st["pins"] = pins
        refused: list[str] = []  # why the race is shown but not saved (a disk bound), if it is

        def build() -> Race:
            try:
                make_room(visitor.owner, visitor.address)
            except DiskFull as e:
                refused.append(str(e))
            cap = 0 if refused else (RUN_MAX_BYTES if visitor.owner is not None else None)
            return Race(prompt, lspec, rspec, settings={"left": lset, "right": rset},
                        secrets={"left": lkey, "right": rkey}, make=visitor_source(visitor),
                        folder=user_dir(visitor.owner), max_bytes=cap)

        keys = known_keys({"left": lkey, "right": rkey})
        loading = while_loading(build, scrub_text(f"{lspec} and {rspec}", keys), abandon=_abandon)
        try:
            while True:
                yield to_player(message_payload(next(loading))), gr.skip()
        except StopIteration as built:
            race = built.value
        except OSError as e:
            yield to_player(message_payload(f"Could not create the recording file: {e.strerror or e}.", run_id)), gr.skip()
            return
        entry = {"race": race, "path": race.path, "run": run_id}
        remember(_session(request), entry)
        updates = live_updates(race, interval=UPDATE_INTERVAL)
        try:
            for seq, snapshot in enumerate(updates):
                notes = refused or ([CUT_NOTE] if race.writer.full else [])
                yield to_player({**live_payload(snapshot, run_id, seq), **({"warnings": notes} if notes else {})}), \
                    (gr.skip() if refused else str(race.path))
        finally:
            updates.close()
            race.stop()
            race.close()
            entry["race"] = None  # the file is complete; let the frames go
            discard_if_empty(race)

    return run


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


def after_stop(request: gr.Request) -> Any:
    """After Stop: ends the session's race, waits for both sides to record how they ended, shows the saved run."""
    with _sessions_lock:
        entry = _sessions.get(_session(request))
    if not entry:
        return gr.skip()
    race: Race | None = entry["race"]
    if race is not None:
        race.stop()
        race.close()
    if not Path(entry["path"]).is_file():  # a race that was not saved: what it showed stays on screen
        return gr.skip()
    return to_player(load_payload(entry["path"], run=entry["run"])), str(entry["path"])


def end_session(request: gr.Request) -> None:
    """When a tab closes: stop its race so no thread keeps running for nobody."""
    with _sessions_lock:
        entry = _sessions.pop(_session(request), None)
    if entry and entry["race"] is not None:
        entry["race"].stop()


def library_view(visitor: Visitor, selected: str | None = None) -> tuple[Any, Any, list[str]]:
    """The visitor's library table, the recording picker (keeping `selected` when it still exists) and the row ids."""
    entries = library.list_recordings(visitor.owner)
    rows = [[e["name"], "example" if e["kind"] == "example" else "yours", e["caption"] or e["prompt"], e["sources"],
             library_ui.date_text(e["created"]), library_ui.duration_text(e["duration"]), e["problem"] or ""]
            for e in entries]
    ids = [e["id"] for e in entries]
    value = selected if selected in ids else (ids[0] if ids else None)
    table = gr.update(value=rows or [[""] * len(LIBRARY_HEADERS)], headers=LIBRARY_HEADERS)
    return table, gr.update(choices=[(library_ui.label(e), e["id"]) for e in entries], value=value), ids


def open_page(policy: Policy) -> Callable[..., tuple[Any, ...]]:
    """The page-load handler: takes the owner id the browser stored (giving a new browser one) into the session,
    then shows the visitor's library and the first bundled example in the player, at its start, ready to play."""
    def on_load(request: gr.Request, token: Any) -> tuple[Any, ...]:
        visitor = visitor_of(policy, token, request)
        if visitor.owner is not None and visitor.owner != token:
            token = new_owner()
            visitor = Visitor(policy, token)
        table, pick, ids = library_view(visitor)
        first = next((i for i in ids if i.startswith("example/")), None)
        if first is None:
            return token, visitor.owner, table, pick, ids, gr.skip(), gr.skip()
        pick["value"] = first
        path = locate(first)
        return token, visitor.owner, table, pick, ids, show_recording(path), str(path)
    return on_load


def pick_row(ids: list[str], evt: gr.SelectData) -> tuple[Any, Any]:
    """Clicking a row of the table selects that recording in the picker and offers its name for renaming.

    The row's own values name it (the table may be sorted in the browser); its index is the fallback."""
    values = evt.row_value if isinstance(evt.row_value, list) and len(evt.row_value) >= 2 else None
    if values is not None:
        entry = f"{'example' if values[1] == 'example' else 'user'}/{values[0]}"
    else:
        row = evt.index[0] if isinstance(evt.index, (list, tuple)) else evt.index
        entry = ids[row] if isinstance(row, int) and 0 <= row < len(ids or []) else ""
    if entry not in (ids or []):
        return gr.skip(), gr.skip()
    return gr.update(value=entry), entry.partition("/")[2]


def load_entry(visitor: Visitor, entry_id: str | None) -> tuple[Any, Any, str]:
    """Loads the picked recording into the player at its start."""
    try:
        path = locate(entry_id or "", visitor.owner)
    except SourceError as e:
        return gr.skip(), gr.skip(), str(e)
    payload = {**load_payload(path, name=path.name, cursor="start"), "reveal": True}  # the player scrolls into view
    if payload["mode"] == "message":
        return to_player(payload), gr.skip(), payload["message"]
    note = " ".join(payload.get("warnings") or [])
    return to_player(payload), str(path), f"Loaded {path.name}." + (f" {note}" if note else "")


def load_picked(visitor: Visitor, entry_id: str | None) -> tuple[Any, Any, Any]:
    """The presenter's picker: loads the recording whose id it typed (an empty box, cleared for the next pick, does
    nothing)."""
    if not (entry_id or "").strip():
        return gr.skip(), gr.skip(), gr.skip()
    return load_entry(visitor, entry_id)


def rename_entry(visitor: Visitor, entry_id: str | None, new_name: str, current: str | None) -> tuple[Any, ...]:
    """Renames one of the visitor's recordings; the player keeps pointing at it."""
    try:
        old = locate(entry_id or "", visitor.owner)
        new_id = library.rename(entry_id or "", new_name, visitor.owner)
    except (SourceError, OSError) as e:
        return (gr.skip(),) * 4 + (_error_text(e),)
    new_path = locate(new_id, visitor.owner)
    table, pick, ids = library_view(visitor, new_id)
    moved = str(new_path) if current and Path(current) == old else gr.skip()
    return table, pick, ids, moved, f"Renamed {old.name} to {new_path.name}."


def delete_entry(visitor: Visitor, entry_id: str | None) -> tuple[Any, ...]:
    """Deletes one of the visitor's recordings (the browser asked for confirmation; None means cancelled)."""
    if entry_id is None:
        return (gr.skip(),) * 3 + ("Nothing deleted.",)
    try:
        name = library.delete(entry_id, visitor.owner)
    except (SourceError, OSError) as e:
        return (gr.skip(),) * 3 + (_error_text(e),)
    return (*library_view(visitor), f"Deleted {name}.")


def upload_entry(visitor: Visitor, path: str | None) -> tuple[Any, ...]:
    """Checks an uploaded recording, adds it to the visitor's recordings and loads it into the player; the upload
    box is emptied either way, ready for the next file."""
    if not path:
        return (gr.skip(),) * 7
    if not visitor.policy.can("upload"):
        return (gr.skip(),) * 5 + ("Uploading recordings is off on this server.", None)
    try:
        make_room(visitor.owner, visitor.address)
        new_id = library.save_upload(path, Path(path).name, visitor.owner)
    except (SourceError, OSError) as e:
        return (gr.skip(),) * 5 + (_error_text(e), None)
    saved = locate(new_id, visitor.owner)
    table, pick, ids = library_view(visitor, new_id)
    payload = {**load_payload(saved, name=saved.name, cursor="start"), "reveal": True}
    note = " ".join(payload.get("warnings") or [])
    return table, pick, ids, to_player(payload), str(saved), f"Added {saved.name} to your recordings." + (
        f" {note}" if note else ""), None


def download_entry(visitor: Visitor, entry_id: str | None) -> tuple[Any, str]:
    """The picked recording as a file to download."""
    try:
        copy = library_ui.download_copy(entry_id or "", visitor.owner)
    except (SourceError, OSError) as e:
        return gr.skip(), _error_text(e)
    return str(copy), f"{copy.name} is ready: use the download link."


def export_current(fmt: str) -> Any:
    """An export handler: the recording in the player as a self-contained HTML page, a GIF, an MP4 or the CSV of its
    per-frame figures, on the player's clock; a video reports its frames in the status about once a second (each
    report also lets Gradio notice a visitor who left); Cancel export stops it and leaves no file."""
    def export(current: str | None, clock: str = "time") -> Iterator[tuple[Any, str]]:
        clock = "passes" if clock == "passes" else "time"
        if not current or not Path(current).is_file():
            yield gr.skip(), "Load a recording or run a race first; exports are made from the recording in the player."
            return
        source = Path(current)
        out = scratch.new_dir("export") / f"{source.stem}.{fmt}"
        try:
            for done, total in run_export(source, out, fmt, clock):
                yield gr.skip(), (f"Making {out.name}: frame {done:,} of {total:,}..." if total
                                  else f"Making {out.name}...") + " Cancel export stops it."
        except ImportError as e:
            yield gr.skip(), f"{fmt.upper()} export needs {e.name}, which is not installed (pip install -r requirements.txt)."
            return
        except (SourceError, RecordingError, OSError) as e:
            yield gr.skip(), _error_text(e)
            return
        yield str(out), f"{out.name} is ready: use the download link."
    return export


def _error_text(e: Exception) -> str:
    if isinstance(e, OSError):
        return f"That did not work: {e.strerror or e}."
    return str(e)


OWNER_KEY = "converge-owner"  # where a browser keeps its owner id (localStorage)
OWNER_SECRET = "converge-owner-id"  # not a secret: Gradio sends it to the page; a fixed one keeps ids across restarts


def build(policy: Policy = LOCAL) -> gr.Blocks:
    """The whole page as a gr.Blocks under `policy` (launch it with `launch()` or `demo.launch(**launch_options())`)."""
    load_plugins()
    defaults = [p if p in REGISTRY else next(iter(REGISTRY)) for p in DEFAULT_PAIR]
    head = (f"<style>{asset('player.css')}</style><script>{asset('player.js')}</script>"
            f"<script>{(UI_DIR / 'presenter_picker.js').read_text(encoding='utf-8')}</script>")
    with GuardedBlocks(title="Converge", analytics_enabled=False, delete_cache=CACHE_LIFETIME) as demo:
        gr.Markdown("# Converge\nWatch a diffusion language model converge on its answer while an "
                    "autoregressive model types, each on its own thread and clock.", elem_id="converge-title")
        if policy.served:
            gr.Markdown(policy.page_note(), elem_id="trust-note")
        stored_owner = gr.BrowserState(None, storage_key=OWNER_KEY, secret=OWNER_SECRET)  # this browser's library
        owner = gr.State(None)  # the session's owner id, set only by the page-load handler
        current = gr.State(None)  # the recording file shown in the player (what exports are made from)
        ids = gr.State([])  # the library table's row ids
        with gr.Row(elem_id="controls", equal_height=False):
            with gr.Column(scale=5, min_width=320):
                prompt = gr.Textbox(label="Prompt", lines=1, max_lines=6, elem_id="prompt", value=STORY,
                                    placeholder="Ask something, then press Run.")
                gr.Examples([[p] for p in EXAMPLE_PROMPTS.values()], inputs=[prompt], label="Example prompts",
                            example_labels=list(EXAMPLE_PROMPTS), elem_id="prompt-examples",
                            examples_per_page=len(EXAMPLE_PROMPTS))
                with gr.Accordion("Pinned text (diffusion side)", open=False, elem_id="pins-box"):
                    pins = gr.Textbox(label="One POSITION:TEXT a line (optional)", lines=2, elem_id="pins",
                                      placeholder="48:The end.",
                                      info="An autoregressive model cannot see text that comes after what it "
                                           "writes, so it ignores pins and continues the prompt.")
            controls = {}
            for side, default in zip(SIDES, defaults):
                with gr.Column(scale=3, min_width=220):
                    controls[side] = side_controls(side, default, policy)
            with gr.Column(scale=1, min_width=110, elem_id="run-stop"):
                run_btn = gr.Button("Run", variant="primary", elem_id="run")
                stop_btn = gr.Button("Stop", variant="stop", elem_id="stop")
        player = gr.HTML(value="", html_template='<div class="cv-mount"></div>', js_on_load=PLAYER_GLUE,
                         head=head, apply_default_css=False, elem_id="player", payload=None)
        wire_lessons = lessons_box(prompt, pins, controls)
        pairs_box(controls, policy)
        sampled = sampler_box(lambda fn: as_visitor(policy, fn), owner, player, current,
                              show_recording)
        headline, details = twins_note()
        with gr.Accordion(headline, open=False, elem_id="twins-about"):
            gr.Markdown(details)
        with gr.Column(elem_id="library-area"):
            with gr.Accordion("Recordings", open=True, elem_id="library"):
                table = gr.Dataframe(headers=LIBRARY_HEADERS, datatype="str", type="array", interactive=False,
                                     wrap=True, max_height=320, elem_id="library-table", show_label=False,
                                     column_widths=["17%", "7%", "27%", "20%", "12%", "7%", "10%"])
                with gr.Row():
                    pick = gr.Dropdown(label="Recording", choices=[], elem_id="library-pick", scale=4)
                    load_btn = gr.Button("Load", variant="primary", elem_id="library-load", scale=1)
                    download_btn = gr.Button("Download", elem_id="library-download", scale=1)
                with gr.Row():
                    new_name = gr.Textbox(label="New name (your recordings only)", elem_id="library-name",
                                          max_lines=1, scale=4)
                    rename_btn = gr.Button("Rename", elem_id="library-rename", scale=1)
                    delete_btn = gr.Button("Delete", variant="stop", elem_id="library-delete", scale=1)
                upload = gr.File(label="Upload a recording (.jsonl): it is checked, then added to your recordings",
                                 file_types=[".jsonl"], type="filepath", elem_id="load-file", height=140,
                                 visible=policy.can("upload"))
            with gr.Accordion("Export the recording in the player", open=False, elem_id="export-box"):
                with gr.Row():
                    export_btns = {fmt: gr.Button(f"Export {fmt.upper()}", elem_id=f"export-{fmt}")
                                   for fmt in EXPORT_FORMATS}
                clock = gr.Textbox(value="time", visible="hidden", elem_id="player-clock", label="Clock")
                cancel_export_btn = gr.Button("Cancel export", variant="stop", elem_id="export-cancel")
                gr.Markdown("HTML: one self-contained page that plays offline with the same controls "
                            "(add `?presenter=1` to its address for presenter mode). GIF and MP4: the race "
                            "at its recorded pace. All three keep the player's clock (seconds or forward passes). CSV: each frame's figures (time, passes, tokens, changes, "
                            "settled fraction), as `python -m app stats --csv` writes them.")
            # the presenter's compact picker (app/ui/presenter_picker.js) reads the library's ids here and loads one
            # by typing its id into presenter-load
            picker_list = gr.Textbox(visible="hidden", elem_id="presenter-list", label="Recordings (ids)")
            picker_load = gr.Textbox(visible="hidden", elem_id="presenter-load", label="Recording to load")
            with gr.Row():
                status = gr.Textbox(label="Library and export messages", interactive=False, elem_id="library-status",
                                    lines=2, max_lines=4, scale=3)
                download = gr.File(label="Download", interactive=False, elem_id="download-file", height=110, scale=2)
        with gr.Accordion("Sweep charts: steps, length and threshold, measured live", open=False, elem_id="sweeps"):
            sweeps_tab(policy=policy)
        for side, c in controls.items():
            list_models, list_inputs = _models(policy, c)
            listing = {"fn": list_models, "inputs": list_inputs, "outputs": [c.arg], "concurrency_limit": 8,
                       "concurrency_id": "models", "show_progress": "hidden", "api_name": False}
            c.kind.change(_pick(c), inputs=[c.kind], outputs=[c.arg, c.key, *c.groups.values()],
                          queue=False, show_progress="hidden", api_name=False).then(**listing)
            c.key.submit(**listing)
        left, right = controls["left"], controls["right"]
        view = [table, pick, ids]
        quiet = {"show_progress": "hidden", "api_name": False}
        race_inputs = [owner, prompt, pins, *left.inputs(), *right.inputs()]
        refresh = as_visitor(policy, library_view)

        def start_race(event: Any, api_name: str | bool = False) -> Any:
            """Chains a race after `event` (the Run button, a lesson); the library refreshes when it ends."""
            race = event.then(run_race(left, right, policy), inputs=race_inputs, outputs=[player, current],
                              concurrency_limit=RACE_CONCURRENCY, concurrency_id="race", show_progress="hidden",
                              api_name=api_name)
            race.then(refresh, inputs=[owner], outputs=view, **quiet)
            return race

        run_event = start_race(run_btn.click(fn=None, **quiet), api_name="race")
        sampled.then(refresh, inputs=[owner], outputs=view, **quiet)
        race_events = [run_event, *wire_lessons(start_race, lambda path: [show_recording(path), str(path)],
                                                [player, current])]
        reads = {"concurrency_limit": RECORDING_CONCURRENCY, "concurrency_id": "recording"}
        stop_btn.click(fn=None, cancels=race_events).then(after_stop, inputs=None, outputs=[player, current],
                                                          **reads, **quiet) \
            .then(refresh, inputs=[owner], outputs=view, **quiet)
        demo.load(open_page(policy), inputs=[stored_owner], outputs=[stored_owner, owner, *view, player, current],
                  queue=False, **quiet)  # the page opens even while the queue is full
        table.select(pick_row, inputs=[ids], outputs=[pick, new_name], **quiet)
        table.change(lambda v: json.dumps(list(v or [])), inputs=[ids], outputs=[picker_list], queue=False, **quiet)
        picker_load.change(as_visitor(policy, load_picked), inputs=[owner, picker_load],
                           outputs=[player, current, status], **reads, **quiet)
        load_btn.click(as_visitor(policy, load_entry), inputs=[owner, pick], outputs=[player, current, status],
                       **reads, **quiet)
        download_btn.click(as_visitor(policy, download_entry), inputs=[owner, pick], outputs=[download, status],
                           **reads, **quiet)
        rename = as_visitor(policy, rename_entry)
        rename_btn.click(rename, inputs=[owner, pick, new_name, current], outputs=[*view, current, status], **quiet)
        new_name.submit(rename, inputs=[owner, pick, new_name, current], outputs=[*view, current, status], **quiet)
        delete_btn.click(as_visitor(policy, delete_entry), inputs=[owner, pick], outputs=[*view, status], **quiet,
                         js="(owner, id) => [owner, (id && window.confirm('Delete ' + id.split('/').pop() + "
                            "'? This cannot be undone.')) ? id : null]")
        upload.upload(as_visitor(policy, upload_entry), inputs=[owner, upload],
                      outputs=[*view, player, current, status, upload], **reads, **quiet)
        exports = [btn.click(export_current(fmt), inputs=[current, clock], outputs=[download, status],
                             concurrency_limit=1, concurrency_id="export", api_name=False, show_progress="hidden",
                             js=CLOCK_JS) for fmt, btn in export_btns.items()]
        cancel_export_btn.click(fn=None, cancels=exports).then(
            lambda: "Any export in progress was cancelled; it left no file.", outputs=[status], **quiet)
        demo.unload(end_session)
    declared(demo)  # every input has a declared limit, or the build fails
    demo.queue(max_size=QUEUE_SIZE)
    door.watch(demo, policy)
    return demo


def launch(host: str = "127.0.0.1", port: int = 7860, share: bool = False, policy: Policy | None = None,
           **kwargs: Any) -> gr.Blocks:
    """Builds and serves the page on host:port (this machine only by default) with a bounded queue; `share` opts in to a
    public link, with a warning. `policy` defaults to the one the launch implies (app/policy.py); a served page says
    on stderr what it turns off. Returns the running page (pass prevent_thread_lock=True to get it back at once)."""
    policy = policy or from_launch(host, share)
    if share:
        print("Warning: --share makes this page public through Gradio's share servers; anyone with the link can "
              "run races on this machine, and keys typed into the page pass through that tunnel.", file=sys.stderr)
    if policy.served:
        print(policy.summary(), file=sys.stderr)
    demo = build(policy)
    demo.launch(server_name=host, server_port=port, share=share, **{**launch_options(), **kwargs})
    return demo
