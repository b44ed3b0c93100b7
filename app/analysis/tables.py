"""A recording as pandas tables, for notebooks and spreadsheets: per-frame figures and per-side metrics.

Every number comes from app.analysis.changes (the change codes, the settled fraction, the metrics), so a table
says what the page, the exports and the bench say. pandas is imported only when a table is built.
`python -m app stats run.jsonl [--csv FILE]` (app/cli/stats.py) prints the metrics and writes the per-frame CSV.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.analysis.changes import (
    CHANGED,
    NEW,
    REMASKED,
    SideAnalyzer,
    metrics,
    settled_fraction_series,
    visible_count,
)
from app.analysis.states import EDITED, INSERTED, RENOISED
from app.trace.frames import RAN_ELSEWHERE, SIDES, Recording
from app.trace.reading import read_recording

if TYPE_CHECKING:
    import pandas

FRAME_COLUMNS = ("side", "source", "frame", "step", "t", "passes", "visible_tokens", "committed", "changed",
                 "remasked", "edited", "renoised", "inserted", "deleted", "settled_fraction", "final")


def _recording(recording: Recording | str | Path) -> Recording:
    return recording if isinstance(recording, Recording) else read_recording(recording)


def _source(rec: Recording, side: str) -> str:
    """The side's source name, saying so when the recording ran in a visitor's browser (its frames as sent)."""
    name = str(rec.header.get("sources", {}).get(side, {}).get("name", side))
    return f"{name} ({RAN_ELSEWHERE})" if rec.header.get("ran_in") else name


def frames_table(recording: Recording | str | Path) -> "pandas.DataFrame":
    """One row per frame of each side: its time, forward passes (the frame's recorded nfe; empty for text sources),
    visible tokens, how many positions were committed (a token where there was a mask or nothing), changed,
    remasked, and (schema 2) edited, re-noised, inserted and deleted against the previous frame, and the share of the
    final answer's tokens already in place."""
    import pandas as pd

    rec = _recording(recording)
    rows: list[dict[str, Any]] = []
    for side in SIDES:
        frames = rec.frames.get(side, [])
        settled = settled_fraction_series(frames)
        analyzer = SideAnalyzer(schema=rec.schema)
        for i, (frame, (_, fraction)) in enumerate(zip(frames, settled)):
            row = analyzer.add(frame)
            codes = row["ch"]
            rows.append({"side": side, "source": _source(rec, side), "frame": i, "step": frame.step, "t": frame.t,
                         "passes": frame.nfe, "visible_tokens": visible_count(frame),
                         "committed": codes.count(NEW), "changed": codes.count(CHANGED),
                         "remasked": codes.count(REMASKED), "edited": codes.count(EDITED),
                         "renoised": codes.count(RENOISED), "inserted": codes.count(INSERTED),
                         "deleted": len(row.get("del") or ()), "settled_fraction": fraction, "final": frame.final})
    table = pd.DataFrame(rows, columns=list(FRAME_COLUMNS))
    return table.astype({"frame": "int64", "step": "int64", "t": "float64", "passes": "Int64",
                         "visible_tokens": "int64", "committed": "int64", "changed": "int64", "remasked": "int64",
                         "edited": "int64", "renoised": "int64", "inserted": "int64", "deleted": "int64",
                         "settled_fraction": "float64", "final": "bool"})


def metrics_table(recording: Recording | str | Path) -> "pandas.DataFrame":
    """app.analysis.changes.metrics for each side, one column per side (the source's name in the first row)."""
    import pandas as pd

    rec = _recording(recording)
    return pd.DataFrame({side: {"source": _source(rec, side), **metrics(rec.frames.get(side, []))} for side in SIDES})


def write_frames_csv(recording: Recording | str | Path, out: str | Path) -> Path:
    """Writes frames_table as CSV (one header row, no index column) and returns where it went."""
    out = Path(out)
    frames_table(recording).to_csv(out, index=False)
    return out
