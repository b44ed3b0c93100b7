"""The library box: the visitor's recordings (the bundled examples and their own) in a table, with Load, Download,
Rename, Delete and Upload, and the status line and download that the exports share.

What is on disk, and what may be done to it, is app/trace/library.py's; this is how the page words it and hands
a file to the browser (in a scratch folder that app/ui/scratch.py bounds).
"""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import gradio as gr
from gradio.utils import get_upload_folder

from app.analysis.labels import run_name
from app.errors import UserError
from app.serving.policy import Policy
from app.sources.base import setting_defaults
from app.trace import library
from app.trace.frames import RAN_ELSEWHERE
from app.trace.store import locate, make_room, written
from app.ui import scratch
from app.ui.events import LIBRARY, QUIET, READS
from app.ui.page_assets import CONFIRM_DELETE_JS, READ_ONLY_JS
from app.ui.player_ui import show_recording, to_player
from app.ui.sessions import as_visitor, cancellable, visitor_of
from app.ui.visitor import Visitor, new_owner
from app.view.payload import load_payload

LIBRARY_HEADERS = ["Name", "Kind", "Caption or prompt", "Sources", "Date", "Duration", "Note"]


def duration_text(seconds: float | None) -> str:
    """Seconds to one decimal, or a dash when the recording has no frames."""
    return "\u2014" if seconds is None else f"{seconds:.1f} s"


def date_text(created: str) -> str:
    """'2026-11-21 15:23 UTC' from the header's ISO time ('' when absent)."""
    try:
        return time.strftime("%Y-%m-%d %H:%M UTC", time.strptime(created, "%Y-%m-%dT%H:%M:%SZ"))
    except (TypeError, ValueError):
        return created


def label(entry: dict[str, Any]) -> str:
    """One line for a picker: name, kind, sources and duration."""
    kind = "example" if entry["kind"] == "example" else "yours"
    extra = f" \u2014 {entry['problem']}" if entry["problem"] and not entry["frames"] else ""
    return f"{entry['name']} ({kind}) \u00b7 {entry['sources'] or '?'} \u00b7 {duration_text(entry['duration'])}{extra}"


def download_copy(entry_id: str, owner: str | None = None) -> Path:
    """A copy of a recording in a fresh scratch folder (app/ui/scratch.py bounds them), to hand to the browser."""
    path = locate(entry_id, owner)
    out = scratch.new_dir("dl") / path.name
    shutil.copyfile(path, out)
    return out


def library_view(visitor: Visitor, selected: str | None = None) -> tuple[Any, Any, list[str]]:
    """The visitor's library table, the recording picker (keeping `selected` when it still exists) and the row ids."""
    entries = library.list_recordings(visitor.owner)
    rows = [[e["name"], "example" if e["kind"] == "example" else "yours", e["caption"] or e["prompt"], e["sources"],
             date_text(e["created"]), duration_text(e["duration"]), e["problem"] or ""]
            for e in entries]
    ids = [e["id"] for e in entries]
    value = selected if selected in ids else (ids[0] if ids else None)
    table = gr.update(value=rows or [[""] * len(LIBRARY_HEADERS)], headers=LIBRARY_HEADERS)
    return table, gr.update(choices=[(label(e), e["id"]) for e in entries], value=value), ids


def entry_name(info: dict[str, Any]) -> str:
    """What a recording is, for the presenter's picker: the lesson that set its race up, or its sources with the
    settings each moved from the defaults (`run_name`), and where it ran when a visitor's browser ran it."""
    if info.get("lesson"):
        return str(info["lesson"])
    name = run_name(info.get("sides") or {}, setting_defaults())
    return name + (f" ({RAN_ELSEWHERE})" if info.get("elsewhere") else "") if name else ""


