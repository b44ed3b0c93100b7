"""The page's own CSS and scripts, kept as files beside it rather than as strings in the code that lays it out.

page.css styles the page around the player, player_glue.js mounts the player (app/view/player/, read through
app/view/payload.asset) in its gr.HTML, presenter_picker.js is the presenter's compact picker, page_keys.js takes Tab
on out of Gradio's dropdowns; the one-line handler scripts below run in the browser before their handlers.
"""

from __future__ import annotations

from pathlib import Path

from app.view.payload import asset

UI_DIR = Path(__file__).resolve().parent


def page_file(name: str) -> str:
    """The text of one of the page's own files in app/ui/."""
    return (UI_DIR / name).read_text(encoding="utf-8")


PAGE_CSS = page_file("page.css")
PLAYER_GLUE = page_file("player_glue.js")

# an export reads the player's clock (data-view) at the click, so the exported file opens on the same clock, and
# (unless the export box picks another) its watch pace (data-pace), so a video lasts as long as the replay watched
EXPORT_JS = ("(current, clock, pace, hold, loop) => { const p = document.querySelector('#player .cv-player'); "
             "return [current, p?.getAttribute('data-view') === 'passes' ? 'passes' : 'time', "
             "pace === 'player' ? (p?.getAttribute('data-pace') ?? pace) : pace, hold, loop]; }")
# Cancel export shows while an export runs: the page counts the exports clicked and not yet ended or cancelled
EXPORT_BEGUN_JS = ("() => { window.convergeExports = (window.convergeExports || 0) + 1;"
                   " return {__type__: 'update', visible: true}; }")
EXPORT_ENDED_JS = ("() => { window.convergeExports = Math.max(0, (window.convergeExports || 0) - 1);"
                   " return {__type__: 'update', visible: window.convergeExports > 0}; }")
EXPORT_CANCELLED_JS = "() => { window.convergeExports = 0; return {__type__: 'update', visible: false}; }"
# Stop also stops the player's playback: a replay (the watch-pace replay after a race, or Play on a loaded run) pauses
STOP_JS = ("() => { document.querySelector('#player .cv-player')?.convergePlayer?.pause();"
           " window.ConvergeBrowserRace?.stop(); }")  # a race in the browser (browser_race.js) stops too
# Delete asks the browser to confirm; a cancelled one reaches the handler as None. A bundled example is never asked
# about, since it cannot be deleted: the handler says so at once (its button is disabled anyway, READ_ONLY_JS)
CONFIRM_DELETE_JS = ("(owner, id) => [owner, (id && (id.startsWith('example/') || window.confirm('Delete ' + "
                     "id.split('/').pop() + '? This cannot be undone.'))) ? id : null]")
# picking a bundled example disables Rename and Delete and shows why (the note beside them); one of the visitor's own
# recordings enables them again: in the browser, no handler on the server
READ_ONLY_JS = ("(id) => { const ex = typeof id === 'string' && id.startsWith('example/'); "
                "return [{__type__: 'update', interactive: !ex}, {__type__: 'update', interactive: !ex}, "
                "{__type__: 'update', visible: ex}]; }")


def player_head() -> str:
    """What the page's <head> gets for the player: its CSS and script (from the view room), the presenter's picker,
    the browser race's glue (browser_race.js) and the page's Tab fix for dropdowns (page_keys.js)."""
    return (f"<style>{asset('player.css')}</style><script>{asset('player.js')}</script>"
            f"<script>{page_file('presenter_picker.js')}</script><script>{page_file('browser_race.js')}</script>"
            f"<script>{page_file('page_keys.js')}</script>")
