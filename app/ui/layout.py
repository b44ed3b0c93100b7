"""The Converge page: two source pickers, a prompt, Run and Stop, and the client-side player.

The server never builds HTML from model output, prompts or files: it sends data as the player's
`payload` prop and app/ui/player.js writes every string with textContent. The source pickers and
their settings are rendered from the registry, so a new source needs no change here.
"""

from __future__ import annotations

import inspect
import json
import os
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

import gradio as gr  # noqa: E402

from app.race import RECORDINGS_DIR, Race, recordings_dir  # noqa: E402
from app.sources.base import REGISTRY, SourceKind, load_plugins  # noqa: E402
from app.trace import MAX_RECORDING_BYTES, SIDES  # noqa: E402
from app.ui.payload import asset, live_payload, load_payload, message_payload, new_run_id  # noqa: E402

DEFAULT_PAIR = ("local-diffusion", "local-ar")
UPDATE_INTERVAL = 0.05  # seconds between coalesced updates: at most 20 a second reach the browser
RACE_CONCURRENCY = 2  # races at once across all users; local models are CPU-bound
MAX_PROMPT_CHARS = 20_000

PLAYER_GLUE = """
const mount = element.querySelector('.cv-mount');
const player = window.ConvergePlayer.create(mount);
const show = () => { if (props.payload) player.update(JSON.parse(props.payload)); };
show();
watch('payload', show);
"""

PAGE_CSS = """
#converge-title h1 { margin-bottom: 0; }
#player { min-height: 200px; }
"""

_sessions: dict[str, dict[str, Any]] = {}  # session hash -> {"race", "path", "run"} of its latest race
_sessions_lock = threading.Lock()


def to_player(payload: dict[str, Any]) -> dict[str, Any]:
    """An update of the player's `payload` prop, sent as one JSON string.

    A string is replaced whole from one update to the next; Gradio 6.31's per-element diff of nested
    lists renumbers deletions once per enclosing list (gradio.utils.diff) and corrupts rows that shrink.
    """
    return gr.update(payload=json.dumps(payload, ensure_ascii=False, allow_nan=False, separators=(",", ":")))


def launch_options() -> dict[str, Any]:
    """Safe launch defaults: no monitoring endpoint, no run history in the browser, a file size cap."""
    return {"enable_monitoring": False, "max_file_size": MAX_RECORDING_BYTES, "run_history": False,
            "ssr_mode": False, "css": PAGE_CSS, "show_error": False}


def needs_key(kind: SourceKind) -> bool:
    """Whether a source kind accepts an API key (its factory takes `api_key`)."""
    try:
        return "api_key" in inspect.signature(kind.make).parameters
    except (TypeError, ValueError):
        return False


def setting_component(spec: dict[str, Any], elem_id: str) -> gr.components.Component:
    """One input for one entry of a source's settings spec: a checkbox, a dropdown, a slider or a textbox."""
    default, label, info = spec.get("default"), str(spec.get("label", elem_id)), spec.get("info")
    choices = spec.get("choices")
    if isinstance(default, bool) and (choices is None or all(isinstance(c, bool) for c in choices)):
        return gr.Checkbox(value=default, label=label, info=info, elem_id=elem_id)
    if choices is not None:
        return gr.Dropdown(choices=list(choices), value=default, label=label, info=info, elem_id=elem_id)
    if "min" in spec and "max" in spec:
        return gr.Slider(minimum=spec["min"], maximum=spec["max"], step=spec.get("step"), value=default,
                         label=label, info=info, elem_id=elem_id)
    return gr.Textbox(value="" if default is None else str(default), label=label, info=info, elem_id=elem_id)


def coerce(spec: dict[str, Any], value: Any) -> Any:
    """A widget's value in the type the spec's default has (sliders give floats, integer settings want ints)."""
    default = spec.get("default")
    if value is None:
        return default
    if isinstance(default, bool):
        return bool(value)
    if isinstance(default, int) and isinstance(value, float) and value.is_integer():
        return int(value)
    return value


