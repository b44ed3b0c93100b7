"""The player on the page: the gr.HTML that mounts it, and the updates of its `payload` prop the boxes send.

A payload goes to the browser with the update that carries it and is not kept on the server (app/ui/session_state.py
forgets it): Gradio kept, for each session, the player as its last update rebuilt it, payload included, which was a
whole recording again for every session that loaded one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gradio as gr

from app.sources.base import setting_defaults
from app.ui.page_assets import PLAYER_GLUE, player_head
from app.ui.session_state import sent_not_kept
from app.view.payload import load_payload, player_json


def to_player(payload: dict[str, Any]) -> dict[str, Any]:
    """An update of the player's `payload` prop, sent as one JSON string.

    A string is replaced whole from one update to the next; Gradio 6.31's per-element diff of nested
    lists renumbers deletions once per enclosing list (gradio.utils.diff) and corrupts rows that shrink.
    """
    return gr.update(payload=player_json(payload))


def show_recording(path: Path, play: bool = False) -> dict[str, Any]:
    """The player's update that loads the recording at `path`, at its start, ready to play (playing, with `play`)."""
    payload = load_payload(path, name=path.name, cursor="start", defaults=setting_defaults())
    return to_player({**payload, **({"autoplay": True} if play else {})})


def player_box() -> gr.HTML:
    """The player where it is called, inside the open Blocks, empty until the page-load handler fills it."""
    player = gr.HTML(value="", html_template='<div class="cv-mount"></div>', js_on_load=PLAYER_GLUE,
                     head=player_head(), apply_default_css=False, elem_id="player", payload=None)
    return sent_not_kept(player, "payload")
