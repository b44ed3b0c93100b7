"""Each side's source picker and its per-source settings: the widgets rendered from every source's settings spec,
the values read back for the Run handler, and the handlers that show a picked kind's settings and list its models.

A kind that runs more than one way (hf-diffusion: a masked sampler, or LLaDA2.x through diffusers' pipeline) gets a
control for each setting any of its backends honours; only those of the backend its model names are shown and read
back (`shown_backend`), so a side shows, and sends, exactly what its source will apply."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Callable

import gradio as gr

from app.errors import UserError
from app.serving.policy import HF_PREFIXES, LOCAL, Policy
from app.sources.base import REGISTRY, Backend
from app.sources.listing import DEFAULT_MODELS, LISTED, TYPE_A_NAME
from app.ui.budgets import queued
from app.ui.events import QUIET
from app.ui.visitor import visitor_models

ARG_INFO = ("A model name for mercury: and openai: (their endpoint's list appears when picked), "
            "a recording like example/NAME.jsonl for replay:, a Hugging Face id or folder for hf-.")


def setting_component(spec: dict[str, Any], elem_id: str, visible: bool = True) -> gr.components.Component:
    """One input for one entry of a source's settings spec: a checkbox, a dropdown, a slider, a number box that may
    be left empty (a setting that may be the model's own) or a textbox."""
    default, label, info = spec.get("default"), str(spec.get("label", elem_id)), spec.get("info")
    choices = spec.get("choices")
    shared = {"label": label, "info": info, "elem_id": elem_id, "visible": visible}
    if isinstance(default, bool) and (choices is None or all(isinstance(c, bool) for c in choices)):
        return gr.Checkbox(value=default, **shared)
    if spec.get("own"):  # left empty: the model's own value (app/engine/options.py `Option.own`)
        return gr.Number(value=default, minimum=spec.get("min"), maximum=spec.get("max"), step=spec.get("step"),
                         **shared)
    if choices is not None:
        return gr.Dropdown(choices=list(choices), value=default, **shared)
    if "min" in spec and "max" in spec:
        return gr.Slider(minimum=spec["min"], maximum=spec["max"], step=spec.get("step"), value=default, **shared)
    return gr.Textbox(value="" if default is None else str(default), **shared)


def shown_backend(policy: Policy, prefix: Any, arg: Any) -> Backend | None:
    """The backend whose settings a side shows for the picked kind and model (None for no kind): the one the
    model's config names (app/sources/base.py `SourceKind.backend`), or the kind's first for a Hugging Face model a
    served page does not run, so that no visitor learns from the page what lies on the server's disk."""
    kind = REGISTRY.get(str(prefix or ""))
    if kind is None:
        return None
    arg = str(arg or "").strip()
    if prefix in HF_PREFIXES and not policy.hf_model_allowed(arg):
        return kind.backends[0]
    return kind.backend(arg)


@dataclass
class SideControls:
    """The inputs for one side, in the order the Run handler receives them; `policy` decides which backend's settings
    a Hugging Face model shows (`shown_backend`)."""

    side: str
    kind: Any
    arg: Any
    key: Any
    policy: Policy = LOCAL
    groups: dict[str, Any] = field(default_factory=dict)
    settings: list[tuple[str, str, dict[str, Any], Any]] = field(default_factory=list)

    def inputs(self) -> list[Any]:
        return [*self.picker(), *self.widgets()]

    def picker(self) -> list[Any]:
        """The kind, model and key boxes: the first values `read` takes."""
        return [self.kind, self.arg, self.key]

    def widgets(self) -> list[Any]:
        """The settings' widgets, every kind's, in the order `read` takes their values after the kind, model and key."""
        return [c for _, _, _, c in self.settings]

    def read(self, values: list[Any]) -> tuple[str, dict[str, Any], dict[str, Any]]:
        """(source spec, the settings the chosen kind's backend honours as the widgets hold them, secrets) from this
        side's slice of the inputs; the source reads each value as its declaration says (app/engine/options.py
        `coerce`)."""
        prefix, arg, key = values[0], (values[1] or "").strip(), (values[2] or "").strip()
        kind = REGISTRY.get(prefix)
        spec = f"{prefix}:{arg}" if kind is not None and kind.takes_arg and arg else str(prefix or "")
        honours = self.honours(prefix, arg)
        settings = {name: v for (p, name, _, _), v in zip(self.settings, values[3:]) if p == prefix and name in honours}
        secrets = {"api_key": key} if key and kind is not None and kind.takes_key else {}
        return spec, settings, secrets

    def honours(self, prefix: Any, arg: Any) -> dict[str, Any]:
        """The settings the picked kind and model's backend honours (`shown_backend`); none for no kind."""
        backend = shown_backend(self.policy, prefix, arg)
        return backend.settings if backend is not None else {}

    def switched(self) -> list[Any]:
        """The controls whose visibility follows the model picked (those of a kind with more than one backend)."""
        return [c for p, _, _, c in self.settings if len(REGISTRY[p].backends) > 1]

    def show(self, prefix: Any, arg: Any) -> list[Any]:
        """Updates for `switched()`: each shown only when its kind is picked and the model's backend honours it."""
        honours = self.honours(prefix, arg)
        return [gr.update(visible=p == prefix and name in honours) for p, name, _, _ in self.settings
                if len(REGISTRY[p].backends) > 1]


def hidden_setting(policy: Policy, name: str) -> bool:
    """Settings a served page does not render (the handlers refuse them as well): running a model's own code, and a
    base URL when the host listed none."""
    return (name == "trust_remote_code" and not policy.can("remote-code")) or (
        name == "base_url" and policy.served and not policy.base_urls)


def side_controls(side: str, default: str, policy: Policy = LOCAL) -> SideControls:
    """The picker, argument box, key field and per-kind settings for one side, as far as `policy` offers them."""
    title = side.capitalize()
    choices = [(f"{prefix} \u2014 {kind.label}", prefix) for prefix, kind in REGISTRY.items() if policy.offers(prefix)]
    first = REGISTRY.get(default)
    kind = gr.Dropdown(choices=choices, value=default, label=f"{title} source", elem_id=f"{side}-source")
    arg = gr.Dropdown(choices=[], value=DEFAULT_MODELS.get(default, ""), allow_custom_value=True, info=ARG_INFO,
                      label=f"{title} model or recording (the part after ':')", elem_id=f"{side}-arg",
                      visible=bool(first and first.takes_arg))
    lend = "leave empty to use the environment variable" if policy.can("env-keys") else "required on this server"
    key = gr.Textbox(label=f"{title} API key (never saved; {lend})",
                     type="password", elem_id=f"{side}-key", visible=bool(first and first.takes_key), max_lines=1)
    controls = SideControls(side=side, kind=kind, arg=arg, key=key, policy=policy)
    with gr.Accordion(f"{title} settings", open=False, elem_id=f"{side}-settings"):
        for prefix, k in REGISTRY.items():
            honours = k.backend(DEFAULT_MODELS.get(prefix, "")).settings  # the backend with no model named yet
            with gr.Group(visible=prefix == default) as group:
                for name, spec in k.settings.items():
                    if hidden_setting(policy, name):
                        continue
                    if name == "base_url" and policy.served:
                        spec = {**spec, "info": "Only these: " + ", ".join(policy.base_urls) + " (with your own key)."}
                    component = setting_component(spec, f"{side}-{prefix}-{name}", visible=name in honours)
                    controls.settings.append((prefix, name, spec, component))
            controls.groups[prefix] = group
    return controls


def _pick(controls: SideControls) -> Any:
    """The picker's change handler: show the argument box, the key field and the settings of the chosen kind."""
    def on_pick(prefix: str) -> list[Any]:
        kind = REGISTRY.get(prefix)
        return [gr.update(visible=bool(kind and kind.takes_arg)), gr.update(visible=bool(kind and kind.takes_key))] + [
            gr.update(visible=p == prefix) for p in controls.groups]
    return on_pick


def _models(policy: Policy, controls: SideControls) -> tuple[Callable[..., Any], list[Any]]:
    """The handler that fills the model picker of a side whose source lists its models (app/sources/listing.py),
    and its inputs: the kind, the model typed so far, the key, and the base URL settings. A listing that fails says
    why in the picker's one-line note; a typed name always stays allowed."""
    urls = [(prefix, c) for prefix, name, _, c in controls.settings if name == "base_url" and prefix in LISTED]

    def on_pick(prefix: str, arg: str | None, key: str | None, *url_values: str | None) -> Any:
        if prefix not in LISTED:
            return gr.update(choices=[], info=ARG_INFO)
        base_url = next((v for (p, _), v in zip(urls, url_values) if p == prefix), "") or ""
        value = (arg or "").strip() or DEFAULT_MODELS.get(prefix, "")
        try:
            models = visitor_models(policy, prefix, base_url, key)
        except UserError as e:
            return gr.update(choices=[value] if value else [], value=value, info=str(e))
        note = (f"{len(models)} models listed by the endpoint: pick one, or {TYPE_A_NAME}." if models
                else f"The endpoint lists no models: {TYPE_A_NAME}.")
        return gr.update(choices=models, value=value, info=note)
    return on_pick, [controls.kind, controls.arg, controls.key, *(c for _, c in urls)]


# a visitor's change of kind (the picker's `.input`: a lesson setting both kind and model fires only `.change`) puts the
# new kind's default model in the model box (empty but for Mercury): a name belongs to the kind it was picked for, and
# "mercury-2" under openai, or a Hugging Face id under a recording, cannot run. In the browser, so the box is cleared
# before the model listing chained on `.change` reads it. Its choices go first, in the same update: a value cleared
# over the old kind's choices, then those choices dropped, left Gradio's open list indexing a choice that was gone.
KIND_INPUT_JS = (f"(kind) => ({{__type__: 'update', choices: [], value: ({json.dumps(DEFAULT_MODELS)})[kind] ?? ''}})")


def wire_sources(controls: SideControls, policy: Policy) -> None:
    """One side's handlers: picking a kind shows its argument box, key field and settings, then lists its models
    (as does pressing Enter in the key field); picking a kind or a model shows the settings its backend honours; a
    visitor's pick of a kind replaces the model name with that kind's default."""
    list_models, list_inputs = _models(policy, controls)
    listing = {"fn": list_models, "inputs": list_inputs, "outputs": [controls.arg], **queued("models"),
               **QUIET}
    backend = {"fn": controls.show, "inputs": [controls.kind, controls.arg], "outputs": controls.switched(),
               **queued("models"), **QUIET}
    picked = controls.kind.change(_pick(controls), inputs=[controls.kind], outputs=[controls.arg, controls.key,
                                                                                    *controls.groups.values()],
                                  queue=False, **QUIET)
    controls.kind.input(fn=None, js=KIND_INPUT_JS, inputs=[controls.kind], outputs=[controls.arg], api_name=False)
    picked.then(**listing)
    picked.then(**backend)
    controls.arg.change(**backend)
    controls.key.submit(**listing)
