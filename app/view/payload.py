"""The data the browser player draws: live race updates and saved recordings, in one shape.

The player (app/view/player/, served as one player.js) merges payloads shaped like `live.LiveView.update()` plus
`run` (a new value starts a fresh run) and `seq`. A recording becomes the same payload, its sides built by the same
app/view/side.py, so a loaded recording plays in the same player as a live race. It sits below the page (app/ui) and
the exports (app/export), which both draw with it; the player's own files (app/view/player/) live here too, and
`asset` reads them as text for both.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

from app.analysis.changes import prefix_len
from app.trace.cancel import checkpoint
from app.trace.frames import Recording, origin
from app.trace.reading import RecordingError, read_recording
from app.view.bundle import bundle
from app.view.side import Defaults, caption, recorded_sides
from app.view.theme import css_rules, theme_json
from app.view.why import paced, why_line

PLAYER_DIR = Path(__file__).resolve().parent / "player"  # the player's parts (*.js) and player.css
UPDATE_INTERVAL = 0.25  # seconds between coalesced updates: at most 4 a second reach the browser. Gradio handles
# each on the page's main thread (it then refreshed the loading status of every input the race took, some 180 widgets,
# since sent as one box: app/ui/packed.py): at 20 a second the page fell behind the race, and a Stop click waited
# behind the updates queued before it (lesson 13's race, tests/test_stop_race.py: the race ended before Stop reached
# it in 2 of 6 runs at 0.05 s, 0 of 6 at 0.25 s)


def new_run_id(prefix: str = "run") -> str:
    """A fresh run id: the player starts over whenever the id changes."""
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def wire_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Analyzer rows compacted for the browser: O(changes) per frame instead of O(length).

    Each row sends only its tokens after the prefix it shares with the row before (`keep`), its length
    `n` and its change codes as flat [position, code, ...] pairs (`cs`); empty m / nfe / final / pin / note / by are
    left out; a schema 2 row adds its states (`st`, a letter a position) and its deleted tokens (`dl`), and a row of
    a side that started from a draft its revision letters (`rv`, a letter a position).
    The first row goes whole, so every payload stands alone. For the token inspector, sources that report
    confidences add `cf` (one whole percent per position, after the `cfk` leading ones it shares with the row
    before, so a typing side sends one number a token) and `cd` (the top candidates, in percent, of the
    positions committed or reopened at that frame): at most n + 3 x (commits + reopenings) numbers a row; a schema 2
    source that reports entropies adds `en` (nats, two decimals, null where nothing was predicted), one a position.
    """
    out = []
    prev: list[str] | None = None
    prev_cf: list[int] | None = None
    for row in rows:
        checkpoint()  # cancelled work stops at its next row (app/trace/cancel.py)
        tok = row["tok"]
        keep = prefix_len(prev, tok) if prev is not None else 0
        w = {"i": row["i"], "t": row["t"], "step": row["step"], "sp": row.get("sp", 0), "n": len(tok), "keep": keep,
             "tok": tok[keep:], "cs": [x for i, c in enumerate(row["ch"]) if c for x in (i, c)]}
        for key in ("m", "nfe", "final", "pin", "note", "by", "st", "rv"):
            if row.get(key):
                w[key] = row[key]
        if row.get("del"):
            w["dl"] = row["del"]
        cf = [percent(c) for c in row["conf"]] if row.get("conf") is not None else None
        if cf is not None:
            kept = prefix_len(prev_cf, cf) if prev_cf is not None else 0
            w["cfk"], w["cf"] = kept, cf[kept:]
        prev_cf = cf
        if row.get("ent") is not None:  # entropy in nats, two decimals, null where the model predicted nothing
            w["en"] = [None if e is None else round(e, 2) for e in row["ent"]]
        if row.get("cand"):
            w["cd"] = [[pos, [[name, percent(p)] for name, p in cands]] for pos, cands in row["cand"]]
        out.append(w)
        prev = tok
    return out


def percent(p: float) -> int:
    """A probability as a whole percent, clamped to 0..100 (what the inspector shows)."""
    return max(0, min(100, int(round(p * 100))))


