"""Every handler's inputs checked against their declared limits (app/serving/input_limits.py) before Gradio or the
handler does any work with them, and no visitor text in the server's log.

Why here: Gradio runs any handler of the page through its queue API by fn_index, hidden ones (api_name=False)
included, and preprocesses each value (a dropdown's check against its choices, a file's move to the cache) before
the handler sees it. `GuardedBlocks` is the page's gr.Blocks with one step in front of that: each input's value is
measured against the limit of its kind and refused with one sentence (a gr.Error the page shows) before anything
else. A value Gradio's own preprocessing rejects, and an exception inside a handler, are logged by their length and
hash, or by the traceback's frames alone, never their text, since Gradio's own traceback would print the value.
"""

from __future__ import annotations

import logging
import math
import traceback
from typing import Any

import gradio as gr

from app.serving.input_limits import LIMITS, fingerprint, refusal
from app.ui.packed import PACKS, parsed
from app.ui.session_state import PageBlocks

log = logging.getLogger("converge.inputs")

# the kind of input behind each free-text box of the page, by elem_id; every other input goes by its component type
TEXT_FIELDS: dict[str, str] = {
    "prompt": "prompt", "sampler-prompt": "prompt", "pins": "pins", "sampler-pins": "pins",
    "left-key": "key", "right-key": "key", "left-arg": "model", "right-arg": "model",
    "sampler-model-name": "model", "sweep-pass-cost-hf": "model", "library-name": "name", "player-clock": "choice",
    "presenter-load": "choice",  # the presenter picker's recording id (app/ui/presenter_picker.js)
    "browser-kept": "browser-race",  # a race run in the visitor's browser, to save (app/ui/browser_race.py)
    "draft-text": "draft", "draft-recording": "choice", "renoise-span": "choice",  # "Start from" (app/ui/draft_ui.py)
    "race-settings": "settings",  # both sides' settings widgets, packed into one box (app/ui/packed.py)
}
TYPE_FIELDS: dict[str, str] = {
    "Dropdown": "choice", "Radio": "choice", "Slider": "number", "Number": "number", "Checkbox": "flag",
    "BrowserState": "owner", "File": "file", "Dataset": "example",
}
NOT_A_CHOICE = "That value is not one of the choices offered; pick one from its list."
OUT_OF_RANGE = "A number setting is outside its range; use its slider."
OUT_OF_BOX = "A number setting is outside its range; give one the box allows."
TOO_LARGE = "A number setting is too large to read; give a smaller number."
UNREADABLE = "One of the values sent could not be read; reload the page and try again."
FAILED = "Something went wrong on the server; the error is in its log (without your text)."


def field_of(component: Any) -> str | None:
    """The declared kind of input a component takes (None for a server-kept gr.State); LookupError when it has none,
    so a new input without a limit fails the page's build."""
    if getattr(component, "stateful", False):
        return None
    elem = component.elem_id or ""
    if elem in TEXT_FIELDS:
        return TEXT_FIELDS[elem]
    if elem.endswith("-base_url"):
        return "base_url"
    kind = TYPE_FIELDS.get(type(component).__name__)
    if kind is None:
        raise LookupError(f"input {type(component).__name__} {elem!r} has no declared limit (app/ui/guard.py)")
    return kind


def too_large(value: int | float) -> bool:
    """Whether a number is past what a float holds (Gradio reads a number box's value as one): infinite, not a
    number, or a whole number of over 308 digits."""
    try:
        return not math.isfinite(float(value))
    except OverflowError:
        return True


def out_of_place(component: Any, value: Any) -> str | None:
    """The sentence for a value within its size that its component would still refuse (a dropdown or radio value not
    among the choices it offers this session, a slider's or a number box's number outside its range, or past what a
    float holds: a whole number of hundreds of digits); Gradio's own refusal would repeat the value in the reply and
    print it in the log, or say only that a value could not be read."""
    kind = type(component).__name__
    if value is None:
        return None
    if kind in ("Dropdown", "Radio") and not getattr(component, "allow_custom_value", False) \
            and not getattr(component, "multiselect", False):
        return None if value in [v for _, v in component.choices] else NOT_A_CHOICE
    if kind in ("Slider", "Number") and isinstance(value, (int, float)) and not isinstance(value, bool):
        if too_large(value):
            return TOO_LARGE
        low, high = component.minimum, component.maximum
        inside = (low is None or low <= value) and (high is None or value <= high)
        return None if inside else OUT_OF_RANGE if kind == "Slider" else OUT_OF_BOX
    return None