def picker_entries(visitor: Visitor, ids: list[str]) -> str:
    """The presenter picker's list (app/ui/presenter_picker.js), as JSON: each recording of the library's `ids` with
    its name (`entry_name`), prompt (or an example's caption), sources and date, newest first. A recording that
    cannot be described keeps only its id."""
    out = []
    for entry_id in ids or []:
        try:
            info = library.describe(locate(entry_id, visitor.owner))
        except (UserError, OSError):
            info = {}
        out.append({"id": entry_id, "name": entry_name(info), "prompt": info.get("caption") or info.get("prompt", ""),
                    "sources": info.get("sources", ""), "date": date_text(info.get("created", "")),
                    "created": info.get("created", "")})
    out.sort(key=lambda e: e["created"], reverse=True)  # ISO times: newest first, undated last
    return json.dumps([{k: v for k, v in e.items() if k != "created"} for e in out], ensure_ascii=False)


def open_page(policy: Policy) -> Callable[..., tuple[Any, ...]]:
    """The page-load handler: takes the owner id the browser stored (giving a new browser one) into the session,
    then shows the visitor's library and the first bundled example in the player, at its start, ready to play."""
    def on_load(request: gr.Request, token: Any) -> tuple[Any, ...]:
        visitor = visitor_of(policy, token, request)
        if visitor.owner is not None and visitor.owner != token:
            token = new_owner()
            visitor = Visitor(policy, token)
        table, pick, ids = library_view(visitor)
        first = next((i for i in ids if i.startswith("example/")), None)
        if first is None:
            return token, visitor.owner, table, pick, ids, gr.skip(), gr.skip()
        pick["value"] = first
        path = locate(first)
        return token, visitor.owner, table, pick, ids, show_recording(path), str(path)
    return on_load


def pick_row(ids: list[str], evt: gr.SelectData) -> tuple[Any, Any]:
    """Clicking a row of the table selects that recording in the picker and offers its name for renaming.

    The row's own values name it (the table may be sorted in the browser); its index is the fallback."""
    values = evt.row_value if isinstance(evt.row_value, list) and len(evt.row_value) >= 2 else None
    if values is not None:
        entry = f"{'example' if values[1] == 'example' else 'user'}/{values[0]}"
    else:
        row = evt.index[0] if isinstance(evt.index, (list, tuple)) else evt.index
        entry = ids[row] if isinstance(row, int) and 0 <= row < len(ids or []) else ""
    if entry not in (ids or []):
        return gr.skip(), gr.skip()
    return gr.update(value=entry), entry.partition("/")[2]


def load_entry(visitor: Visitor, entry_id: str | None) -> tuple[Any, Any, str]:
    """Loads the picked recording into the player at its start."""
    try:
        path = locate(entry_id or "", visitor.owner)
    except UserError as e:
        return gr.skip(), gr.skip(), str(e)
    loaded = load_payload(path, name=path.name, cursor="start", defaults=setting_defaults())
    payload = {**loaded, "reveal": True}  # the player scrolls into view
    if payload["mode"] == "message":
        return to_player(payload), gr.skip(), payload["message"]
    note = " ".join(payload.get("warnings") or [])
    return to_player(payload), str(path), f"Loaded {path.name}." + (f" {note}" if note else "")


def load_picked(visitor: Visitor, entry_id: str | None) -> tuple[Any, Any, Any]:
    """The presenter's picker: loads the recording whose id it typed (an empty box, cleared for the next pick, does
    nothing)."""
    if not (entry_id or "").strip():
        return gr.skip(), gr.skip(), gr.skip()
    return load_entry(visitor, entry_id)


def rename_entry(visitor: Visitor, entry_id: str | None, new_name: str, current: str | None) -> tuple[Any, ...]:
    """Renames one of the visitor's recordings; the player keeps pointing at it."""
    try:
        old = locate(entry_id or "", visitor.owner)
        new_id = library.rename(entry_id or "", new_name, visitor.owner)
    except (UserError, OSError) as e:
        return (gr.skip(),) * 4 + (error_text(e),)
    new_path = locate(new_id, visitor.owner)
    table, pick, ids = library_view(visitor, new_id)
    moved = str(new_path) if current and Path(current) == old else gr.skip()
    return table, pick, ids, moved, f"Renamed {old.name} to {new_path.name}."


