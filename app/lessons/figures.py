"""The figures the lessons quote, measured on a finished race's frames: one place for the page's "This race" strip
and for tests/test_lesson_claims.py, which asserts the lessons' claims with the same functions over several seeds.

A lesson names the figures it quotes (`Lesson.figures`, app/lessons/guided.py); `shown(names, prompt, frames)`
gives each as a label and a line of text, every number in it measured on the race the page holds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

from app.analysis.changes import metrics
from app.errors import counted
from app.measure.drafts import planted_at, scored
from app.trace.frames import SIDES, Frame

Frames = Sequence[Frame]
EOS_MARK = "<eos>"  # how the twins' end-of-text shows in a frame (app/sources/local.py EOS_MARK)


def commits(frames: Frames) -> list[tuple[int, list[int], int]]:
    """(step, positions committed, first masked position before the step) for each step of a diffusion run."""
    out = []
    masked = list(frames[0].masked or []) if frames else []
    for f in frames[1:]:
        out.append((f.step, list(f.committed or []), masked.index(True) if True in masked else len(masked)))
        masked = list(f.masked or []) + masked[len(f.masked or []):]
    return out


def stray(runs: Sequence[Frames]) -> float:
    """How far right of the first masked position a commit lands, on average: 0 is strictly left to right."""
    d = [pos - first for f in runs for _, pos_list, first in commits(f) for pos in pos_list]
    return sum(d) / len(d) if d else 0.0


def order(frames: Frames) -> list[int]:
    """The positions of a diffusion run in the order it committed them."""
    return [pos for _, pos_list, _ in commits(frames) for pos in pos_list]


def per_pass(runs: Sequence[Frames]) -> float:
    """Answer tokens per forward pass, pooled over the runs."""
    return sum(len(f[-1].tokens) for f in runs) / max(1, sum(f[-1].nfe or 0 for f in runs))


def most_in_one_pass(frames: Frames) -> int:
    """The most positions one pass committed."""
    return max((len(c) for _, c, _ in commits(frames)), default=0)


def reopened(frames: Frames) -> int:
    """Committed tokens masked again (remasking), over the whole run."""
    return sum(len(f.remasked or []) for f in frames)


def perplexity(prompt: str, runs: Sequence[Frames]) -> float:
    """The referee twin's perplexity of the answers (pooled over their tokens): lower reads better."""
    from app.engine.model import DEFAULT_MODELS_DIR, load_twin
    from app.measure.quality import nll

    ref, tok = load_twin("referee", DEFAULT_MODELS_DIR)
    p = tok.encode(prompt.rstrip())
    answers = [tok.encode(f[-1].text or "") for f in runs]
    return math.exp(sum(nll(ref, p, a) for a in answers) / max(1, sum(len(a) for a in answers)))


def ending(frames: Frames, words: int = 12) -> str:
    """The answer's last `words` words, quoted: how a story ends, to compare one race's story with another's."""
    return '"' + " ".join((frames[-1].text or "").split()[-words:]) + '"'


def eos_by_pass(frames: Frames, nfe: int = 2) -> int:
    """End-of-text marks on the canvas once `nfe` passes are done."""
    at = next((f for f in frames if (f.nfe or 0) >= nfe), frames[-1])
    return at.tokens.count(EOS_MARK)


@dataclass(frozen=True)
class Finished:
    """A finished race as the figures read it: its prompt and each side's frames."""

    prompt: str
    frames: Mapping[str, Frames]
    draft: tuple[str, str] | None = None  # a revising lesson's (story, planted draft) texts, for the draft's figures

    def sides(self) -> list[str]:
        """The sides that made frames, left first."""
        return [s for s in SIDES if self.frames.get(s)]


def _each(race: Finished, fmt: Callable[[Frames], str]) -> str:
    return ", ".join(f"{side} {fmt(race.frames[side])}" for side in race.sides())


def _perplexity(race: Finished) -> str:
    ppl = {s: perplexity(race.prompt, [race.frames[s]]) for s in race.sides()}
    line = ", ".join(f"{s} {v:.1f}" for s, v in ppl.items())
    if len(ppl) == 2 and min(ppl.values()) > 0:
        line += f": the higher is {max(ppl.values()) / min(ppl.values()):.2f} times the lower"
    return line


