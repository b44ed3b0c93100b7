"""HTML export: one self-contained page that replays a recorded race offline, with the page's own player.

player.css, the player's script (app/view/player/, bundled) and the race data are inlined; nothing is fetched and the
file names no external
URL (a Content-Security-Policy forbids any request). The data is JSON inside
<script type="application/json">, with < > & / U+2028 U+2029 (and ':' inside strings) written as escapes,
so no text in the recording can close the script element, open a comment or read as a URL. The file is written beside
`out` under a temporary name and renamed into place, so a failed export leaves nothing behind.
"""

from __future__ import annotations

import html
import json
import os
import re
import uuid
from pathlib import Path
from typing import Any

from app.errors import UserError
from app.export import read_for_export
from app.sources.base import setting_defaults
from app.trace.cancel import checkpoint
from app.view.payload import asset, recording_payload

CSP = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'"
_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "/": "\\/", "\u2028": "\\u2028", "\u2029": "\\u2029"}
_TRANSLATE = str.maketrans(_ESCAPES)
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')

PAGE_CSS = """
html, body { margin: 0; background: #ffffff; }
body { padding: 12px 20px; }
@media (prefers-color-scheme: dark) { html, body { background: #111111; } }
html.cv-presenting, html.cv-presenting body { background: #ffffff; }
@media (prefers-color-scheme: dark) { html.cv-presenting, html.cv-presenting body { background: #000000; } }
.cv-export-note { font: 12px system-ui, sans-serif; color: #595959; margin: 12px 0 0 0; }
@media (prefers-color-scheme: dark) { .cv-export-note { color: #c4c4c4; } }
html.cv-presenting .cv-export-note { display: none; }
"""

BOOT = """
(function () {
  var data = JSON.parse(document.getElementById("converge-data").textContent);
  var root = document.getElementById("converge");
  var query = new URLSearchParams(location.search);
  var onPresenter = function (on) { document.documentElement.classList.toggle("cv-presenting", on); };
  var clock = query.get("clock") || data.clock || "time";
  window.converge = ConvergePlayer.mount(root, data, {presenter: query.get("presenter") === "1", onPresenter: onPresenter,
                                                      clock: clock});
  if (data.prompt) document.title = "Converge \\u2014 " + data.prompt.slice(0, 80);
})();
"""  # noqa: E501 - the script written into every export as it stands; rewrapping it would change the exported file


def script_json(data: Any) -> str:
    """JSON that is safe inside a <script> element: no '<', '>', '&', '/' or line separators left literal,
    and no ':' inside a string, so text such as a URL in a model's answer does not read as one."""
    text = json.dumps(data, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    text = text.translate(_TRANSLATE)  # one C pass: a 58 MB payload took 8 s a character at a time
    return _STRING.sub(lambda m: m.group(0).replace(":", "\\u003a"), text)


def _inline(text: str, closer: str) -> str:
    if closer in text.lower():
        raise ValueError(f"a player asset contains {closer}; it cannot be inlined")
    return text


def render(payload: dict[str, Any]) -> str:
    """The whole page for one player payload; a run this server did not make (`origin`, a fixed sentence of the
    app's, never the recording's text) says so in the note under the player too, which shows without script."""
    css = _inline(asset("player.css"), "</style")
    js = _inline(asset("player.js"), "</script")
    return (
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
        f"<meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">\n"
        "<meta name=\"generator\" content=\"Converge\">\n"
        "<title>Converge recording</title>\n"
        f"<style>\n{css}\n{PAGE_CSS}</style>\n</head>\n<body>\n"
        "<main id=\"converge\" class=\"cv-auto-theme\" aria-label=\"Converge race replay\"></main>\n"
        "<p class=\"cv-export-note\">Exported from Converge: a self-contained replay of a recorded race. "
        "Press ? for keyboard shortcuts; add ?presenter=1 to the address for presenter mode, "
        "?clock=passes for the forward-pass clock."
        + (f" {html.escape(str(payload['origin']))}" if payload.get("origin") else "") + "</p>\n"
        f"<script type=\"application/json\" id=\"converge-data\">{script_json(payload)}</script>\n"
        f"<script>\n{js}\n</script>\n<script>{BOOT}</script>\n</body>\n</html>\n"
    )


def export_html(recording_path: str | Path, out: str | Path, clock: str = "time") -> Path:
    """Writes the recording as a self-contained HTML replay at `out`, opening on `clock` (time, or passes: the
    forward-pass clock; ?clock= in the address overrides it); raises UserError, leaving no file, when it cannot."""
    if clock not in ("time", "passes"):
        raise UserError(f"The clock must be time or passes, not {clock!r}.")
    out = Path(out)
    if out.is_dir():
        raise UserError(f"{out} is a folder; give --out a file name such as race.html.")
    if not out.parent.is_dir():
        raise UserError(f"Cannot write {out}: the folder {out.parent} does not exist.")
    rec = read_for_export(recording_path)
    payload = recording_payload(rec, Path(recording_path).name, run="export", cursor="start",
                                defaults=setting_defaults())
    checkpoint()  # a cancelled export stops between its stages too (app/trace/cancel.py), each under a second
    page = render({**payload, "clock": clock})
    checkpoint()
    tmp = out.with_name(f".{out.name}.{uuid.uuid4().hex[:8]}.part")
    try:
        try:
            with open(tmp, "w", encoding="utf-8") as f:
                f.write(page)
            os.replace(tmp, out)
        except OSError as e:
            raise UserError(f"Could not write {out.name}: {e.strerror or e}.") from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return out
