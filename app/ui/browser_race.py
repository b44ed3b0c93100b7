"""The race box's choice of where the twins race: on this server (the Run handler) or in the visitor's browser.

When both sides are the built-in twins (local-diffusion against local-ar) and the page was launched with the static
site's folder (app/ui/site_files.py serves it), the race box offers "Run on: this server / your browser", "your
browser" by default on a served page, so that a class does not queue on the server's CPUs. The browser's Run has no
handler on the server (`fn=None`): app/ui/browser_race.js reads the prompt and the twins' settings in the browser,
loads the site's runtime and samplers from the page's origin, and draws the race in the page's player through
app/site/rows.js `race` (the static site's one implementation). Choosing which Run button shows is done in the
browser too. Which twin settings the browser honours comes from app/sources/local.py `BROWSER_SETTINGS`, the list
the static site's race.js checks against (`spec_of` marks each input); other sources, and pins, keep the server's race.
"""

from __future__ import annotations

import json
from typing import Any

import gradio as gr

from app.serving.policy import Policy
from app.sources.local import BROWSER_SETTINGS
from app.ui.site_files import SITE_ROUTE

ON_SERVER, ON_BROWSER = "this server", "your browser"
TWINS = ("local-diffusion", "local-ar")
RACING = "Racing in your browser: the twins run on this device (onnxruntime-web); nothing is sent to the server."
RAN = "Ran in your browser: the twins ran on this device (onnxruntime-web); nothing was sent to the server."
# which Run button shows: the browser's only while both sides are the twins and "your browser" is chosen
SHOW_JS = (f"(left, right, on) => {{ const twins = left === {json.dumps(TWINS[0])} && right === {json.dumps(TWINS[1])};"
           f" const mine = twins && on === {json.dumps(ON_BROWSER)}; return [{{__type__: 'update', visible: twins}},"
           " {__type__: 'update', visible: !mine}, {__type__: 'update', visible: mine}]; }")


def default_place(policy: Policy) -> str:
    """Where the twins race unless the visitor picks: in the browser on a served page, on this machine otherwise."""
    return ON_BROWSER if policy.served else ON_SERVER


def place_box(policy: Policy, twins: bool) -> tuple[Any, Any]:
    """The "Run on" choice and the browser's Run button, where they are called (beside the server's Run)."""
    place = gr.Radio([ON_SERVER, ON_BROWSER], value=default_place(policy), label="Run on", elem_id="run-on",
                     visible=twins)
    mine = twins and default_place(policy) == ON_BROWSER
    browser_run = gr.Button("Run", variant="primary", elem_id="run-browser", visible=mine)
    return place, browser_run


def spec_of(controls: dict[str, Any]) -> dict[str, Any]:
    """What browser_race.js reads: the site's address, the captions, and for each twin's setting (in the order the
    Run button passes them) its side, name, label, default, whether an empty box means the default and whether the
    browser's samplers honour it (app/sources/local.py `BROWSER_SETTINGS`, the list the static site's race.js checks
    against)."""
    inputs = [{"side": side, "name": name, "label": str(spec.get("label", name)), "default": spec.get("default"),
               "own": bool(spec.get("own")), "offered": name in BROWSER_SETTINGS[kind]}
              for side, kind in zip(("left", "right"), TWINS)
              for prefix, name, spec, _ in controls[side].settings if prefix == kind]
    return {"base": SITE_ROUTE.lstrip("/"), "racing": RACING, "ran": RAN, "inputs": inputs}


def wire_place(box: Any) -> None:
    """Shows the right Run button as the sides and the choice change, and races in the browser on its Run: all in
    the browser, no handler on the server."""
    left, right = box.controls["left"], box.controls["right"]
    shown = {"fn": None, "inputs": [left.kind, right.kind, box.place], "outputs": [box.place, box.run_btn,
                                                                                   box.browser_run],
             "js": SHOW_JS, "show_progress": "hidden", "api_name": False, "queue": False}
    for component in (left.kind, right.kind, box.place):
        component.change(**shown)
    settings = [c for side, kind in zip(("left", "right"), TWINS)
                for prefix, _, _, c in box.controls[side].settings if prefix == kind]
    race_js = f"(...values) => {{ window.ConvergeBrowserRace.run({json.dumps(spec_of(box.controls))}, values); }}"
    box.browser_run.click(fn=None, inputs=[box.prompt, box.pins, left.kind, right.kind, *settings], js=race_js,
                          show_progress="hidden", api_name=False, queue=False)