def delete_entry(visitor: Visitor, entry_id: str | None) -> tuple[Any, ...]:
    """Deletes one of the visitor's recordings (the browser asked for confirmation; None means cancelled)."""
    if entry_id is None:
        return (gr.skip(),) * 3 + ("Nothing deleted.",)
    try:
        name = library.delete(entry_id, visitor.owner)
    except (UserError, OSError) as e:
        return (gr.skip(),) * 3 + (error_text(e),)
    return (*library_view(visitor), f"Deleted {name}.")


def upload_entry(visitor: Visitor, path: str | None) -> tuple[Any, ...]:
    """Checks an uploaded recording (read under the caps and analysed, so a recording whose analysis would cost more
    than its size allows is refused before it is stored), adds it to the visitor's recordings and loads it into the
    player; the upload box is emptied either way, ready for the next file."""
    if not path:
        return (gr.skip(),) * 7
    try:
        if not visitor.policy.can("upload"):
            return (gr.skip(),) * 5 + ("Uploading recordings is off on this server.", None)
        # read under the caps and analysed before anything is stored
        payload = load_payload(path, cursor="start", defaults=setting_defaults())
        if payload["mode"] == "message":
            raise UserError(payload["message"])
        make_room(visitor.owner, visitor.address)
        new_id = library.save_upload(path, Path(path).name, visitor.owner)
    except (UserError, OSError) as e:
        return (gr.skip(),) * 5 + (error_text(e), None)
    finally:
        drop_upload(path)
    saved = locate(new_id, visitor.owner)
    written(visitor.owner, visitor.address, saved)  # counted, and charged to the address's hourly budget
    table, pick, ids = library_view(visitor, new_id)
    payload = {**payload, "recording": saved.name, "reveal": True}
    note = " ".join(payload.get("warnings") or [])
    return table, pick, ids, to_player(payload), str(saved), f"Added {saved.name} to your recordings." + (
        f" {note}" if note else ""), None


def drop_upload(path: str) -> None:
    """Deletes Gradio's stored copy of an upload once the handler is done with it (the library keeps its own copy),
    so a refused upload leaves nothing behind and a taken one is stored once."""
    stored = Path(path).resolve()
    if stored.is_relative_to(Path(get_upload_folder()).resolve()):
        stored.unlink(missing_ok=True)


def download_entry(visitor: Visitor, entry_id: str | None) -> tuple[Any, str]:
    """The picked recording as a file to download."""
    try:
        copy = download_copy(entry_id or "", visitor.owner)
    except (UserError, OSError) as e:
        return gr.skip(), error_text(e)
    return str(copy), f"{copy.name} is ready: use the download link."


def error_text(e: Exception) -> str:
    """A failed action in one sentence for the status line (an OSError by its reason)."""
    if isinstance(e, OSError):
        return f"That did not work: {e.strerror or e}."
    return str(e)


@dataclass
class LibraryBox:
    """The library's table, picker, name box, buttons and upload."""

    table: Any
    pick: Any
    load_btn: Any
    download_btn: Any
    new_name: Any
    rename_btn: Any
    delete_btn: Any
    upload: Any
    read_only: Any = None  # the note shown while a bundled example is picked: why Rename and Delete are disabled


@dataclass
class Messages:
    """What the library and the exports share: the status line and the download, and the presenter picker's hidden
    fields (app/ui/presenter_picker.js reads the library's ids from one and loads one by typing its id into the
    other)."""

    picker_list: Any
    picker_load: Any
    status: Any
    download: Any


