"""A board run: its races planned from two sources or one source under several settings, each race run headless and
recorded, each side's row (passes, answer tokens, tokens per pass, seconds on its own clock, quality, recording)
appended to the CSV and flushed the moment its race ends, so a stopped board keeps what finished and a rerun with the
same CSV skips it."""

from __future__ import annotations

import csv
import json
import math
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from app.analysis.changes import eos_cut, metrics
from app.board.cells import read_row, safe_row
from app.board.prompts import Prompt, check
from app.errors import UserError
from app.race.run import Race
from app.trace.frames import Frame

COLUMNS = ("prompt_index", "prompt", "expected", "seed", "label", "method", "spec", "settings", "status", "passes",
           "answer_tokens", "tokens_per_pass", "seconds", "quality", "quality_kind", "match", "answer", "recording")
SECRET = ("api_key",)  # settings that are keys: given to the race as secrets, never written in a row
Judged = tuple[str, float | None, str, str]  # a side's answer, its quality, the quality's kind and the match


@dataclass(frozen=True)
class Entrant:
    """One side of the board: a label for its rows, its method (what AUP scores as one curve), a source and settings."""

    label: str
    method: str
    spec: str
    settings: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Heat:
    """One race of the board: a prompt, a seed and the two entrants on its sides."""

    index: int
    prompt: Prompt
    seed: int
    left: Entrant
    right: Entrant


def parse_value(text: str) -> Any:
    """A --vary value as the settings take it: a JSON number, true/false or null, else the text itself."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def varied(spec: str, vary: str, settings: dict[str, Any] | None = None) -> list[Entrant]:
    """`SETTING=V1,V2,...` as one entrant per value, all of one method (the source): the curve AUP scores."""
    name, sep, values = vary.partition("=")
    parts = [v.strip() for v in values.split(",") if v.strip()]
    if not sep or not re.fullmatch(r"[a-z_]+", name.strip()) or len(parts) < 2:
        raise UserError("--vary takes SETTING=V1,V2,... with at least two values, e.g. --vary filter=0.9,0.7,0.5.")
    return [Entrant(f"{name.strip()}={v}", spec, spec, {**(settings or {}), name.strip(): parse_value(v)})
            for v in parts]


def paired(left: Entrant, right: Entrant) -> list[Entrant]:
    """Two sources as two entrants, each its own method; one source on both sides is told apart by its side."""
    if left.label == right.label:
        left = Entrant(f"{left.label} (left)", f"{left.method} (left)", left.spec, left.settings)
        right = Entrant(f"{right.label} (right)", f"{right.method} (right)", right.spec, right.settings)
    return [left, right]


def plan(entrants: Sequence[Entrant], prompts: Sequence[Prompt], seeds: int) -> list[Heat]:
    """The board's races: for each prompt and seed the entrants two at a time (an odd last one races the first again,
    whose row the board already has and does not write twice)."""
    pairs = [(entrants[i], entrants[i + 1] if i + 1 < len(entrants) else entrants[0])
             for i in range(0, len(entrants), 2)]
    return [Heat(i, p, seed, a, b) for i, p in enumerate(prompts) for seed in range(seeds) for a, b in pairs]


def row_key(row: dict[str, Any]) -> tuple[str, str, str]:
    """What makes a row one: its prompt, seed and label (as the CSV holds them, text)."""
    return str(row["prompt_index"]), str(row["seed"]), str(row["label"])


def read_rows(path: Path) -> list[dict[str, Any]]:
    """The rows a board CSV already holds (none when it is absent), for resuming and for the tables."""
    if not path.is_file():
        return []
    with path.open(encoding="utf-8", newline="") as f:
        rows = [read_row(row) for row in csv.DictReader(f)]
    if rows and set(COLUMNS) - set(rows[0]):
        raise UserError(f"{path} is not a board's CSV (its columns differ); give --out another name.")
    return rows


def answer_text(frame: Frame) -> str:
    """The answer a side ended with: a text source's text, or its shown tokens up to end-of-text."""
    if frame.text is not None and not frame.tokens:
        return frame.text
    masked = frame.masked or [False] * len(frame.tokens)
    cut = eos_cut(frame.tokens, frame.masked)
    return "".join(t for t, m in zip(frame.tokens[:cut], masked[:cut]) if not m)


