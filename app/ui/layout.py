"""The Converge page: a short composition of its boxes, top to bottom, then their handlers.

The race (app/ui/race_ui.py: prompt, source pickers, Run and Stop), the player (player_ui.py), the lessons
(lessons_ui.py), the real-model pairs (pairs_ui.py), "Be the sampler" (sampler_ui.py), the twins' note, the library
(library_ui.py) with the exports (export_ui.py), the sweep charts (sweeps_tab.py) and the twins' board (board_tab.py);
each box's module holds its own handlers. The server never builds HTML from model output, prompts or files: it sends
data as the player's `payload` prop and the player (app/view/player/) writes every string with textContent. The source
pickers and their settings are rendered from the registry (sources_ui.py), so a new source needs no change here. The
first screen is the race: a filled prompt with example prompts, the pickers and Run in one row, then the player with
the first bundled example loaded and ready to play; the rest comes below it (the lessons move above it once a lesson's
race runs). `?presenter=1` opens the page in presenter mode, which shows only the race. The `mercury` and `openai`
pickers offer the models their endpoint lists (app/sources/listing.py, under the policy's rules). Launched with the
static site's folder (the command line builds it), the race box offers to race the twins in the visitor's browser
(app/ui/browser_race.py), the Board area their board there too, and the site's files are served read-only
(app/ui/site_files.py).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import gradio as gr
from starlette.middleware import Middleware

from app.serving.policy import LOCAL, Policy, from_launch
from app.sources.base import load_plugins
from app.trace.frames import MAX_RECORDING_BYTES
from app.ui import door
from app.ui.about import twins_note
from app.ui.board_tab import board_starter, board_tab
from app.ui.browser_race import began_button, kept_box, wire_keep, wire_place
from app.ui.budgets import budgeted
from app.ui.events import QUIET
from app.ui.export_ui import export_box, wire_exports
from app.ui.guard import GuardedBlocks, declared
from app.ui.lessons_ui import lessons_box
from app.ui.library_ui import library_box, messages_row, open_page, refresher, wire_library
from app.ui.page_assets import PAGE_CSS
from app.ui.page_cache import PageCache
from app.ui.pairs_ui import pairs_box
from app.ui.player_ui import player_box, show_recording
from app.ui.race_ui import race_box, race_starter, wire_pins, wire_questions, wire_stop
from app.ui.sampler_ui import sampler_box
from app.ui.sessions import OWNER_KEY, OWNER_SECRET, as_visitor, end_session
from app.ui.site_files import SiteFiles
from app.ui.sources_ui import wire_sources
from app.ui.sweeps_tab import sweeps_tab

QUEUE_SIZE = 64  # sessions waiting for a race slot before new ones are told the queue is full
CACHE_LIFETIME = (3600, 3600)  # Gradio's copies of handed-out files (downloads, exports) go after an hour


def launch_options(site: Path | None = None) -> dict[str, Any]:
    """Safe launch defaults: no monitoring endpoint, no run history in the browser, a file size cap; the door in
    front of every route, behind it the served page's kept replies (app/ui/page_cache.py) and the static site's files
    (`site`, app/ui/site_files.py) when given."""
    middleware = [Middleware(door.Door), Middleware(PageCache), Middleware(SiteFiles, folder=site)]
    return {"enable_monitoring": False, "max_file_size": MAX_RECORDING_BYTES, "run_history": False,
            "ssr_mode": False, "css": PAGE_CSS, "show_error": False, "app_kwargs": {"middleware": middleware}}


def build(policy: Policy = LOCAL, browser: bool = False) -> gr.Blocks:
    """The whole page as a gr.Blocks under `policy` (launch it with `launch()` or `demo.launch(**launch_options())`):
    the boxes top to bottom, then their handlers, in the order Gradio numbers them. With `browser` (launched with
    the site's folder), the twins may race in the visitor's browser (app/ui/browser_race.py)."""
    load_plugins()
    with GuardedBlocks(title="Converge", analytics_enabled=False, delete_cache=CACHE_LIFETIME) as demo:
        gr.Markdown("# Converge\nWatch a diffusion language model converge on its answer while an "
                    "autoregressive model types, each on its own thread and clock.", elem_id="converge-title")
        if policy.served:
            gr.Markdown(policy.page_note(), elem_id="trust-note")
        stored_owner = gr.BrowserState(None, storage_key=OWNER_KEY, secret=OWNER_SECRET)  # this browser's library
        owner = gr.State(None)  # the session's owner id, set only by the page-load handler
        current = gr.State(None)  # the recording file shown in the player (what exports are made from)
        ids = gr.State([])  # the library table's row ids
        race = race_box(policy, browser)
        player = player_box()
        shown = [player, current]
        wire_lessons = lessons_box(race.prompt, race.pins, race.controls)
        pairs_box(race.controls, policy)
        sampled = sampler_box(lambda fn: as_visitor(policy, fn), owner, player, current, show_recording)
        headline, details = twins_note()
        with gr.Accordion(headline, open=False, elem_id="twins-about"):
            gr.Markdown(details)
        with gr.Column(elem_id="library-area"):
            library = library_box(policy)
            exports = export_box()
            messages = messages_row()
        with gr.Accordion("Sweep charts: steps, length and threshold, measured live", open=False, elem_id="sweeps"):
            sweeps_tab(policy=policy)
        with gr.Accordion("Board: the twins over many prompts", open=False, elem_id="board") as board_shell:
            board = board_tab(policy=policy, owner=owner, shown_in=shown, browser=race.place is not None)
        for controls in race.controls.values():
            wire_sources(controls, policy)
        wire_pins(race, policy)
        wire_questions(race)
        if race.place is not None:
            wire_place(race)
        view = [library.table, library.pick, ids]
        refresh = refresher(policy, owner, view)
        start_race = race_starter(race, policy, owner, shown, refresh)
        run_event = start_race(race.run_btn.click(fn=None, **QUIET), api_name="race")
        refresh(sampled)
        races = [run_event, *wire_lessons(start_race, lambda path: [show_recording(path, play=True), str(path)], shown,
                                          board_starter(policy, owner, board, board_shell))]
        wire_stop(race, races, shown, refresh)
        demo.load(open_page(policy), inputs=[stored_owner], outputs=[stored_owner, owner, *view, *shown],
                  queue=False, **QUIET)  # the page opens even while the queue is full
        wire_library(library, messages, policy, owner, ids, shown)
        if race.place is not None:  # a race run in the visitor's browser is saved in their library too
            wire_keep(began_button(), kept_box(), policy, owner, view, current, messages.status)
        wire_exports(exports, current, messages.download, messages.status)
        demo.unload(end_session)
    declared(demo)  # every input has a declared limit, or the build fails
    budgeted(demo)  # and every handler a budget (app/ui/budgets.py)
    demo.queue(max_size=QUEUE_SIZE, api_open=not policy.served)  # served: queued handlers run only through the
    door.watch(demo, policy)                                      # queue and its door, never by /run/ or /api/
    return demo


def launch(host: str = "127.0.0.1", port: int = 7860, share: bool = False, policy: Policy | None = None,
           site: Path | None = None, **kwargs: Any) -> gr.Blocks:
    """Builds and serves the page on host:port (this machine only by default) with a bounded queue; `share` opts in to a
    public link, with a warning. `policy` defaults to the one the launch implies (app/serving/policy.py); a served
    page says on stderr what it turns off. `site` is the static site's built folder (the command line builds it), served
    read-only so the twins can race in visitors' browsers. Returns the running page (pass prevent_thread_lock=True to
    get it back at once)."""
    policy = policy or from_launch(host, share)
    if share:
        print("Warning: --share makes this page public through Gradio's share servers; anyone with the link can "
              "run races on this machine, and keys typed into the page pass through that tunnel. Every visitor "
              "arrives from 127.0.0.1 through it, so the per-address limits count the last X-Forwarded-For address, "
              "which a visitor can write unless the relay appends its own; FORWARDED_ALLOW_IPS='' counts every "
              "visitor as one address instead (docs/security.md).",
              file=sys.stderr)
    if policy.served:
        print(policy.summary(), file=sys.stderr)
    demo = build(policy, browser=site is not None)
    demo.launch(server_name=host, server_port=port, share=share, **{**launch_options(site), **kwargs})
    return demo
