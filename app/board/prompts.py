"""The board's prompt sets: held-out story openings for the twins, questions with checkable answers for chat models,
or a user's file (one prompt a line, an optional expected answer after a tab), and how an answer is checked."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from app.errors import UserError

HERE = Path(__file__).resolve().parent
# the bench's held-out openings (app/bench/twins.py EVAL_PROMPTS) less the one found verbatim in the training stories,
# and eight more written for the board; tests/test_board.py checks that none is in ../shared/corpus
STORIES_FILE = HERE / "stories.txt"
QUESTIONS_FILE = HERE / "questions.tsv"  # each line: a question, a tab, its answer
BUNDLED = {"stories": STORIES_FILE, "questions": QUESTIONS_FILE}
MAX_PROMPTS = 1000  # a board is many races: past this a file is more likely a mistake than a board


@dataclass(frozen=True)
class Prompt:
    """One prompt of a board and, for a question, the answer that counts as right (None: judged by the referee)."""

    text: str
    expected: str | None = None


def read_prompts(path: str | Path) -> list[Prompt]:
    """The prompts of a file, one a line with an optional expected answer after a tab; blank lines skipped."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise UserError(f"Cannot read the prompts file {path}: {e}.") from e
    prompts = []
    for line in lines:
        text, _, expected = line.partition("\t")
        if text.strip():
            prompts.append(Prompt(text.strip(), expected.strip() or None))
    if not prompts:
        raise UserError(f"The prompts file {path} has no prompt (one a line, an expected answer after a tab).")
    if len(prompts) > MAX_PROMPTS:
        raise UserError(f"The prompts file {path} has {len(prompts)} prompts; a board takes at most {MAX_PROMPTS}.")
    return prompts


def prompt_set(name: str) -> list[Prompt]:
    """A bundled set by name (`stories`, `questions`) or the prompts of the file `name`."""
    return read_prompts(BUNDLED.get(name, name))


def _normal(text: str) -> str:
    """Lower case, punctuation turned to spaces, spaces collapsed: how answers are compared."""
    return " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split())


def check(answer: str, expected: str) -> str:
    """"exact" when the answer is the expected one (case and punctuation aside), "found" when it holds it as whole
    words, else "no": the board's match for a question with a checkable answer."""
    got, want = _normal(answer), _normal(expected)
    if not want:
        return "no"
    if got == want:
        return "exact"
    return "found" if re.search(rf"(?<!\w){re.escape(want)}(?!\w)", got) else "no"
