"""Many widgets sent as one value: a JavaScript step writes their values, as a JSON object keyed by each widget's
elem_id, into one hidden box just before the handler that reads them, so the handler takes that box instead of every
widget.

Why: Gradio's page keeps a loading status for every input of a queued handler once it has run, and refreshes each of
them, found by a walk of the page's component tree, on every streamed update of any handler. The race's settings are
about 200 widgets (each side's settings for every kind of source), so during a race that refresh took some 40% of the
page's main thread (a CDP profile of four lessons' races, issue 52). The box's own value at build time is the
widgets' defaults, and a widget the object leaves out keeps its default, so an API caller names only what it changes.
app/ui/guard.py checks each value in the box against its widget's limit, as it checks any input, before the handler
runs.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import gradio as gr

from app.ui.events import QUIET


@dataclass(frozen=True)
class Pack:
    """The hidden box and the widgets whose values it carries, by elem_id."""

    box: Any
    widgets: dict[str, Any]


PACKS: dict[int, Pack] = {}  # by the box's component id: how the guard and the handler find its widgets


def pack_box(widgets: list[Any], elem_id: str, label: str) -> Pack:
    """A hidden box, built where it is called inside the open Blocks, that carries `widgets`' values (each has its
    own elem_id); its value at build time is their defaults."""
    by_id = {w.elem_id: w for w in widgets}
    assert len(by_id) == len(widgets) and None not in by_id, "each packed widget needs its own elem_id"
    box = gr.Textbox(value=json.dumps({k: w.value for k, w in by_id.items()}), visible="hidden", elem_id=elem_id,
                     label=label)
    pack = Pack(box, by_id)
    PACKS[box._id] = pack
    return pack


def gather(event: Any, pack: Pack) -> Any:
    """Chains, after `event`, the browser-only step that writes the widgets' values into the box."""
    keys = json.dumps(list(pack.widgets))
    js = f"(...values) => JSON.stringify(Object.fromEntries({keys}.map((k, i) => [k, values[i]])))"
    return event.then(fn=None, js=js, inputs=list(pack.widgets.values()), outputs=[pack.box], queue=False, **QUIET)


def parsed(pack: Pack, text: Any) -> list[Any] | None:
    """The box's values, one a widget in the pack's order (a widget left out: its default), or None when the text is
    not a JSON object whose keys are the pack's widgets."""
    try:
        given = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return None
    if not isinstance(given, dict) or not set(given) <= set(pack.widgets):
        return None
    return [given.get(k, w.value) for k, w in pack.widgets.items()]


def unpacked(pack: Pack, text: Any) -> list[Any]:
    """The widgets' values as the handler would have received them as inputs: each read by its widget's own
    preprocessing (a number box's precision, a dropdown's check); ValueError when the box cannot be read."""
    values = parsed(pack, text)
    if values is None:
        raise ValueError("the packed values are not an object of the pack's widgets")
    return [w.preprocess(v) for w, v in zip(pack.widgets.values(), values)]