def _wire_sides(sides: dict[str, Any]) -> dict[str, Any]:
    return {side: {**entry, "rows": wire_rows(entry.get("rows", []))} for side, entry in sides.items()}


def live_payload(snapshot: dict[str, Any], run: str, seq: int) -> dict[str, Any]:
    """One live update (app/ui/live.py) with compact rows, tagged with its run id and sequence number, for the
    player to merge."""
    return {**snapshot, "sides": _wire_sides(snapshot.get("sides", {})), "run": run, "seq": seq, "mode": "live"}


def player_json(payload: dict[str, Any]) -> str:
    """A payload as the one JSON string the player's `payload` prop receives (compact, no NaN, UTF-8 kept)."""
    return json.dumps(payload, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def message_payload(message: str, run: str | None = None) -> dict[str, Any]:
    """A payload with no frames that only says something (a missing prompt, an unreadable file)."""
    return {"run": run or new_run_id("msg"), "seq": 0, "mode": "message", "prompt": "", "recording": "",
            "done": True, "message": message, "sides": {}}


def notice_payload(message: str) -> dict[str, Any]:
    """A payload that only says something (an empty prompt) and keeps the run the player shows."""
    return {"notice": message}


def recording_payload(rec: Recording, name: str = "", run: str | None = None, cursor: str | None = None,
                      defaults: Defaults | None = None) -> dict[str, Any]:
    """The whole of a saved recording as one player payload (rows, statuses, metrics, settled series).

    Warnings about a damaged file (each names its line) travel as `warnings`, which the player shows in
    an alert above the panels; `origin`, only for a run this server did not make (a race run in a visitor's
    browser), says so in a line of its own; `cursor="start"` opens the replay at its first frame, ready to play.
    `defaults` (each source's setting defaults) lets two sides of one source be titled by the settings they moved.
    """
    recorded = recorded_sides(rec, defaults)
    sides = {key: {**side.entry(), "rows": wire_rows(side.rows)} for key, side in recorded.items()}
    why = why_line([paced(side.label, side.done.get("metrics"), side.frames) for side in recorded.values()])
    out = {"run": run or new_run_id("rec"), "seq": 0, "mode": "replay", "prompt": str(rec.header.get("prompt", "")),
           "recording": name, "done": True, "message": None, "warnings": list(rec.warnings),
           "caption": caption(rec.header), "cursor": cursor, "sides": sides}
    if ran := origin(rec.header):  # a run this server did not make: the player says where it ran
        out["origin"] = ran
    return {**out, "why": why} if why else out


def load_payload(path: str | Path, name: str | None = None, run: str | None = None,
                 cursor: str | None = None, defaults: Defaults | None = None) -> dict[str, Any]:
    """Reads a recording file into a player payload; an unreadable file becomes a message payload."""
    try:
        rec = read_recording(path)
    except RecordingError as e:
        return message_payload(str(e), run)
    except OSError as e:
        return message_payload(f"Could not read {Path(path).name}: {e.strerror or e}.", run)
    return recording_payload(rec, name if name is not None else Path(path).name, run, cursor, defaults)


PLAYER_ENTRY = "player.js"  # the part that imports the rest (app/view/player/*.js are ES modules)


def player_script() -> str:
    """The player's JavaScript: its ES modules (app/view/player/) bundled from PLAYER_ENTRY (app/view/bundle.py)
    inside one function, which hands every part THEME (app/view/theme.json) and global (the window)."""
    return ("(function (global) {\n\"use strict\";\n/* app/view/theme.json */\nvar THEME = " + theme_json() + ";\n\n"
            + bundle(PLAYER_DIR, PLAYER_ENTRY) + "})(typeof window !== \"undefined\" ? window : this);\n")


def asset(name: str) -> str:
    """The text of a player asset for the page and for self-contained exports: player.js (its parts and the theme
    in one script) or player.css (after the theme's custom properties)."""
    if name == "player.js":
        return player_script()
    if name == "player.css":
        return css_rules() + (PLAYER_DIR / name).read_text(encoding="utf-8")
    raise ValueError(f"{name} is not a player asset (player.js or player.css)")
