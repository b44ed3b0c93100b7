"""What the page says about the built-in twins: size, data, training tokens and compute, read from their logs.

The issue that created the twins asks that each twin's compute be stated on the page, and that the page say
so when the diffusion twin starts from the AR twin. Both facts are read from `<twin>.json` (written by
app/training/train.py), so the page cannot drift from the weights it runs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from app.engine.model import DEFAULT_MODELS_DIR

CARD = "assets/models/MODEL_CARD.md"


def chain(training: dict[str, Any] | None) -> list[dict[str, Any]]:
    """A twin's training runs, latest first: each run's log keeps the one it continued under `previous_run`."""
    runs = []
    while training:
        runs.append(training)
        training = training.get("previous_run")
    return runs


def _held_out(h: dict[str, Any]) -> str:
    if "ce" in h:
        return f"next-token cross-entropy {h['ce']:.2f} nats/token"
    return f"negative-ELBO estimate {h['nelbo_estimate']:.2f} nats/token (an upper bound, not directly comparable)"


def _diffusion_story(dm: list[dict[str, Any]], taught: list[dict[str, Any]], fork: bool, forked: int,
                     shared: int) -> tuple[str, list[dict[str, Any]]]:
    """How the diffusion twin was trained, in one clause per stage, and the teacher's story sets it learnt from
    (each once, however many runs read it)."""
    start = (f"starts from the AR twin's own checkpoint after {forked:,} tokens (those tokens were spent as an "
             f"AR model), then trains on the next {shared - forked:,} with the masked-diffusion loss"
             if fork else f"trained from random weights with the masked-diffusion loss, {shared:,} tokens in "
                          f"{len(dm) - len(taught)} run{'s' * (len(dm) - len(taught) > 1)}")
    written: list[dict[str, Any]] = []
    for run in reversed(dm):  # oldest first: each run that learnt from written stories, and each mean, in turn
        if run.get("averaged"):
            share = run["averaged"]["weight"]
            start += (f"; then its weights became {share:.0%} its own and {1 - share:.0%} those of the twin it was "
                      "before its last rounds of self-distillation (a weighted mean of the two, WiSE-FT: surer of "
                      "several tokens together than the earlier twin, nearer the stories than the later)")
        elif run in taught:
            start += _taught(run, written)
    return start, written


def _taught(run: dict[str, Any], written: list[dict[str, Any]]) -> str:
    """The clause for one run on written stories (its own, or the AR twin's); adds a story set not seen before to
    `written`."""
    kd = run["data"]["distilled"]
    forcing = " with certainty forcing (dParallel)" if "certainty forcing" in str(run.get("objective")) else ""
    if "state of the decode" in str(run.get("objective")):
        forcing += ", many of them laid out as the states their decodes passed through"
    if kd in written:
        return f"; then {run['tokens_this_run']:,} more tokens on the same stories{forcing}"
    written.append(kd)
    if not own_stories(kd):
        return (f"; then {run['tokens_this_run']:,} more tokens on {kd['tokens']:,} tokens of stories the AR twin "
                f"wrote{forcing} (sequence-level distillation: the AR twin is its teacher; writing them took "
                f"{written_seconds(kd) / 60:.0f} minutes on {kd.get('threads', 1)} CPU thread(s))")
    picked = next((part for part in kd.get("parts", [kd]) if "keep" in part), None)
    sampled = max(x.get("temperature") or 0 for x in story_sets(kd))
    how = (f"sampled them at temperature {sampled:g} with the page's other defaults of the time" if sampled
           else "wrote them at the page's defaults of the time")
    pick = (f", and kept the {picked['keep']:.0%} of {picked['of']:,} that the AR twin read most fluently"
            if picked else "")
    return (f"; then {run['tokens_this_run']:,} more tokens on {kd['tokens']:,} tokens of its own stories{forcing} "
            f"(self-distillation: it {how}, which took {written_seconds(kd) / 60:.0f} minutes on CPU cores{pick})")


def story_sets(kd: dict[str, Any]) -> list[dict[str, Any]]:
    """The writers' stats behind a training run's story stream: each part of a joined stream, and for a part that
    app.training.pick_stories picked, the sets it picked from."""
    return [x for part in kd.get("parts", [kd]) for x in part.get("from", [part])]


def own_stories(kd: dict[str, Any]) -> bool:
    """Whether a training run's story stream (or every part of it) was written by the diffusion twin itself."""
    return all("diffusion twin itself" in str(x.get("teacher")) for x in story_sets(kd))


def written_seconds(kd: dict[str, Any]) -> float:
    """How long writing a training run's stories took (all of them, kept or not)."""
    return sum(x.get("seconds") or 0 for x in story_sets(kd))


def uniform_line(folder: Path) -> list[str]:
    """The uniform-state twin's bullet, from its log (its tokens, minutes and held-out loss), or none without it."""
    try:
        runs = chain(json.loads((folder / "uniform.json").read_text(encoding="utf-8"))["training"])
        held = runs[0]["held_out"]["noised_ce_mean"]
        runs = [r for r in runs if r.get("twin") == "uniform"]  # the runs before are the diffusion twin's
    except (OSError, ValueError, KeyError, TypeError):
        return []
    tokens = sum(r.get("tokens_this_run") or 0 for r in runs)
    minutes = sum(r.get("seconds") or 0 for r in runs) / 60
    return [f"- **Uniform-state twin** (`local-uniform`): a third of the same size, from the diffusion twin's "
            f"weights, then {tokens:,} tokens with the uniform-state loss (answer positions replaced by random "
            f"tokens, never masks, as DiffusionGemma is trained), {minutes:.0f} minutes of training (wall clock). "
            f"Held-out: cross-entropy at noised positions {held:.2f} nats/token, averaged over five noise levels."]


def twins_note(models_dir: str | Path | None = None) -> tuple[str, str]:
    """(headline, markdown details) about the twins, or a sentence naming the fix when their logs are missing."""
    folder = Path(models_dir) if models_dir else DEFAULT_MODELS_DIR
    try:
        logs = {t: json.loads((folder / f"{t}.json").read_text(encoding="utf-8"))["training"]
                for t in ("ar", "diffusion")}
        ar, dm = chain(logs["ar"]), chain(logs["diffusion"])
        tokens = {t: c[0]["tokens_seen_total"] for t, c in (("ar", ar), ("diffusion", dm))}
        params = ar[0]["params"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        return ("Built-in twins: training logs not found",
                f"The twins' training logs could not be read from `{folder}` ({type(e).__name__}); "
                f"retrain them with `python -m app.training.train` as in {CARD}.")
    minutes = {t: sum(r.get("seconds") or 0 for r in c) / 60 for t, c in (("ar", ar), ("diffusion", dm))}
    fork = next((r for r in dm if str(r.get("init", "")).startswith("initialised from the AR twin's")), None)
    forked = fork["tokens_seen_total"] - fork["tokens_this_run"] if fork else 0
    augment = max((r.get("augment_copies") or 0 for r in (*ar, *dm)), default=0)
    # distillation runs continue the twin on stories its AR twin wrote: their tokens come on top of the shared budget
    taught = [r for r in dm if (r.get("data") or {}).get("distilled")]
    # runs on the stories themselves
    shared = forked + sum(r.get("tokens_this_run") or 0 for r in dm if r not in taught)
    tokens["diffusion"] = shared + sum(r["tokens_this_run"] for r in taught)
    tokens["ar"] = sum(r.get("tokens_this_run") or 0 for r in ar)
    same = tokens["ar"] == shared
    headline = (f"Built-in twins: {params / 1e6:.1f}M parameters each, "
                + (f"{tokens['ar']:,} training tokens each" if same else "different training budgets")
                + ("; the diffusion twin starts from the AR twin's checkpoint" if fork else "")
                + "".join(f"; then the diffusion twin learns from {w}" for w in dict.fromkeys(
                    "its own stories (self-distillation)" if own_stories(r["data"]["distilled"]) else
                    "stories the AR twin wrote (distillation)" for r in reversed(taught))))
    start, written = _diffusion_story(dm, taught, bool(fork), forked, shared)
    by_ar, by_itself = [kd for kd in written if not own_stories(kd)], [kd for kd in written if own_stories(kd)]
    teacher, itself = (sum(written_seconds(kd) for kd in sets) / 60 for sets in (by_ar, by_itself))
    hardware = sorted({r["hardware"] for r in (*ar, *dm) if r.get("hardware")})
    details = "\n".join([
        f"Two {params:,}-parameter transformers with the same architecture, tokenizer and training stories "
        f"(TinyStories); the AR twin has seen {tokens['ar']:,} training tokens and the diffusion twin "
        f"{tokens['diffusion']:,}. They write simple children's stories and know nothing else.",
        "",
        f"- **AR twin** (`local-ar`): next-token loss, {minutes['ar']:.0f} minutes of training (wall clock)"
        + (f", kept at its best held-out loss (step {ar[0]['kept_best']['step']:,}: early stopping, since it "
           "learns the stories by heart after that)" if ar[0].get("kept_best") else "")
        + f". Held-out: {_held_out(ar[0]['held_out'])}.",
        f"- **Diffusion twin** (`local-diffusion`): {start}; {minutes['diffusion']:.0f} minutes of training "
        f"(wall clock{', including the AR part' if fork else ''}"
        f"{f', plus {teacher:.0f} minutes of the AR twin writing its stories' if by_ar else ''}"
        f"{f', plus {itself:.0f} minutes of it writing its own' if by_itself else ''}). "
        f"Held-out: {_held_out(dm[0]['held_out'])}.",
        *uniform_line(folder),
        *([f"- Data: the training stories and {augment} copies of them with names, animals, colours, objects and "
           "places swapped consistently within each story (app/training/augment.py): more ways to tell the same "
           "stories, no new ones."] if augment else []),
        f"- Hardware: {'; '.join(hardware) or 'not recorded'}.",
        "",
        f"Losses, samples, limitations and the exact commands: `{CARD}`.",
    ])
    return headline, details
