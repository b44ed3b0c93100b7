"""The "Real models" box: pick a pair of real models (app/sources/pairs.py), read what it costs, and set both sides.

Choosing a pair shows its download size, the memory it needs and the device it suits; "Use this pair" sets the two
source pickers and their settings, as a lesson does, so the learner sees and can change every setting before
pressing Run. A machine without a package the pair needs (torch, transformers, diffusers) or without the memory is
told so first, in one sentence with what to install, before anything is set or downloaded. A served page
offers only the pairs its host allows: Hugging Face models the host listed (or all, with hf-models), with
remote-code for LLaDA and Dream, and the API pairs.
"""

from __future__ import annotations

from typing import Any

import gradio as gr

from app.errors import UserError
from app.serving.policy import LOCAL, Policy
from app.sources.pairs import PAIRS, Pair, check_machine
from app.ui.events import QUIET
from app.ui.lessons_ui import control_outputs, control_values

NOT_OFFERED = "This pair is not offered on this page."


def offered(p: Pair, policy: Policy = LOCAL) -> bool:
    """Whether `policy` lets visitors race pair `p`: each source kind offered, each Hugging Face model allowed, and
    remote code allowed where a side runs its model's own code."""
    for spec, settings in ((p.left, p.left_settings), (p.right, p.right_settings)):
        prefix, _, arg = spec.partition(":")
        if not policy.offers(prefix):
            return False
        if prefix.startswith("hf-") and not policy.hf_model_allowed(arg):
            return False
        if settings.get("trust_remote_code") and not policy.can("remote-code"):
            return False
    return True


def pair_markdown(p: Pair) -> str:
    """What a pair is and what it takes, as the box shows it."""
    cost = (f"{p.download_gb:g} GB to download, about {p.memory_gb():g} GB of {p.device} memory for both"
            if sum(p.params_b) else "nothing to download")
    return (f"**{p.title}** ({p.device}: {cost})\n\nLeft `{p.left}`, right `{p.right}`.\n\n{p.note}")


def not_here(p: Pair) -> str | None:
    """The box's line saying why `p` cannot run on this machine (a missing package first, then memory), or None."""
    try:
        check_machine(p)
    except UserError as e:
        return f"**Not on this machine:** {e}"
    return None


def describe(name: Any, policy: Policy = LOCAL) -> str:
    """The box's text for the pair called `name`, what this machine lacks for it first; or one sentence when the page
    does not offer it (the handler can be called through the queue API with any value, which is never repeated
    back)."""
    p = PAIRS.get(name) if isinstance(name, str) else None
    if p is None or not offered(p, policy):
        return NOT_OFFERED
    lacking = not_here(p)
    return f"{lacking}\n\n{pair_markdown(p)}" if lacking else pair_markdown(p)


def _page_value(value: Any) -> Any:
    """A pair's setting as the page's widget holds it: an "off" setting (None) is 0 there."""
    return 0.0 if value is None else value


def apply_pair(name: str, controls: dict[str, Any], policy: Policy = LOCAL) -> list[Any]:
    """The box's text, then the values of `control_outputs(controls)`: the pair's sources and settings, or, when the
    pair is not offered or this machine lacks its memory, a sentence saying so and every control left alone."""
    skip = [gr.skip()] * len(control_outputs(controls))
    p = PAIRS.get(name) if isinstance(name, str) else None
    if p is None or not offered(p, policy):
        return [gr.update(value=NOT_OFFERED), *skip]
    lacking = not_here(p)
    if lacking:  # said first, before what the pair is: nothing is set, so Run cannot be pressed in vain
        return [gr.update(value=f"{lacking}\n\n{pair_markdown(p)}"), *skip]
    sources = {"left": (p.left, {k: _page_value(v) for k, v in p.left_settings.items()}),
               "right": (p.right, {k: _page_value(v) for k, v in p.right_settings.items()})}
    done = f"{pair_markdown(p)}\n\n**Set on both sides:** check the settings, then press Run."
    return [gr.update(value=done), *control_values(sources, controls)]


def pairs_box(controls: dict[str, Any], policy: Policy = LOCAL) -> None:
    """Builds the closed "Real models" accordion where it is called, inside the open Blocks, and wires it."""
    pairs = [p for p in PAIRS.values() if offered(p, policy)]
    if not pairs:
        return
    with gr.Accordion("Real models: pairs to race (download size, memory, device)", open=False, elem_id="pairs"):
        with gr.Row():
            pick = gr.Dropdown(choices=[(f"{p.title} [{p.device}]", p.name) for p in pairs], value=pairs[0].name,
                               label="Pair", elem_id="pair-pick", scale=4)
            use = gr.Button("Use this pair", variant="primary", elem_id="pair-use", scale=1)
        about = gr.Markdown(describe(pairs[0].name, policy), elem_id="pair-about")
    quiet = {**QUIET, "queue": False}
    pick.change(lambda name: describe(name, policy), inputs=[pick], outputs=[about], **quiet)
    use.click(lambda name: apply_pair(name, controls, policy), inputs=[pick],
              outputs=[about, *control_outputs(controls)], **quiet)