def seeded(entrant: Entrant, seed: int, takes_seed: Callable[[str], bool]) -> dict[str, Any]:
    """The entrant's settings with the heat's seed, where its source takes one."""
    return {**entrant.settings, "seed": seed} if takes_seed(entrant.spec) else dict(entrant.settings)


class Board:
    """Races `heats`, writing each side's row to `csv_path` as its race ends (None: the rows are kept in `rows` only,
    each race saved where `race_options` says); `score(prompt, answer)` gives a story's referee perplexity (None where
    it cannot); `race_options` (or a function giving them afresh for each race) go to each Race (the page passes its
    visitor's `make`, folder and size cap); `on_saved(path)` hears of each recording written. Rows already in the CSV
    are kept and their races skipped."""

    def __init__(self, heats: Sequence[Heat], csv_path: str | Path | None, score: Callable[[str, str], float | None],
                 takes_seed: Callable[[str], bool] = lambda spec: False,
                 race_options: dict[str, Any] | Callable[[], dict[str, Any]] | None = None,
                 on_saved: Callable[[Path], None] | None = None) -> None:
        self.heats = list(heats)
        self.csv_path = Path(csv_path) if csv_path is not None else None
        self.folder = self.csv_path.with_name(self.csv_path.stem + "-races") if self.csv_path else None
        self.score = score
        self.takes_seed = takes_seed
        self.race_options = race_options or {}
        self.on_saved = on_saved
        self.rows = read_rows(self.csv_path) if self.csv_path else []
        self.done = {row_key(r) for r in self.rows}

    def pending(self) -> list[Heat]:
        """The heats with a side whose row the CSV does not hold yet."""
        return [h for h in self.heats if any(self._key(h, e) not in self.done for e in (h.left, h.right))]

    def _key(self, heat: Heat, entrant: Entrant) -> tuple[str, str, str]:
        return str(heat.index), str(heat.seed), entrant.label

    def run(self) -> Iterator[Heat]:
        """Races every pending heat in turn, yielding each once its rows are kept (and on disk, with a CSV)."""
        if self.csv_path is None or self.folder is None:
            for heat in self.pending():
                self._keep(self.race(heat))
                yield heat
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        new = not self.csv_path.is_file() or self.csv_path.stat().st_size == 0
        with self.csv_path.open("a", encoding="utf-8", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=COLUMNS)
            if new:
                writer.writeheader()
                f.flush()
            for heat in self.pending():
                writer.writerows(safe_row(row) for row in self._keep(self.race(heat)))
                f.flush()
                yield heat

    def _keep(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The rows not kept yet (an odd last entrant's second run of the first is not), now kept."""
        fresh = [row for row in rows if row_key(row) not in self.done]
        self.rows += fresh
        self.done |= {row_key(row) for row in fresh}
        return fresh

    def race(self, heat: Heat) -> list[dict[str, Any]]:
        """Runs one heat headless (trusted, as `python -m app record` does, unless `race_options` brings the page's
        `make`) and returns its two rows."""
        name = f"p{heat.index:03d}-s{heat.seed}-" + re.sub(r"[^\w.=-]+", "_", f"{heat.left.label}-{heat.right.label}")
        out = self.folder / f"{name[:120]}.jsonl" if self.folder is not None else None
        settings = {"left": seeded(heat.left, heat.seed, self.takes_seed),
                    "right": seeded(heat.right, heat.seed, self.takes_seed)}
        secrets = {side: {k: given.pop(k) for k in SECRET if k in given} for side, given in settings.items()}
        options = self.race_options() if callable(self.race_options) else self.race_options
        race = Race(heat.prompt.text, heat.left.spec, heat.right.spec, settings=settings, out=out,
                    **{"secrets": secrets, **options})  # a key given as a setting is scrubbed as a typed one is
        judged: dict[str, Judged] = {}
        for _ in race.ticks(0.2):
            for side, s in race.sides.items():  # a side is judged as soon as it ends, while the other still runs
                if side not in judged and s.status not in ("waiting", "running"):
                    judged[side] = self.judge(replace(heat.prompt, text=race.prompt), s.frames)
        saved = race.path.is_file() and options.get("max_bytes") != 0
        if saved and self.on_saved is not None:
            self.on_saved(race.path)
        link = "" if not saved else (race.path.relative_to(self.csv_path.parent).as_posix() if self.csv_path
                                     and race.path.is_relative_to(self.csv_path.parent) else str(race.path))
        asked = replace(heat, prompt=replace(heat.prompt, text=race.prompt))  # as the race kept it: keys scrubbed
        return self.rows_of(asked, race, link, judged)

    def rows_of(self, heat: Heat, race: Race, link: str,
                judged: dict[str, Judged] | None = None) -> list[dict[str, Any]]:
        """The heat's two rows, one after the other, with the judgements made while the race ran (`judged`, by side);
        scoring the two in two threads took a fifth less wall time and a fifth more CPU time (the two contend), so the
        board keeps to one (`python -m app bench --only board`)."""
        judged = judged or {}
        return [self.row(heat, entrant, race.sides[side].frames, race.sides[side].status, race.sides[side].message,
                         link, judged.get(side)) for side, entrant in (("left", heat.left), ("right", heat.right))]

    def judge(self, prompt: Prompt, frames: list[Frame]) -> Judged:
        """(answer, quality, its kind, match) of a side's frames: an expected answer's match, or the referee's
        perplexity of a story."""
        answer = answer_text(frames[-1]) if frames else ""
        if prompt.expected is not None:
            match = check(answer, prompt.expected)
            return answer, (100.0 if match != "no" else 0.0), "match", match
        return answer, self.score(prompt.text, answer) if answer.strip() else None, "referee_ppl", ""

    def row(self, heat: Heat, entrant: Entrant, frames: list[Frame], status: str, message: str | None,
            link: str, judged: Judged | None = None) -> dict[str, Any]:
        """One side's row: its figures from its frames, its quality (`judged`, or judged now), and the recording it
        is in."""
        m = metrics(frames)
        answer, quality, kind, match = judged or self.judge(heat.prompt, frames)
        return {"prompt_index": heat.index, "prompt": heat.prompt.text, "expected": heat.prompt.expected or "",
                "seed": heat.seed, "label": entrant.label, "method": entrant.method, "spec": entrant.spec,
                "settings": json.dumps({k: v for k, v in entrant.settings.items() if k not in SECRET}, sort_keys=True),
                "status": status if not message else f"{status}: {message}",
                "passes": _blank(m["nfe"]), "answer_tokens": _blank(m["answer_tokens"]),
                "tokens_per_pass": _blank(m["tokens_per_nfe"]), "seconds": _blank(m["t_final"]),
                "quality": _blank(None if quality is None else round(quality, 3)), "quality_kind": kind,
                "match": match, "answer": answer, "recording": link}


def _blank(value: float | int | None) -> Any:
    """A figure for the CSV: blank where the side could not say (None or not a number)."""
    return "" if value is None or (isinstance(value, float) and math.isnan(value)) else value


def takes_seed(spec: str) -> bool:
    """Whether the source named by `spec` has a `seed` setting (the board's seeds go only where one is taken)."""
    from app.sources.base import kind_of

    kind, arg = kind_of(spec)
    return "seed" in kind.backend(arg).names


def referee(models_dir: str | Path | None = None) -> Callable[[str, str], float | None]:
    """A story's quality: the perplexity of the answer given the prompt under the referee twin (an AR twin trained
    with another seed that taught neither racing twin), both read with the twins' tokenizer; None without the twins."""
    from app.engine.model import DEFAULT_MODELS_DIR, load_twin
    from app.measure.quality import nll

    try:
        judge, tok = load_twin("referee", str(models_dir or DEFAULT_MODELS_DIR))
    except UserError:
        return lambda prompt, answer: None

    def score(prompt: str, answer: str) -> float | None:
        ids = tok.encode(answer)
        return math.exp(nll(judge, tok.encode(prompt), ids) / len(ids)) if ids else None

    return score
