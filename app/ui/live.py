"""A running race as the player's updates: each tick of `Race.ticks` becomes one update holding every side's new
frames as analysed rows, its status and message, and, once the side has ended, its metrics (computed once). It lives
with the page, which runs races, so that the view below it only draws what it is handed."""

from __future__ import annotations

from typing import Any, Generator

from app.analysis.changes import SideAnalyzer
from app.analysis.labels import side_labels
from app.race.run import Race
from app.sources.base import setting_defaults
from app.view.side import cut_note, draft_entry, entry, summary
from app.view.why import paced, why_line


class LiveView:
    """What the player has been sent of one race: per side, an analyser and how many frames it has analysed."""

    def __init__(self, race: Race) -> None:
        self.race = race
        self.labels = side_labels(race.sources, setting_defaults())
        self._analyzers = {side: SideAnalyzer() for side in race.sides}
        self._sent = {side: 0 for side in race.sides}
        self._done: dict[str, dict[str, Any]] = {}

    def update(self, final: bool = False) -> dict[str, Any]:
        """One update: each side's rows since the last update, status, message and, once ended, its summary."""
        sides: dict[str, Any] = {}
        for side, s in self.race.sides.items():
            start, frames = self._sent[side], s.frames[self._sent[side]:]
            rows = [self._analyzers[side].add(f) for f in frames]
            self._sent[side] += len(frames)
            done = None
            if s.status not in ("waiting", "running"):
                if side not in self._done:
                    self._done[side] = summary(s.frames)
                done = self._done[side]
            elif final:
                done = summary(s.frames)
            cut = cut_note(self.race.sources.get(side, {}), s.frames) if done is not None else None
            draft = draft_entry(self.race.sources.get(side, {})) if start == 0 else None  # until its first frames
            sides[side] = entry(s.spec, self.labels.get(side, s.spec), s.status, s.message, start, rows, done, cut,
                                draft)
        out = {"prompt": self.race.prompt, "recording": self.race.path.name, "done": final, "sides": sides}
        why = why_line([paced(entry["label"], entry.get("metrics"), self.race.sides[side].frames)
                        for side, entry in sides.items()]) if final else None
        return {**out, "why": why} if why else out


def live_updates(race: Race, interval: float = 0.05) -> Generator[dict[str, Any], None, None]:
    """The race's updates for the player, at most one per `interval` while frames arrive, then the final one."""
    view, ticks = LiveView(race), race.ticks(interval)
    try:
        for final in ticks:
            yield view.update(final)
    finally:
        ticks.close()  # a consumer that stops listening stops the race now, not when this is collected
