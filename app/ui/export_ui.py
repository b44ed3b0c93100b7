"""The export box: the recording in the player as a self-contained HTML page, a GIF, an MP4 or a CSV, on the
player's clock, made by a cancellable job (app/ui/export_job.py) into a bounded scratch folder. A video follows the
player's watch pace (app/view/pace.py) or the one picked here, holds its last frame, and a GIF loops or plays once."""

from __future__ import annotations

import asyncio
from contextlib import aclosing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, AsyncIterator

import gradio as gr

from app.errors import UserError
from app.trace.reading import RecordingError
from app.ui import scratch
from app.ui.budgets import queued
from app.ui.events import HIDDEN, QUIET
from app.ui.export_job import run_export
from app.ui.library_ui import error_text
from app.ui.page_assets import EXPORT_BEGUN_JS, EXPORT_CANCELLED_JS, EXPORT_ENDED_JS, EXPORT_JS
from app.view.pace import HOLD, HOLD_MAX, PACE, PACES

EXPORT_FORMATS = ("html", "gif", "mp4", "csv")
PLAYER_PACE = "player"  # the pace choice that reads the player's watch pace at the click
LOOP, ONCE = "Loop", "Play once"


@dataclass
class ExportBox:
    """One button a format, the player's clock (read in the browser at the click), the video's pace, hold and GIF
    loop, and Cancel export (shown only while an export runs)."""

    buttons: dict[str, Any]
    clock: Any
    cancel_btn: Any
    pace: Any
    hold: Any
    loop: Any


def _pace_label(v: float) -> str:
    return f"{v:g} s" if v > 0 else "real time"


def export_box() -> ExportBox:
    """Builds the closed export accordion where it is called, inside the open Blocks."""
    with gr.Accordion("Export the recording in the player", open=False, elem_id="export-box"):
        with gr.Row():
            buttons = {fmt: gr.Button(f"Export {fmt.upper()}", elem_id=f"export-{fmt}") for fmt in EXPORT_FORMATS}
        clock = gr.Textbox(value="time", visible="hidden", elem_id="player-clock", label="Clock")
        with gr.Row():
            pace = gr.Dropdown([("the player's watch pace", PLAYER_PACE), *((_pace_label(v), f"{v:g}") for v in PACES)],
                               value=PLAYER_PACE, label="Video pace", elem_id="export-pace")
            hold = gr.Slider(0, HOLD_MAX, value=HOLD, step=0.5, label="Hold the last frame (seconds)",
                             elem_id="export-hold")
            loop = gr.Radio([LOOP, ONCE], value=LOOP, label="GIF", elem_id="export-loop")
        cancel_btn = gr.Button("Cancel export", variant="secondary", size="sm", elem_id="export-cancel", visible=False)
        gr.Markdown("HTML: one self-contained page that plays offline with the same controls "
                    "(add `?presenter=1` to its address for presenter mode). GIF and MP4: the race "
                    f"at the video pace (a race of local models that ended sooner lasts that long, {PACE:g} s unless "
                    "the player's watch pace says otherwise; a race with an API side keeps its real timing), then "
                    "the last frame held, for a slide. All three keep the player's clock (seconds or forward passes). "
                    "CSV: each frame's figures (time, passes, tokens, changes, "
                    "settled fraction), as `python -m app stats --csv` writes them.")
    return ExportBox(buttons, clock, cancel_btn, pace, hold, loop)


def wire_exports(box: ExportBox, current: Any, download: Any, status: Any) -> None:
    """Each export button makes its file from the recording file `current` into `download`, one export at a time;
    Cancel export, shown from an export's click until the last one running ends (counted in the browser, no handler),
    stops any in progress."""
    shown = {"outputs": [box.cancel_btn], "queue": False, **QUIET}
    exports = []
    for fmt, btn in box.buttons.items():
        btn.click(fn=None, js=EXPORT_BEGUN_JS, **shown)
        export = btn.click(export_current(fmt), inputs=[current, box.clock, box.pace, box.hold, box.loop],
                           outputs=[download, status], **queued("export"), api_name=False,
                           **HIDDEN, js=EXPORT_JS)
        export.then(fn=None, js=EXPORT_ENDED_JS, **shown)
        exports.append(export)
    box.cancel_btn.click(fn=None, cancels=exports, js=EXPORT_CANCELLED_JS, **shown).then(
        lambda: "Any export in progress was cancelled; it left no file.", outputs=[status], **QUIET,
        **queued("library"))


def export_current(fmt: str) -> Any:
    """An export handler: the recording in the player as a self-contained HTML page, a GIF, an MP4 or the CSV of its
    per-frame figures, on the player's clock; a video reports its frames in the status about once a second (each
    report also lets Gradio notice a visitor who left); Cancel export stops it and leaves no file. An async generator,
    so that neither the export nor its cancelling ever waits on the page's event loop (app/ui/export_job.py)."""
    async def export(current: str | None, clock: str = "time", pace: Any = PACE, hold: Any = HOLD,
                     loop: str = LOOP) -> AsyncIterator[tuple[Any, str]]:
        clock = "passes" if clock == "passes" else "time"
        video = video_options(pace, hold, loop)
        if not current or not Path(current).is_file():
            yield gr.skip(), "Load a recording or run a race first; exports are made from the recording in the player."
            return
        source = Path(current)
        out = await asyncio.to_thread(scratch.new_dir, "export") / f"{source.stem}.{fmt}"  # it prunes: off the loop
        try:
            async with aclosing(run_export(source, out, fmt, clock, video)) as job:  # closing this handler closes it
                async for done, total in job:
                    yield gr.skip(), (f"Making {out.name}: frame {done:,} of {total:,}..." if total
                                      else f"Making {out.name}...") + " Cancel export stops it."
        except ImportError as e:
            yield gr.skip(), (f"{fmt.upper()} export needs {e.name}, which is not installed "
                              "(pip install -r requirements.txt).")
            return
        except (UserError, RecordingError, OSError) as e:
            yield gr.skip(), error_text(e)
            return
        yield str(out), f"{out.name} is ready: use the download link."
    return export


def _number(value: Any, default: float, top: float) -> float:
    """A number from the page within [0, top]; anything else (a tampered request, an unread player) the default."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        return default
    return v if 0 <= v <= top else default


def video_options(pace: Any, hold: Any, loop: Any) -> dict[str, Any]:
    """export_video's pace, hold and loop from the box (the pace as the browser read it from the player)."""
    return {"pace": _number(pace, PACE, max(PACES)), "hold": _number(hold, HOLD, HOLD_MAX), "loop": loop != ONCE}
