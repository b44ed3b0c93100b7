"""A handler that shows no spinner keeps no loading status on its outputs (app/ui/events.py HIDDEN, issue 52).

Gradio's page keeps a loading status for every output of every handler that has run and refreshes all of them on each
streamed update of any handler; with the lessons' and the race's handlers (about 200 outputs each) that took a third of
the page's main thread during a race. A handler that hides its spinner has no use for them, so it names no component
to show progress on. The first test enumerates the built page's handlers; the second shows that check failing.
"""

from __future__ import annotations

from typing import Any

import gradio as gr
import pytest

from app.serving.policy import LOCAL, from_launch
from app.ui.events import HIDDEN
from app.ui.layout import build

SERVED = from_launch("0.0.0.0", False, env={}, allow=("upload",))


def tracked(demo: gr.Blocks) -> list[tuple[str, int]]:
    """(name, outputs) of the handlers that hide their spinner yet keep a loading status on their outputs, leaving out
    the ones Gradio adds itself (gr.Examples' loader, one output each) and those with no output."""
    return [(fn.name or "js", len(fn.outputs)) for fn in demo.fns.values()
            if fn.show_progress == "hidden" and fn.show_progress_on != [] and fn.outputs
            and fn.name != "load_example"]


@pytest.mark.parametrize("policy, browser", [(LOCAL, False), (SERVED, True)], ids=["local", "served-browser"])
def test_every_handler_without_a_spinner_keeps_no_loading_status(policy: Any, browser: bool) -> None:
    demo = build(policy, browser)
    hidden = [fn for fn in demo.fns.values() if fn.show_progress == "hidden"]
    assert len(hidden) > 50 and max(len(fn.outputs) for fn in hidden) > 100  # the page's handlers, the big ones too
    assert tracked(demo) == []


def test_a_handler_that_only_hides_its_spinner_is_caught() -> None:
    with gr.Blocks() as demo:
        box, out = gr.Textbox(), gr.Textbox()
        box.submit(lambda text: text, inputs=[box], outputs=[out], show_progress="hidden")
        box.change(lambda text: text, inputs=[box], outputs=[out], **HIDDEN)
    assert tracked(demo) == [("<lambda>", 1)]
