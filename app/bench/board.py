"""`python -m app bench --only board`: what the board (app/board/) adds to the races it runs (issue 54, item 6).

"Races alone" runs the same heats as bare races, each recorded, its ticks drained and nothing else; "board" runs them
through `Board.run`, which also loads the referee, reads each side's metrics, scores each answer and appends and
flushes the CSV. The two alternate over `repeats` rounds. On a shared machine wall time moves by tens of percent from
one round to the next with other work, so the overhead is read three ways: wall time and this process's CPU time of
the board over the races alone, less one, and the board's own work timed where it happens (loading the referee, each
row's metrics and score) over the races' wall time. Target: under 5%.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from app.board.prompts import prompt_set
from app.board.run import Board, Entrant, paired, plan, referee, seeded, takes_seed
from app.race.run import Race

PROMPTS = 6  # the first six held-out openings: a board of twelve rows a round
TARGET = 0.05


class TimedBoard(Board):
    """The board, with the seconds of its own work added up: each row's (`own`) and, of that, the referee's scoring
    (`scoring`)."""

    own = 0.0
    scoring = 0.0

    def row(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        started = time.perf_counter()
        try:
            return super().row(*args, **kwargs)
        finally:
            self.own += time.perf_counter() - started


def timed_score(board: TimedBoard, score: Any) -> Any:
    """`score`, its seconds added to `board.scoring`."""
    def timed(prompt: str, answer: str) -> float | None:
        started = time.perf_counter()
        try:
            return score(prompt, answer)
        finally:
            board.scoring += time.perf_counter() - started
    return timed


def races_alone(heats: list[Any], folder: Path) -> tuple[float, float]:
    """(wall, CPU) seconds to run the heats as bare races, recorded as the board records them."""
    wall, cpu = time.perf_counter(), time.process_time()
    for k, heat in enumerate(heats):
        settings = {side: seeded(entrant, heat.seed, takes_seed)
                    for side, entrant in (("left", heat.left), ("right", heat.right))}
        race = Race(heat.prompt.text, heat.left.spec, heat.right.spec, settings=settings, out=folder / f"{k}.jsonl")
        for _ in race.ticks(0.2):
            pass
    return time.perf_counter() - wall, time.process_time() - cpu


def on_board(heats: list[Any], csv_path: Path) -> dict[str, float]:
    """Seconds to run the heats through the board: wall and CPU, loading the referee (once a board), every row's own
    work and, of that, the referee's scoring."""
    wall, cpu = time.perf_counter(), time.process_time()
    board = TimedBoard(heats, csv_path, referee(), takes_seed)
    load = time.perf_counter() - wall
    board.score = timed_score(board, board.score)
    for _ in board.run():
        pass
    return {"wall": time.perf_counter() - wall, "cpu": time.process_time() - cpu, "load": load, "rows": board.own,
            "scoring": board.scoring}


def bench(repeats: int = 3, prompts: int = PROMPTS) -> dict[str, Any]:
    """The board of both twins over the first `prompts` openings against the same races alone, `repeats` rounds."""
    heats = plan(paired(Entrant("local-diffusion", "local-diffusion", "local-diffusion"),
                        Entrant("local-ar", "local-ar", "local-ar")), prompt_set("stories")[:prompts], seeds=1)
    alone: list[tuple[float, float]] = []
    board: list[dict[str, float]] = []
    with tempfile.TemporaryDirectory() as tmp:
        races_alone(heats[:1], Path(tmp))  # warm-up: the twins load once, for both
        for k in range(repeats):
            folder = Path(tmp) / f"alone-{k}"
            folder.mkdir()
            alone.append(races_alone(heats, folder))
            board.append(on_board(heats, Path(tmp) / f"board-{k}.csv"))
    def raced(b: dict[str, float]) -> float:
        """The board's seconds in its races: its wall time less its own work."""
        return b["wall"] - b["load"] - b["rows"]

    def median(values: list[float]) -> float:
        return round(statistics.median(values), 4)

    own = median([(b["load"] + b["rows"]) / raced(b) for b in board])
    return {"races": len(heats), "rounds": repeats,
            "races_alone_wall_seconds": [round(a[0], 3) for a in alone],
            "board_wall_seconds": [round(b["wall"], 3) for b in board],
            "races_alone_cpu_seconds": [round(a[1], 3) for a in alone],
            "board_cpu_seconds": [round(b["cpu"], 3) for b in board],
            "wall_overhead_median": median([b["wall"] / a[0] - 1 for a, b in zip(alone, board)]),
            "cpu_overhead_median": median([b["cpu"] / a[1] - 1 for a, b in zip(alone, board)]),
            "referee_load_seconds_median": median([b["load"] for b in board]),
            "scoring_share_median": median([b["scoring"] / raced(b) for b in board]),
            "bookkeeping_share_median": median([(b["rows"] - b["scoring"]) / raced(b) for b in board]),
            "own_share_median": own,
            "target": f"the board's own work under {TARGET:.0%} of its races' time", "met": own < TARGET}
