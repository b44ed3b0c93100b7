"""The player on the page: the gr.HTML that mounts it, and the updates of its `payload` prop the boxes send.

A payload goes to the browser with the update that carries it and is not kept on the server (app/ui/session_state.py
forgets it): Gradio kept, for each session, the player as its last update rebuilt it, payload included, which was a
whole recording again for every session that loaded one.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any

import gradio as gr

from app.sources.base import setting_defaults
from app.trace.store import examples_dir
from app.ui.page_assets import PLAYER_GLUE, player_head
from app.ui.session_state import sent_not_kept
from app.view.payload import load_payload, new_run_id, player_json


def to_player(payload: dict[str, Any]) -> dict[str, Any]:
    """An update of the player's `payload` prop, sent as one JSON string.

    A string is replaced whole from one update to the next; Gradio 6.31's per-element diff of nested
    lists renumbers deletions once per enclosing list (gradio.utils.diff) and corrupts rows that shrink.
    """
    return gr.update(payload=player_json(payload))


KEPT_EXAMPLES = 16  # bundled examples whose payload is kept (each tens of kB); the page opens on the first
_kept: OrderedDict[tuple[str, int, int], dict[str, Any]] = OrderedDict()
_kept_lock = threading.Lock()


def recording_at_start(path: Path) -> dict[str, Any]:
    """The payload of the recording at `path`, at its start. A bundled example's is read and analysed once per
    version of its file and kept: every page load shows the first example, and reading it was most of a page load's
    work on the server (a class opening the page at once); each load still gets a run id of its own."""
    def read() -> dict[str, Any]:
        return load_payload(path, name=path.name, cursor="start", defaults=setting_defaults())

    try:
        stat, where = path.stat(), path.resolve()
        bundled = where.parent == examples_dir().resolve()
    except OSError:
        bundled = False
    if not bundled:
        return read()
    key = (str(where), stat.st_mtime_ns, stat.st_size)
    with _kept_lock:
        kept = _kept.get(key)
        if kept is not None:
            _kept.move_to_end(key)
    if kept is None:
        kept = read()
        with _kept_lock:
            _kept[key] = kept
            while len(_kept) > KEPT_EXAMPLES:
                _kept.popitem(last=False)
    return {**kept, "run": new_run_id("rec")}


def show_recording(path: Path, play: bool = False) -> dict[str, Any]:
    """The player's update that loads the recording at `path`, at its start, ready to play (playing, with `play`)."""
    return to_player({**recording_at_start(path), **({"autoplay": True} if play else {})})


def player_box() -> gr.HTML:
    """The player where it is called, inside the open Blocks, empty until the page-load handler fills it."""
    player = gr.HTML(value="", html_template='<div class="cv-mount"></div>', js_on_load=PLAYER_GLUE,
                     head=player_head(), apply_default_css=False, elem_id="player", payload=None)
    return sent_not_kept(player, "payload")