@dataclass
class SideControls:
    """The inputs for one side, in the order the Run handler receives them."""

    side: str
    kind: Any
    arg: Any
    key: Any
    groups: dict[str, Any] = field(default_factory=dict)
    settings: list[tuple[str, str, dict[str, Any], Any]] = field(default_factory=list)

    def inputs(self) -> list[Any]:
        return [self.kind, self.arg, self.key] + [c for _, _, _, c in self.settings]

    def read(self, values: list[Any]) -> tuple[str, dict[str, Any], dict[str, Any]]:
        """(source spec, settings changed from their defaults, secrets) from this side's slice of the inputs.

        Unchanged settings are left out so a source keeps its own derived defaults (steps that shrink to fit
        a shorter answer, say); the recording's header still lists every setting the source used.
        """
        prefix, arg, key = values[0], (values[1] or "").strip(), (values[2] or "").strip()
        kind = REGISTRY.get(prefix)
        spec = f"{prefix}:{arg}" if kind is not None and kind.takes_arg and arg else str(prefix or "")
        settings = {name: coerce(s, v) for (p, name, s, _), v in zip(self.settings, values[3:])
                    if p == prefix and coerce(s, v) != s.get("default")}
        secrets = {"api_key": key} if key and kind is not None and needs_key(kind) else {}
        return spec, settings, secrets


def side_controls(side: str, default: str) -> SideControls:
    """The picker, argument box, key field and per-kind settings for one side."""
    title = side.capitalize()
    choices = [(f"{prefix} \u2014 {kind.label}", prefix) for prefix, kind in REGISTRY.items()]
    first = REGISTRY.get(default)
    kind = gr.Dropdown(choices=choices, value=default, label=f"{title} source", elem_id=f"{side}-source")
    arg = gr.Textbox(label=f"{title} model or path (the part after ':')", elem_id=f"{side}-arg",
                     visible=bool(first and first.takes_arg), max_lines=1,
                     placeholder="e.g. a model name for openai:, a .jsonl path for replay:")
    key = gr.Textbox(label=f"{title} API key (never saved; leave empty to use the environment variable)",
                     type="password", elem_id=f"{side}-key", visible=bool(first and needs_key(first)), max_lines=1)
    controls = SideControls(side=side, kind=kind, arg=arg, key=key)
    with gr.Accordion(f"{title} settings", open=False, elem_id=f"{side}-settings"):
        for prefix, k in REGISTRY.items():
            with gr.Group(visible=prefix == default) as group:
                for name, spec in k.settings.items():
                    component = setting_component(spec, f"{side}-{prefix}-{name}")
                    controls.settings.append((prefix, name, spec, component))
            controls.groups[prefix] = group
    return controls


def _pick(controls: SideControls) -> Any:
    """The picker's change handler: show the argument box, the key field and the settings of the chosen kind."""
    def on_pick(prefix: str) -> list[Any]:
        kind = REGISTRY.get(prefix)
        return [gr.update(visible=bool(kind and kind.takes_arg)), gr.update(visible=bool(kind and needs_key(kind)))] + [
            gr.update(visible=p == prefix) for p in controls.groups]
    return on_pick


def _session(request: gr.Request | None) -> str:
    return (request.session_hash if request is not None else None) or "no-session"


def run_race(left: SideControls, right: SideControls) -> Any:
    """The Run handler: starts a race and yields coalesced player payloads until it ends or is cancelled."""
    n_left = len(left.inputs())

    def run(request: gr.Request, prompt: str, *values: Any) -> Iterator[dict[str, Any]]:
        run_id = new_run_id()
        prompt = prompt or ""
        if not prompt.strip():
            yield to_player(message_payload("Type a prompt first.", run_id))
            return
        if len(prompt) > MAX_PROMPT_CHARS:
            yield to_player(message_payload(f"The prompt is over {MAX_PROMPT_CHARS:,} characters; shorten it.", run_id))
            return
        lspec, lset, lkey = left.read(list(values[:n_left]))
        rspec, rset, rkey = right.read(list(values[n_left:]))
        try:
            race = Race(prompt, lspec, rspec, settings={"left": lset, "right": rset},
                        secrets={"left": lkey, "right": rkey})
        except OSError as e:
            yield to_player(message_payload(f"Could not create the recording file: {e.strerror or e}.", run_id))
            return
        entry = {"race": race, "path": race.path, "run": run_id}
        with _sessions_lock:
            _sessions[_session(request)] = entry
        updates = race.updates(interval=UPDATE_INTERVAL)
        try:
            for seq, snapshot in enumerate(updates):
                yield to_player(live_payload(snapshot, run_id, seq))
        finally:
            updates.close()
            race.stop()
            race.close()
            entry["race"] = None  # the file is complete; let the frames go

    return run


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
    return to_player(load_payload(entry["path"], run=entry["run"]))


