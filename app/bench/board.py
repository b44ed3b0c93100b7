"""`python -m app bench --only board`: what the board (app/board/) adds to the races it runs (issue 54, item 6).

"Races alone" runs the same heats as bare races, each recorded, its ticks drained and nothing else; "board" runs them
through `Board.run`, which also loads the referee, reads each side's metrics, judges each side's answer as the side
ends (while the other side may still be running) and appends and flushes the CSV. The two alternate over `repeats`
rounds. On a shared machine wall time moves by tens of percent from one round to the next with other work, so the
overhead is read four ways: wall time and this process's CPU time of the board over the races alone, less one; and
the board's own work timed where it happens (loading the referee, each side's judgement, each heat's rows), in wall
seconds over the races' wall seconds (as if none of it overlapped a race) and in CPU seconds over the races' CPU
seconds. Target, in the worst round: the board's wall time under 5% over the races alone (what the issue asks), and
its own work under 5% of the races' CPU time.
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
    """The board, with its own work added up: each heat's rows and each side's judgement (made as the side ends, while
    the other may still run) in wall seconds (`own`, as if none of it overlapped a race) and in their thread's CPU
    seconds (`own_cpu`), and of that the referee's scoring (`scoring_cpu`)."""

    own = 0.0
    own_cpu = 0.0
    scoring_cpu = 0.0
    _in_row = False

    def rows_of(self, *args: Any, **kwargs: Any) -> list[dict[str, Any]]:
        started = time.perf_counter()
        try:
            return super().rows_of(*args, **kwargs)
        finally:
            self.own += time.perf_counter() - started

    def row(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        started, self._in_row = time.thread_time(), True
        try:
            return super().row(*args, **kwargs)
        finally:
            self.own_cpu += time.thread_time() - started
            self._in_row = False

    def judge(self, *args: Any, **kwargs: Any) -> Any:
        if self._in_row:  # timed as part of its row
            return super().judge(*args, **kwargs)
        wall, cpu = time.perf_counter(), time.thread_time()
        try:
            return super().judge(*args, **kwargs)
        finally:
            self.own += time.perf_counter() - wall
            self.own_cpu += time.thread_time() - cpu


def timed_score(board: TimedBoard, score: Any) -> Any:
    """`score`, its thread's CPU seconds added to `board.scoring_cpu`."""
    def timed(prompt: str, answer: str) -> float | None:
        started = time.thread_time()
        try:
            return score(prompt, answer)
        finally:
            board.scoring_cpu += time.thread_time() - started
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
    """Seconds to run the heats through the board: wall and CPU, loading the referee (once a board, both), every
    heat's rows (wall), every row (CPU) and, of that, the referee's scoring (CPU)."""
    wall, cpu = time.perf_counter(), time.process_time()
    board = TimedBoard(heats, csv_path, referee(), takes_seed)
    load, load_cpu = time.perf_counter() - wall, time.process_time() - cpu
    board.score = timed_score(board, board.score)
    for _ in board.run():
        pass
    return {"wall": time.perf_counter() - wall, "cpu": time.process_time() - cpu, "load": load, "load_cpu": load_cpu,
            "rows": board.own, "rows_cpu": board.own_cpu, "scoring_cpu": board.scoring_cpu}


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
        """The board's wall seconds in its races: its wall time less its own work."""
        return b["wall"] - b["load"] - b["rows"]

    def raced_cpu(b: dict[str, float]) -> float:
        """The board's CPU seconds in its races: its CPU time less its own work's."""
        return b["cpu"] - b["load_cpu"] - b["rows_cpu"]

    def median(values: list[float]) -> float:
        return round(statistics.median(values), 4)

    own = [(b["load"] + b["rows"]) / raced(b) for b in board]
    own_cpu = [(b["load_cpu"] + b["rows_cpu"]) / raced_cpu(b) for b in board]
    overhead = [b["wall"] / a[0] - 1 for a, b in zip(alone, board)]
    return {"races": len(heats), "rounds": repeats,
            "races_alone_wall_seconds": [round(a[0], 3) for a in alone],
            "board_wall_seconds": [round(b["wall"], 3) for b in board],
            "races_alone_cpu_seconds": [round(a[1], 3) for a in alone],
            "board_cpu_seconds": [round(b["cpu"], 3) for b in board],
            "wall_overhead_median": median(overhead), "wall_overhead_worst": round(max(overhead), 4),
            "cpu_overhead_median": median([b["cpu"] / a[1] - 1 for a, b in zip(alone, board)]),
            "referee_load_seconds_median": median([b["load"] for b in board]),
            "own_share_median": median(own), "own_share_worst": round(max(own), 4),
            "own_cpu_share_median": median(own_cpu), "own_cpu_share_worst": round(max(own_cpu), 4),
            "scoring_cpu_share_median": median([b["scoring_cpu"] / raced_cpu(b) for b in board]),
            "target": f"the board's wall time under {TARGET:.0%} over its races alone, and its own work under "
                      f"{TARGET:.0%} of its races' CPU time, in the worst round",
            "met": max(*overhead, *own_cpu) < TARGET}