def value_refusal(component: Any, value: Any, state: Any = None) -> tuple[str, str] | None:
    """(sentence, kind) when one input's value is over its kind's limit or out of place for its component (read from
    the session's `state` where that session updated it), or None (a server-kept gr.State is never refused)."""
    field = field_of(component)
    if field is None:
        return None
    current = state[component._id] if state is not None and component._id in state else component
    sentence = refusal(field, value) or out_of_place(current, value)
    return (sentence, field) if sentence else None


def first_refusal(block_fn: Any, inputs: list[Any], state: Any = None) -> tuple[str, int, str, Any] | None:
    """(sentence, input index, kind, the value refused) for the first input over its limit or out of place (inside a
    packed box: the first widget's value that is), or None when all are acceptable; `state` is the session's (a
    component it updated, such as a picker's choices, is read from it)."""
    for i, (component, value) in enumerate(zip(block_fn.inputs, inputs)):
        found = value_refusal(component, value, state)
        if found:
            return found[0], i, found[1], value
        inner = packed_refusal(component._id, value) if component._id in PACKS else None
        if inner:
            return inner[0], i, inner[1], inner[2]
    return None


def packed_refusal(box_id: int, text: Any) -> tuple[str, str, Any] | None:
    """(sentence, kind, value) for the first value in a packed box (app/ui/packed.py) that its widget would refuse as
    an input, or for a box that is not an object of its widgets' values; None when all are acceptable."""
    pack = PACKS[box_id]
    values = parsed(pack, text)
    if values is None:
        return UNREADABLE, "settings", text
    for widget, value in zip(pack.widgets.values(), values):
        found = value_refusal(widget, value)
        if found:
            return found[0], found[1], value
    return None


def _where(block_fn: Any) -> str:
    return str(getattr(block_fn, "name", None) or getattr(getattr(block_fn, "fn", None), "__name__", "handler"))


class GuardedBlocks(PageBlocks):
    """gr.Blocks whose every handler refuses inputs over their limits before any work, with one sentence, and whose
    failures are logged without the visitor's text; its sessions are kept small (app/ui/session_state.py)."""

    async def preprocess_data(self, block_fn: Any, inputs: list[Any], state: Any, explicit_call: bool = False) -> Any:
        """Refuses the call before Gradio's preprocessing when an input is over its limit or out of place."""
        found = first_refusal(block_fn, inputs or [], state)
        if found:
            sentence, i, field, value = found
            log.warning("refused input %d (%s) of %s: %s", i, field, _where(block_fn), fingerprint(value))
            raise gr.Error(sentence, print_exception=False)
        try:
            return await super().preprocess_data(block_fn, inputs, state, explicit_call)
        except Exception as e:  # Gradio's own messages repeat the value they refuse
            log.warning("could not read the inputs of %s (%s): %s", _where(block_fn), type(e).__name__,
                        "; ".join(fingerprint(v) for v in inputs or []))
            raise gr.Error(UNREADABLE, print_exception=False) from None

    async def call_function(self, block_fn: Any, *args: Any, **kwargs: Any) -> Any:
        """Runs the handler; an exception it raises is logged by its type and frames, since its message may quote
        input."""
        try:
            return await super().call_function(block_fn, *args, **kwargs)
        except gr.Error:
            raise  # the handler's own sentence, printed or not as it chose
        except Exception as e:
            frames = "".join(traceback.format_tb(e.__traceback__))
            log.error("%s failed with %s (message not logged: it may hold visitor text)\n%s", _where(block_fn),
                      type(e).__name__, frames)
            raise gr.Error(FAILED, print_exception=False) from None


def declared(demo: gr.Blocks) -> dict[str, int]:
    """How many inputs of the built page take each declared kind; raises LookupError for one without a limit."""
    counts: dict[str, int] = {}
    for block_fn in demo.fns.values():
        for component in block_fn.inputs:
            field = field_of(component)
            if field is not None:
                assert field in LIMITS, field
                counts[field] = counts.get(field, 0) + 1
    return counts
