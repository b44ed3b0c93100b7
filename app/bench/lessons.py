"""The lessons section of `python -m app bench`: how soon each guided lesson shows its first frames after Run."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

from app.lessons.guided import LESSONS
from app.race.run import Race
from app.ui.live import live_updates


def bench() -> dict[str, Any]:
    """`python -m app bench --only lessons`: per lesson, seconds from pressing Run (sources built, weights loaded
    if not yet) to the first frames on the page, and to the end of the race, for the setup and for its change."""
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, lesson in enumerate(LESSONS):
            row: dict[str, Any] = {"lesson": i + 1, "title": lesson.title}
            if lesson.board:  # it runs a board, not a race: `python -m app bench --only board` times a board
                rows.append({**row, "board": lesson.board})
                continue
            for label, sources in (("setup", lesson.sources()), ("change", lesson.changed())):
                started = time.perf_counter()
                race = Race(lesson.prompt, sources["left"][0], sources["right"][0],
                            settings={side: settings for side, (_, settings) in sources.items()},
                            out=Path(tmp) / f"{i}-{label}.jsonl", draft=lesson.draft)  # as the page starts it
                first = None
                for update in live_updates(race, interval=0.05):
                    if first is None and any(entry["rows"] for entry in update["sides"].values()):
                        first = time.perf_counter() - started
                statuses = {side: entry["status"] for side, entry in update["sides"].items()}
                row[label] = {"first_frames_s": round(first, 3) if first is not None else None,
                              "done_s": round(time.perf_counter() - started, 3), "status": statuses}
            rows.append(row)
    raced = [row for row in rows if "board" not in row]
    firsts = [row[k]["first_frames_s"] for row in raced for k in ("setup", "change")]
    return {"target": "first frames within 2 s of pressing Run on a 2-core CPU", "lessons": rows,
            "first_frames_max_s": max((f for f in firsts if f is not None), default=None),
            "all_done": all(s == "done" for row in raced for k in ("setup", "change")
                            for s in row[k]["status"].values())}