def length(frames: Frames) -> int:
    """The answer's length as the metrics count it for its rates (tokenizer pieces for the twins)."""
    m = metrics(list(frames))
    return int(m["answer_tokens"] if m["answer_tokens"] is not None else m["tokens"])


def _time_to_final(race: Finished) -> str:
    parts = []
    for side in race.sides():
        m = metrics(list(race.frames[side]))
        t = m["t_final"] if m["t_final"] is not None else race.frames[side][-1].t
        parts.append(f"{side} {t:.2f} s for {counted(length(race.frames[side]), 'token')}")
    counts = [str(length(race.frames[s])) for s in race.sides()]
    note = f" (not the same length: {' against '.join(counts)} tokens)" if len(set(counts)) > 1 else ""
    return ", ".join(parts) + note


def draft_tokens(story: str, planted: str) -> tuple[list[str], list[str], list[int]]:
    """A planted draft as the twins' tokenizer spells it: the story's tokens, the planted draft's (display strings,
    as a frame's tokens are) and where they differ, the planted mistakes (app/measure/drafts.py `planted_at`)."""
    from app.engine.model import DEFAULT_MODELS_DIR, load_twin

    _, tok = load_twin("ar", DEFAULT_MODELS_DIR)
    clean, wrong = tok.token_strings(tok.encode(story)), tok.token_strings(tok.encode(planted))
    return clean, wrong, planted_at(clean, wrong)


def revised(frames: Frames, draft: tuple[str, str]) -> dict[str, float]:
    """What a side that started from the draft did to it, on its final frame: the share of the draft's tokens kept
    where they stood, and the shares of the planted mistakes changed (repaired) and put back (restored)."""
    clean, wrong, where = draft_tokens(*draft)
    return scored(list(frames[-1].tokens), wrong, clean, where)


def _share_of(race: Finished, key: str, part: int) -> str:
    """Each side's `revised` share `key` as a count "N of M", M the draft's tokens (`part` 1) or its planted mistakes
    (`part` 2)."""
    draft = race.draft
    if draft is None:
        raise ValueError("the race started from no draft")
    n = len(draft_tokens(*draft)[part])
    return _each(race, lambda f: f"{round(revised(f, draft)[key] * n)} of {n}")


def _kept(race: Finished) -> str:
    return _share_of(race, "kept", 1)


def _fixed(race: Finished) -> str:
    return _share_of(race, "repaired", 2)


@dataclass(frozen=True)
class Figure:
    """A named measurement a lesson quotes: its label on the page and its text for one finished race."""

    label: str
    text: Callable[[Finished], str]


FIGURES: dict[str, Figure] = {
    "stray": Figure("Mean distance of a commit right of the first masked position",
                    lambda r: _each(r, lambda f: f"{stray([f]):.1f} positions")),
    "per_pass": Figure("Tokens per forward pass", lambda r: _each(r, lambda f: f"{per_pass([f]):.1f}")),
    "most_in_one_pass": Figure("Most tokens committed in one pass",
                               lambda r: _each(r, lambda f: str(most_in_one_pass(f)))),
    "perplexity": Figure("Referee's perplexity (lower reads better)", _perplexity),
    "reopened": Figure("Tokens masked again (remasked)", lambda r: _each(r, lambda f: str(reopened(f)))),
    "passes": Figure("Forward passes", lambda r: _each(r, lambda f: str(f[-1].nfe or 0))),
    "time_to_final": Figure("Time to final", _time_to_final),
    "eos_by_pass_2": Figure("End-of-text marks after two passes", lambda r: _each(r, lambda f: str(eos_by_pass(f)))),
    "story_tokens": Figure("Story length before end-of-text",
                           lambda r: _each(r, lambda f: counted(length(f), "token"))),
    "ending": Figure("How it ends", lambda r: _each(r, ending)),
    "draft_kept": Figure("Draft tokens kept", _kept),
    "mistakes_fixed": Figure("Planted mistakes changed", _fixed),
}


def shown(names: Sequence[str], race: Finished) -> list[tuple[str, str]]:
    """(label, text) of each named figure for a finished race; a figure its race cannot give is left out."""
    out = []
    for name in names:
        try:
            out.append((FIGURES[name].label, FIGURES[name].text(race)))
        except (ValueError, IndexError, ZeroDivisionError):
            continue
    return out