def end_session(request: gr.Request) -> None:
    """When a tab closes: stop its race so no thread keeps running for nobody."""
    with _sessions_lock:
        entry = _sessions.pop(_session(request), None)
    if entry and entry["race"] is not None:
        entry["race"].stop()


def allowed_folders() -> list[Path]:
    """Folders the path box may read recordings from: the user's recordings and the bundled ones."""
    return [recordings_dir().resolve(), Path(RECORDINGS_DIR).resolve()]


def load_by_name(name: str) -> Any:
    """Loads a recording named relative to the recordings folder (never a path outside it)."""
    name = (name or "").strip()
    if not name:
        return to_player(message_payload("Type the name of a recording in the recordings folder."))
    for folder in allowed_folders():
        candidate = (folder / name).resolve()
        if candidate.is_relative_to(folder) and candidate.is_file():
            return to_player(load_payload(candidate, name=candidate.relative_to(folder).as_posix()))
    return to_player(message_payload(
        "No recording by that name in the recordings folder; upload the file instead."))


def load_upload(path: str | None) -> Any:
    """Loads an uploaded recording file into the player."""
    if not path:
        return gr.skip()
    return to_player(load_payload(path, name=Path(path).name))


def build() -> gr.Blocks:
    """The whole page as a gr.Blocks (launch it with `launch()` or `demo.launch(**launch_options())`)."""
    load_plugins()
    defaults = [p if p in REGISTRY else next(iter(REGISTRY)) for p in DEFAULT_PAIR]
    head = f"<style>{asset('player.css')}</style><script>{asset('player.js')}</script>"
    with gr.Blocks(title="Converge", analytics_enabled=False) as demo:
        gr.Markdown("# Converge\nWatch a diffusion language model converge on its answer while an "
                    "autoregressive model types, each on its own thread and clock.", elem_id="converge-title")
        prompt = gr.Textbox(label="Prompt", lines=3, elem_id="prompt",
                            placeholder="Ask something, then press Run.")
        with gr.Row():
            controls = {}
            for side, default in zip(SIDES, defaults):
                with gr.Column():
                    controls[side] = side_controls(side, default)
        with gr.Row():
            run_btn = gr.Button("Run", variant="primary", elem_id="run")
            stop_btn = gr.Button("Stop", variant="stop", elem_id="stop")
        player = gr.HTML(value="", html_template='<div class="cv-mount"></div>', js_on_load=PLAYER_GLUE,
                         head=head, apply_default_css=False, elem_id="player", payload=None)
        with gr.Accordion("Load recording", open=False, elem_id="load-box"):
            upload = gr.File(label="Recording file (.jsonl)", file_types=[".jsonl"], type="filepath",
                             elem_id="load-file")
            with gr.Row():
                name = gr.Textbox(label="Or a recording's name in the recordings folder", elem_id="load-path",
                                  max_lines=1, scale=4)
                load_btn = gr.Button("Load", elem_id="load", scale=1)
        for side, c in controls.items():
            c.kind.change(_pick(c), inputs=[c.kind], outputs=[c.arg, c.key, *c.groups.values()],
                          queue=False, show_progress="hidden")
        left, right = controls["left"], controls["right"]
        run_event = run_btn.click(run_race(left, right), inputs=[prompt, *left.inputs(), *right.inputs()],
                                  outputs=[player], concurrency_limit=RACE_CONCURRENCY, concurrency_id="race",
                                  show_progress="hidden", api_name="race")
        stop_btn.click(fn=None, cancels=[run_event]).then(after_stop, inputs=None, outputs=[player],
                                                           concurrency_limit=None, show_progress="hidden",
                                                           api_name=False)
        upload.upload(load_upload, inputs=[upload], outputs=[player], show_progress="hidden", api_name=False)
        load_btn.click(load_by_name, inputs=[name], outputs=[player], show_progress="hidden", api_name=False)
        name.submit(load_by_name, inputs=[name], outputs=[player], show_progress="hidden", api_name=False)
        demo.unload(end_session)
    return demo


def launch(host: str = "127.0.0.1", port: int = 7860, share: bool = False, **kwargs: Any) -> Any:
    """Builds and serves the page on host:port (this machine only by default); `share` opts in to a public link."""
    if share:
        print("Warning: --share makes this page public through Gradio's share servers; anyone with the link can "
              "run races on this machine, and keys typed into the page pass through that tunnel.", file=sys.stderr)
    demo = build()
    return demo.launch(server_name=host, server_port=port, share=share, **{**launch_options(), **kwargs})
