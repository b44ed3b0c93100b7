"""The revise section of `python -m app bench` (`--only revise`, issue 53): each twin starting from a draft with planted
mistakes, against writing from scratch and against the AR twin, in the same run.

The drafts are text no model wrote: the first HELD_OUT held-out training stories (app/training/stories.py, the split
the shipped twins were trained with, the one the twins bench's held-out openings read) long enough, each cut into its
first sentence (the prompt) and its next DRAFT_TOKENS tokens as the twins' tokenizer spells them (the clean draft).
For each share of SHARES and each seed of SEEDS, that share of the draft's words (tokens that are one whole word after
a space) is replaced by other words drawn from the drafts (seeded, app/measure/drafts.py `plant`): the planted
mistakes, at token level, so the planted draft keeps the clean one's positions. Each reviser starts from the planted
draft with the same share of its tokens re-noised where it is least sure (`unsure`: app/engine/draft.py `surprisal`,
one pass, counted): the masked twin at the page's defaults, the uniform twin at its page defaults (blocks of 16), and
the AR twin, which keeps the draft up to its first re-noised position (its doubt read left to right, one pass a draft
token, counted) and writes the rest again. Beside them, in the same run, each twin writing from scratch on the same
openings.

Per row: passes to finish (mean, every call of the network), the share of the planted draft's tokens kept where they
stood, planted mistakes repaired (changed away from the planted word) and restored (back to the story's own word),
and the referee's perplexity of the answers (app/measure/quality.py `quality`); pooled over the drafts and seeds, and
the worst seed (the fewest mistakes repaired) with its figures. The AR twin's rewrite is not aligned with the draft
after its prefix: every planted mistake past it counts as repaired when its token there differs, restored only when it
writes the story's own word at the same position.
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from app.bench.twins import SEEDS
from app.engine import autoregressive, diffusion, uniform
from app.engine.autoregressive import TWIN_AR
from app.engine.diffusion import TWIN_DIFFUSION
from app.engine.draft import Plan, Revision, causal_surprisal, choose, surprisal
from app.engine.model import DEFAULT_MODELS_DIR, load_twin
from app.engine.uniform import UniformSettings
from app.measure.drafts import WORD, continuation, plant, scored
from app.measure.quality import CORPUS, TRAINING_FILES, quality

DRAFT_TOKENS = 48
SHARES = (0.1, 0.3, 0.6)
HELD_OUT = 24  # held-out stories, one draft each
MASKED = replace(TWIN_DIFFUSION, gen_length=DRAFT_TOKENS, steps=DRAFT_TOKENS)
UNIFORM = UniformSettings(gen_length=DRAFT_TOKENS, steps=DRAFT_TOKENS, block_length=16)
AR = replace(TWIN_AR, gen_length=DRAFT_TOKENS)


def revised(kind: str, model: Any, prompt: list[int], planted: list[int], share: float,
            seed: int) -> tuple[list[int], int]:
    """One reviser's final answer (cut at end-of-text) and its passes, starting from the planted draft with `share`
    of it re-noised where it is least sure."""
    revision = Revision("planted draft", share=share, where="unsure", seed=seed)
    if kind == "ar":
        renoised = choose(len(planted), revision, causal_surprisal(model, prompt, planted))
        keep = min(renoised) if renoised else len(planted)
        rest = replace(AR, gen_length=DRAFT_TOKENS - keep) if keep < DRAFT_TOKENS else None
        last = list(autoregressive.generate(model, prompt + planted[:keep], rest))[-1] if rest else None
        return planted[:keep] + (list(last.ids) if last else []), len(planted) + (last.nfe if last else 0)
    plan = Plan(tuple(planted), choose(len(planted), revision, surprisal(model, prompt, planted)), nfe=1)
    if kind == "masked":
        st = list(diffusion.generate(model, prompt, MASKED, draft=plan))[-1]
        n = diffusion.answer_length(st.ids, st.masked, model.eos_id)
        return [int(i) for i in st.ids[:n]], st.nfe
    ust = list(uniform.generate(model, prompt, replace(UNIFORM, seed=seed), draft=plan))[-1]
    return [int(i) for i in uniform.answer(ust, model.eos_id)], ust.nfe


def scratch(kind: str, model: Any, prompt: list[int]) -> tuple[list[int], int]:
    """A twin writing from nothing on the same opening: its answer and passes."""
    if kind == "masked":
        st = list(diffusion.generate(model, prompt, MASKED))[-1]
        n = diffusion.answer_length(st.ids, st.masked, model.eos_id)
        return [int(i) for i in st.ids[:n]], st.nfe
    if kind == "uniform":
        ust = list(uniform.generate(model, prompt, UNIFORM))[-1]
        return [int(i) for i in uniform.answer(ust, model.eos_id)], ust.nfe
    last = list(autoregressive.generate(model, prompt, AR))[-1]
    return list(last.ids), last.nfe


def summary(referee: Any, tok: Any, runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Pooled figures of runs: mean passes, kept, repaired, restored, and the referee's perplexity."""
    q, _ = quality(referee, tok, [(r["prompt"], r["answer"]) for r in runs])
    mean = lambda key: round(float(np.mean([r[key] for r in runs])), 3)  # noqa: E731
    out = {"answers": len(runs), "passes": mean("passes"), "referee_ppl": q["referee_ppl"]}
    if "kept" in runs[0]:
        out.update(kept=mean("kept"), repaired=mean("repaired"), restored=mean("restored"))
    return out


