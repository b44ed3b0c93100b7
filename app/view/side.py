"""One view of a side: what the screen draws of a side's frames, for the live race, the page's replays and the video.

A side's frames become analysed rows (`analysis.SideAnalyzer`), a status and message, metrics, the settled series
and, per cell, a token style (theme.json's styles: unchanged, masked, draft, new, changed, remasked, pinned).
`live.LiveView`, `payload.recording_payload` and the video export's `Track` all build their sides here; the words
come from app/view/theme.json, which the browser player reads too.

The browser player works out each cell's style itself, with the rule `cell_style` states, from what its rows
already carry (mask flags, change codes, the settled prefix `sp`): whether the row shown is the final one of a
finished side, and which position is inspected, are known only in the browser, and sending a style per cell
would make a typing side's rows as long as its answer instead of one token each.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from app.analysis import revision, states
from app.analysis.changes import SideAnalyzer, metrics, settled_fraction_series
from app.analysis.labels import side_labels
from app.errors import counted
from app.trace.frames import SIDES, Frame, Recording
from app.view.theme import TERMINAL, THEME

# source prefix -> setting -> its declared default, as app.sources.base.setting_defaults gives them to the page
Defaults = dict[str, dict[str, Any]]

SENTENCES: dict[str, str] = THEME["sentences"]
STOPPED = SENTENCES["stopped"]

# Cell styles, in the order the video's glyph cache indexes them (theme.json styles of the same names); the schema 2
# ones (noise, edited, renoised, inserted, deleted) come last, so a schema 1 recording draws as it always did, and a
# revising side's (issue 53: kept from the draft, revised = edited from the draft, reopened = re-noised, still open)
# after them.
CELLS = ("unchanged", "masked", "draft", "new", "changed", "remasked", "pinned", "noise", "edited", "renoised",
         "inserted", "deleted", "kept", "revised", "reopened")
(UNCHANGED, MASKED, DRAFT, NEW, CHANGED, REMASKED, PINNED, NOISE, EDITED, RENOISED, INSERTED, DELETED, KEPT, REVISED,
 REOPENED) = range(len(CELLS))
CODE_CELLS = tuple(CELLS.index(name) for name in states.CODE_NAMES[1:])  # change codes 1.., by name
CODE_NAMES = states.CODE_NAMES
SCHEMA1_CHANGES = (states.NEW, states.CHANGED, states.REMASKED)  # the codes a schema 1 frame may have but unchanged
SCHEMA2_CHANGES = frozenset(range(states.EDITED, len(CODE_NAMES)))  # and those only a schema 2 frame has


def cell_style(masked: bool, code: int, draft: bool, pinned: bool = False, noise: bool = False,
               letter: str = "") -> int:
    """A cell's style: pinned text (given before the run) first, then its change code against the frame before,
    then a re-noised draft position still open (`letter`: the frame's revision letter), then the mask, then noise
    (a random token), then draft (text that may still change), then kept from the draft or edited from it, else
    unchanged."""
    if pinned:
        return PINNED
    if code:
        return CODE_CELLS[code - 1]
    if letter == revision.RENOISED:
        return REOPENED
    if masked or noise or draft:
        return MASKED if masked else NOISE if noise else DRAFT
    return KEPT if letter == revision.KEPT else REVISED if letter == revision.EDITED else UNCHANGED


def cell_styles(row: dict[str, Any], settled_all: bool, pinned: frozenset[int] = frozenset()) -> list[int]:
    """Every position's style in an analysed row; `settled_all`: the row is the final one of a side that finished,
    so a typing side's text past its settled prefix is no longer draft; `pinned`: the side's given positions; a
    schema 2 row's states (`st`) say which positions are noise and which drafts."""
    masks, codes, states, letters = row["m"], row["ch"], row.get("st"), row.get("rv") or ""
    if states is not None:
        return [cell_style(states[i] == "m", code, states[i] == "d", i in pinned, states[i] == "n", letters[i:i + 1])
                for i, code in enumerate(codes)]
    draft_from = row["sp"] if masks is None and not settled_all else len(codes)
    return [cell_style(bool(masks and masks[i]), code, i >= draft_from, i in pinned, False, letters[i:i + 1])
            for i, code in enumerate(codes)]


def seen_in(rows: list[dict[str, Any]]) -> set[str]:
    """The schema 2 legend entries and heat keys a side's rows show (theme.json only_if_seen): noise, drafted,
    edited, renoised, inserted, deleted, and a revising side's kept, revised and reopened; empty for a schema 1
    side."""
    seen: set[str] = set()
    for row in rows:
        if row.get("del"):  # a schema 2 token row's, or a text state's that shrank
            seen.add("deleted")
        letters = row.get("rv") or ""
        seen.update(name for letter, name in (("k", "kept"), ("e", "revised"), ("r", "reopened")) if letter in letters)
        states = row.get("st")
        if states is None:
            continue
        seen.update(name for letter, name in (("n", "noise"), ("d", "drafted")) if letter in states)
        seen.update(CODE_NAMES[c] for c in SCHEMA2_CHANGES & set(row["ch"]))
    return seen


def legend_seen(rows: list[dict[str, Any]]) -> set[str]:
    """Every legend entry and heat key a side's rows show (as the player's noteSeen counts them), for a video, whose
    legend lists only what occurs: draft text is an unchanged cell past the settled prefix of a text side's frame."""
    seen = seen_in(rows) | {"unchanged"}
    for row in rows:
        codes, masks = row["ch"], row["m"]
        seen.update(CODE_NAMES[c] for c in SCHEMA1_CHANGES if c in codes)
        if masks and any(masks):
            seen.add("masked")
        drafted = masks is None and not row["final"] and 0 in codes[row["sp"]:len(row["tok"])]
        if (row.get("st") or "").count("d") or drafted:
            seen.add("draft")
    return seen


def heat_columns(rows: list[dict[str, Any]]) -> tuple[list[list[int]], list[list[int]], int] | None:
    """For a side whose frames insert or delete positions: per row, each position's heatmap column and the columns
    its deletions leave, and the number of columns (app/analysis/states.py columns); None for any other side, whose
    heatmap has a column per position."""
    if not any(row.get("del") or states.INSERTED in row["ch"] for row in rows if row.get("st") is not None):
        return None
    cols, width = states.columns(rows)
    gone = [[]] + [[prev_cols[d[0]] for d in row.get("del") or ()] for prev_cols, row in zip(cols, rows[1:])]
    return cols, gone, width


def pinned_positions(rows: list[dict[str, Any]]) -> frozenset[int]:
    """The positions a side's first row lists as given before the run (pinned text); empty without pins."""
    return frozenset(rows[0].get("pin") or ()) if rows else frozenset()


def status_sentence(statuses: list[str], names: list[str] | None = None) -> str:
    """The line above the panels for sides in these statuses, as a video draws it (the player's rule): racing until
    every side has ended, then stopped if one was stopped, failed if every side failed, finished but naming the side
    that failed (`names`, one per status), else finished."""
    if not all(st in TERMINAL or st == "idle" for st in statuses):
        return SENTENCES["racing"]
    if "stopped" in statuses:
        return STOPPED
    failed = [(names or [])[i] if i < len(names or []) else f"side {i + 1}" for i, st in enumerate(statuses)
              if st == "error"]
    if failed and "done" not in statuses:
        return SENTENCES["failed"]
    if failed:
        return SENTENCES["partly_failed"].replace("{side}", " and ".join(failed))
    return SENTENCES["finished"]


def summary(frames: list[Frame]) -> dict[str, Any]:
    """A side's metrics and settled series (the share of the final answer in place at each frame)."""
    return {"metrics": metrics(frames) if frames else None,
            "settled": settled_fraction_series(frames) if frames else []}


LIMITS = ("gen_length", "max_tokens")  # the settings that bound an answer's length, in the sources' declarations


def cut_at(source: dict[str, Any], frames: list[Frame]) -> int | None:
    """The length a finished side's answer was cut at: its source's length setting (`LIMITS`, as the header records
    it) when the final frame's answer has that many tokens, so it stopped at the length, not at end-of-text; else
    None. Why: an answer cut mid-sentence reads as the model's own ending unless the panel says so."""
    settings = source.get("settings")
    settings = settings if isinstance(settings, dict) else source
    limit = next((settings[k] for k in LIMITS if isinstance(settings.get(k), int) and settings[k] > 0), None)
    if limit is None or not frames or not frames[-1].final:
        return None
    usage = frames[-1].usage or {}
    n = usage.get("completion_tokens")
    return limit if isinstance(n, int) and n >= limit else None


def cut_note(source: dict[str, Any], frames: list[Frame]) -> str | None:
    """The panel's line for an answer cut at its length ("Cut at 128 tokens: ..."), or None (theme.json `cut`)."""
    n = cut_at(source, frames)
    return None if n is None else SENTENCES["cut"].replace("{n}", str(n))


def side_message(status: str, message: str | None, cut: str | None = None) -> str | None:
    """The line under a side's title: its own message, or for a side stopped without one, that its frames are kept, or
    for a finished side whose answer was cut at its length (`cut_note`), that."""
    return message or (STOPPED if status == "stopped" else cut if status == "done" else None)


def entry(spec: str, label: str, status: str, message: str | None, start: int, rows: list[dict[str, Any]],
          done: dict[str, Any] | None = None, cut: str | None = None,
          draft: dict[str, Any] | None = None) -> dict[str, Any]:
    """A side as the player's payload carries it: title, status, message (`cut`: the note of an answer cut at its
    length) and rows from index `start`, plus `done` (its summary) once it has ended, and `draft` (draft_entry) for
    a side that started from a draft."""
    out: dict[str, Any] = {"spec": spec, "label": label, "status": status,
                           "message": side_message(status, message, cut), "start": start, "rows": rows}
    if draft is not None:
        out["draft"] = draft
    if done is not None:
        out.update(done)
    return out


def draft_line(plan: dict[str, Any]) -> str:
    """The panel's line for a side that started from a draft: its plan's own note (an AR side's prefix, a source
    that cannot revise), else what its mode did, counted from the plan."""
    if plan.get("note"):
        return str(plan["note"])
    length, gone = plan["length"], len(plan["renoised"])
    if plan["mode"] == "prefix":
        kept = plan.get("kept_prefix", 0)
        return (f"Kept the draft's first {counted(kept, 'token')} and wrote the rest again: an autoregressive model "
                "cannot revise in place.")
    if plan["mode"] == "cannot":
        return "This source cannot start from a draft, so it wrote its answer from nothing."
    return (f"Started from the draft: {gone} of its {counted(length, 'token')} re-noised, the rest kept as "
            "written until the model revises them.")


def draft_entry(source: dict[str, Any]) -> dict[str, Any] | None:
    """What the player draws of a side's draft (its header's plan, app/analysis/revision.py plan): the mode, the
    panel's line, the draft's tokens (the inspector starts each position's history at its draft token) and the
    re-noised positions; None for a side without a draft."""
    plan = revision.plan(source)
    if plan is None:
        return None
    return {"mode": plan["mode"], "line": draft_line(plan), "tokens": plan["tokens"], "renoised": plan["renoised"]}


def caption(header: dict[str, Any]) -> str:
    """The recording's one-line caption (bundled examples carry one), or ""."""
    value = header.get("caption")
    return value.strip() if isinstance(value, str) else ""


@dataclass
class RecordedSide:
    """One side of a saved recording, analysed once: rows, how it ended, metrics and settled series."""

    key: str
    source: dict[str, Any]
    label: str
    frames: list[Frame]
    ended: bool  # the recording says how this side ended
    status: str  # done, stopped or error; a side whose end is missing shows as stopped
    message: str | None
    rows: list[dict[str, Any]] = field(default_factory=list)
    done: dict[str, Any] = field(default_factory=dict)

    @property
    def draft(self) -> dict[str, Any] | None:
        """The side's draft as the player draws it (draft_entry), or None."""
        return draft_entry(self.source)

    @property
    def spec(self) -> str:
        return str(self.source.get("name", self.key))

    @property
    def pinned(self) -> frozenset[int]:
        return pinned_positions(self.rows)

    def in_place(self) -> list[int]:
        """Per frame, how many tokens of the final answer are already in place (the page's convergence measure, so a
        noisy draft's noise is not counted), counted as the metrics count the answer: at the last frame it is their
        `answer_tokens` (an AR model's tokenizer pieces, one a pass), as in the player's figures."""
        m = self.done["metrics"] if self.frames else {}
        total = (m["answer_tokens"] if m.get("answer_tokens") is not None else m.get("tokens")) or 0
        return [round(share * total) for _, share in self.done["settled"]]

    def entry(self) -> dict[str, Any]:
        """This side as a payload entry, its rows as analysed (not yet compacted for the wire)."""
        return entry(self.spec, self.label, self.status, self.message, 0, self.rows, self.done, draft=self.draft)


def _sources(rec: Recording) -> dict[str, dict[str, Any]]:
    """The header's source per side, leaving out anything that is not a mapping (a damaged header)."""
    sources = rec.header.get("sources")
    if not isinstance(sources, dict):
        return {}
    return {key: value for key, value in sources.items() if isinstance(value, dict)}


def recorded_side(rec: Recording, key: str, label: str | None = None) -> RecordedSide:
    """One side of a recording (`key`: left or right), its rows analysed the way the live race analysed them."""
    source = _sources(rec).get(key, {})
    frames = rec.frames.get(key, [])
    analyzer = SideAnalyzer(schema=rec.schema)
    end = rec.ends.get(key)
    status = end["status"] if end and end.get("status") in TERMINAL else "stopped"
    message = side_message(status, (end or {}).get("message"), cut_note(source, frames))
    if end is None and frames:
        message = SENTENCES["unended"]
    return RecordedSide(key, source, str(source.get("name", key)) if label is None else label, frames, end is not None,
                        status, message, [analyzer.add(f) for f in frames], summary(frames))


def recorded_sides(rec: Recording, defaults: Defaults | None = None) -> dict[str, RecordedSide]:
    """The sides a recording holds (with frames, an end or a source), titled as the live race titled them (`defaults`:
    each source's setting defaults, as app.sources.base.setting_defaults gives them, passed in by the page)."""
    sources = _sources(rec)
    labels = side_labels({side: sources[side] for side in SIDES if side in sources}, defaults)
    out = {}
    for key in SIDES:
        if rec.frames.get(key) or key in rec.ends or sources.get(key):
            out[key] = recorded_side(rec, key, labels.get(key))
    return out