def library_box(policy: Policy) -> LibraryBox:
    """Builds the open "Recordings" accordion where it is called, inside the open Blocks."""
    with gr.Accordion("Recordings", open=True, elem_id="library"):
        table = gr.Dataframe(headers=LIBRARY_HEADERS, datatype="str", type="array", interactive=False,
                             wrap=True, max_height=320, elem_id="library-table", show_label=False,
                             column_widths=["17%", "7%", "27%", "20%", "12%", "7%", "10%"])
        with gr.Row():
            pick = gr.Dropdown(label="Recording", choices=[], elem_id="library-pick", scale=4)
            load_btn = gr.Button("Load", variant="primary", elem_id="library-load", scale=1)
            download_btn = gr.Button("Download", elem_id="library-download", scale=1)
        with gr.Row():
            new_name = gr.Textbox(label="New name (your recordings only)", elem_id="library-name",
                                  max_lines=1, scale=4)
            rename_btn = gr.Button("Rename", elem_id="library-rename", scale=1)
            delete_btn = gr.Button("Delete", variant="stop", elem_id="library-delete", scale=1)
        read_only = gr.Markdown(library.READ_ONLY, visible=False, elem_id="library-read-only")
        upload = gr.File(label="Upload a recording (.jsonl): it is checked, then added to your recordings",
                         file_types=[".jsonl"], type="filepath", elem_id="load-file", height=140,
                         visible=policy.can("upload"))
    return LibraryBox(table, pick, load_btn, download_btn, new_name, rename_btn, delete_btn, upload, read_only)


def messages_row() -> Messages:
    """Builds the presenter picker's hidden fields and the status line and download, where it is called."""
    picker_list = gr.Textbox(visible="hidden", elem_id="presenter-list", label="Recordings (ids)")
    picker_load = gr.Textbox(visible="hidden", elem_id="presenter-load", label="Recording to load")
    with gr.Row():
        status = gr.Textbox(label="Library and export messages", interactive=False, elem_id="library-status",
                            lines=2, max_lines=4, scale=3)
        download = gr.File(label="Download", interactive=False, elem_id="download-file", height=110, scale=2)
    return Messages(picker_list, picker_load, status, download)


def refresher(policy: Policy, owner: Any, view: list[Any]) -> Callable[[Any], Any]:
    """`refresh(event)`: refreshes the library's `view` (table, picker, row ids) after `event`."""
    refresh = as_visitor(policy, library_view)
    return lambda event: event.then(refresh, inputs=[owner], outputs=view, **LIBRARY, **QUIET)


def wire_library(box: LibraryBox, messages: Messages, policy: Policy, owner: Any, ids: Any, shown: list[Any]) -> None:
    """The library's handlers; `shown` is the player and the recording file it holds."""
    view = [box.table, box.pick, ids]
    status = messages.status
    box.table.select(pick_row, inputs=[ids], outputs=[box.pick, box.new_name], **LIBRARY, **QUIET)
    box.pick.change(fn=None, inputs=[box.pick], outputs=[box.rename_btn, box.delete_btn, box.read_only],
                    js=READ_ONLY_JS, queue=False, **QUIET)
    box.table.change(as_visitor(policy, picker_entries), inputs=[owner, ids], outputs=[messages.picker_list],
                     queue=False, **QUIET)
    messages.picker_load.change(cancellable(policy, load_picked), inputs=[owner, messages.picker_load],
                                outputs=[*shown, status], **READS, **QUIET)
    box.load_btn.click(cancellable(policy, load_entry), inputs=[owner, box.pick], outputs=[*shown, status], **READS,
                       **QUIET)
    box.download_btn.click(as_visitor(policy, download_entry), inputs=[owner, box.pick],
                           outputs=[messages.download, status], **READS, **QUIET)
    rename, current = as_visitor(policy, rename_entry), shown[1]
    box.rename_btn.click(rename, inputs=[owner, box.pick, box.new_name, current], outputs=[*view, current, status],
                         **LIBRARY, **QUIET)
    box.new_name.submit(rename, inputs=[owner, box.pick, box.new_name, current], outputs=[*view, current, status],
                        **LIBRARY, **QUIET)
    box.delete_btn.click(as_visitor(policy, delete_entry), inputs=[owner, box.pick], outputs=[*view, status], **QUIET,
                         **LIBRARY, js=CONFIRM_DELETE_JS)
    box.upload.upload(cancellable(policy, upload_entry), inputs=[owner, box.upload],
                      outputs=[*view, *shown, status, box.upload], **READS, **QUIET)