def held_out_drafts(tok: Any, count: int = HELD_OUT, corpus: Path = CORPUS) -> list[tuple[str, list[int]]]:
    """(opening, clean draft ids) of the first `count` held-out stories with DRAFT_TOKENS tokens after their opening:
    text no model wrote; none when the training stories are not beside the checkout."""
    from app.training.stories import SPLIT_SEED, held_out_openings, read_stories, split_stories

    files = [str(corpus / f) for f in TRAINING_FILES]
    if not all(Path(f).is_file() for f in files):
        return []
    _, held = split_stories(read_stories(files), SPLIT_SEED)
    out = []
    for story, opening in zip(held, held_out_openings(files)):
        draft = continuation(tok, story, opening, DRAFT_TOKENS)
        if draft is not None:
            out.append((opening, draft))
    return out[:count]


def bench(models_dir: str | None = None, drafts: int = HELD_OUT,
          seeds: tuple[int, ...] = SEEDS, shares: tuple[float, ...] = SHARES) -> dict[str, Any]:
    """Each twin revising planted held-out drafts, per share: pooled and worst seed; each twin from scratch beside
    them."""
    folder = models_dir or DEFAULT_MODELS_DIR
    models = {kind: load_twin(name, folder)[0] for kind, name in (("masked", "diffusion"), ("uniform", "uniform"),
                                                                  ("ar", "ar"))}
    tok = load_twin("ar", folder)[1]
    referee, _ = load_twin("referee", folder)
    stories = held_out_drafts(tok, drafts)
    if not stories:
        return {"skipped": "the training stories (../shared/corpus) are not beside the checkout"}
    opened = [tok.encode(opening) for opening, _ in stories]
    clean = [draft for _, draft in stories]
    pool = sorted({t for d in clean for t, piece in zip(d, tok.token_strings(d)) if WORD.match(piece)})
    report: dict[str, Any] = {"drafts": len(opened), "draft_tokens": DRAFT_TOKENS, "seeds": list(seeds),
                              "shares": list(shares), "scratch": {}, "revise": {}}
    for kind, model in models.items():
        t = time.time()
        runs = [dict(zip(("answer", "passes"), scratch(kind, model, p)), prompt=p) for p in opened]
        report["scratch"][kind] = {**summary(referee, tok, runs), "seconds": round(time.time() - t, 1)}
    for share in shares:
        for kind, model in models.items():
            t = time.time()
            by_seed: dict[int, list[dict[str, Any]]] = {}
            for seed in seeds:
                by_seed[seed] = []
                for p, draft in zip(opened, clean):
                    planted, where = plant(tok, draft, share, pool, seed)
                    answer, passes = revised(kind, model, p, planted, share, seed)
                    by_seed[seed].append({"prompt": p, "answer": answer, "passes": passes,
                                          **scored(answer, planted, draft, where)})
            per_seed = {seed: summary(referee, tok, runs) for seed, runs in by_seed.items()}
            worst = min(per_seed, key=lambda k: per_seed[k]["repaired"])
            report["revise"][f"{kind}_{round(share * 100)}%"] = {
                "pooled": summary(referee, tok, [r for runs in by_seed.values() for r in runs]),
                "worst_seed": worst, "worst": per_seed[worst], "seconds": round(time.time() - t, 1)}
    return report
