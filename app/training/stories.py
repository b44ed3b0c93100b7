"""The twins' training stories: how the corpus files split into stories, which stories training keeps aside, and the
streams of a teacher's stories that training reads instead (`--kd-data`).

Torch-free, so that the bench, the filter fitting and the twin's own story writer read the same split as training
(`app/training/train.py`) without the training module: the held-out stories are never trained on, and their first
sentences are openings nobody tuned the twins on.
"""

from __future__ import annotations

import json
import random
import re
import shlex
import sys
from pathlib import Path
from typing import Any

import numpy as np

STORY_START = re.compile(r"^(Once upon a time|Once there|Once,)")
SPLIT_SEED = 1337  # the twins' seed (train.py's --seed default): the split every shipped twin was trained with
FIRST_SENTENCE = re.compile(r"(.+?[.!?])(?=\s|$)", re.S)


def read_stories(paths: list[str]) -> list[str]:
    """Splits corpus files into stories: a single newline between non-empty lines ends a story
    (TinyStories subset b); where stories are only separated by blank lines like their paragraphs
    (subset a), a paragraph opening with a story opener ("Once upon a time"...) starts a new one."""
    stories: list[str] = []
    for path in paths:
        text = Path(path).read_text(encoding="utf-8").replace("\r\n", "\n")
        single = _has_single_breaks(text)  # read once a file: it scans the whole text
        blocks = re.split(r"(?<=[^\n])\n(?=[^\n])", text) if single else [text]
        for block in blocks:
            current: list[str] = []
            for para in re.split(r"\n\s*\n", block):
                para = para.strip()
                if not para:
                    continue
                if current and STORY_START.match(para) and not single:
                    stories.append("\n\n".join(current))
                    current = []
                current.append(para)
            if current:
                stories.append("\n\n".join(current))
    return stories


def _has_single_breaks(text: str) -> bool:
    """True when single newlines separate stories (more than one per 20 blank-line breaks)."""
    singles = len(re.findall(r"(?<=[^\n])\n(?=[^\n])", text))
    return singles * 20 > text.count("\n\n")


def split_stories(stories: list[str], seed: int, held_out: float = 0.03) -> tuple[list[str], list[str]]:
    """Seeded shuffle, then the first `held_out` fraction is kept aside for held-out loss."""
    order = list(range(len(stories)))
    random.Random(seed).shuffle(order)
    n_val = max(1, int(len(stories) * held_out))
    return [stories[i] for i in order[n_val:]], [stories[i] for i in order[:n_val]]


def held_out_openings(paths: list[str]) -> list[str]:
    """The first sentence of each held-out story (the split shipped twins were trained with), in split order."""
    _, held = split_stories(read_stories(paths), SPLIT_SEED)
    return [m.group(1) if (m := FIRST_SENTENCE.match(s.strip())) else s.strip() for s in held]


def command_line(module: str, argv: list[str] | None) -> str:
    """The command that ran `module`'s main, as its log records it (`argv` as main got it; None: the process's)."""
    return f"python -m {module} " + " ".join(shlex.quote(a) for a in (sys.argv[1:] if argv is None else argv))


# A story's trajectory (`orders`, beside its tokens): the decode step that wrote each token, or one of these.
PROMPT = -1  # the opening (and the end-of-text before it): clean in every state of the decode
UNKNOWN = -2  # a stream written without its trajectory (an AR teacher's, or before trajectories were kept)
NEVER = 1 << 30  # no step wrote it (the end-of-text after a cut answer, whatever follows the story): always masked


def save_stream(path: str | Path, stream: list[int], starts: list[int], stats: dict[str, Any],
                orders: list[int] | None = None) -> None:
    """Writes a teacher's stories as the .npz `train.py --kd-data` reads: the token stream, where each story starts,
    how they were made and, where the writer kept it, each token's decode step (`orders`)."""
    extra: dict[str, Any] = {} if orders is None else {"orders": np.array(orders, dtype=np.int64)}
    with open(path, "wb") as f:  # the name as given (np.savez would add .npz to a name without it)
        np.savez(f, tokens=np.array(stream, dtype=np.int64), starts=np.array(starts, dtype=np.int64),
                 stats=json.dumps(stats), **extra)


def load_streams(paths: list[str]) -> tuple[np.ndarray, np.ndarray, list[dict[str, Any]]]:
    """Reads one or more .npz written by `save_stream` as one stream: tokens, story starts shifted to match, and each
    file's stats (so stories written on different machines or runs train together)."""
    tokens, starts, stats, n = [], [], [], 0
    for path in paths:
        with np.load(path) as d:
            tokens.append(d["tokens"])
            starts.append(d["starts"] + n)
            stats.append(json.loads(str(d["stats"])))
        n += len(tokens[-1])
    return np.concatenate(tokens), np.concatenate(starts), stats


def load_orders(paths: list[str]) -> np.ndarray:
    """Each token's decode step over the stream `load_streams` reads from the same files (UNKNOWN for a file written
    without them)."""
    parts = []
    for path in paths:
        with np.load(path) as d:
            parts.append(d["orders"] if "orders" in d.files else np.full(len(d["tokens"]), UNKNOWN, dtype=np.int64))
    return np.concatenate(parts)


def joined_stats(stats: list[dict[str, Any]]) -> dict[str, Any]:
    """One file's stats as they are; several files' as their summed stories, tokens and seconds, with each file's
    stats under "parts" (what a training log records of the streams it read)."""
    if len(stats) == 1:
        return stats[0]
    return {"stories": sum(s.get("stories", 0) for s in stats), "tokens": sum(s.get("tokens", 0) for s in stats),
            "seconds": sum(s.get("seconds", 0) for s in stats), "parts": stats}
