"""`python -m app generate --source SOURCE --prompt TEXT [options] [--json]`: one source, one answer, no page.

Prints the final text, or with --json one object: text, frames (count), nfe, seconds (the source's own
clock at the final frame), tokens, tokens_per_forward, settings; --trace adds every frame.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
from typing import Any

from app.cli.drafts import add_flags, revision_of
from app.cli.parsers import command_parser
from app.engine.autoregressive import TWIN_AR, ARSettings
from app.engine.diffusion import TWIN_DIFFUSION, DiffusionSettings
from app.engine.draft import Revision
from app.engine.options import Option, bounds, declared, number
from app.engine.uniform import UniformSettings
from app.errors import UserError
from app.hf.diffusion_gemma import GemmaSettings
from app.hf.llada2 import PipelineSettings
from app.sources.base import REGISTRY, load_plugins, make_source
from app.sources.hf import HF_AR, HF_DIFFUSION, HFLoad
from app.sources.mercury import MercurySettings
from app.sources.openai_chat import ChatSettings
from app.sources.replay import ReplaySettings

SETTINGS = {"diffusion": DiffusionSettings, "uniform": UniformSettings, "AR": ARSettings, "hf-*": HFLoad,
            "hf-diffusion (LLaDA2.x)": PipelineSettings, "hf-diffusion (DiffusionGemma)": GemmaSettings,
            "mercury": MercurySettings, "openai": ChatSettings, "replay": ReplaySettings}
# what each source starts from when a flag is left out (app/sources/*.py), for --help
DEFAULTS = (("local-diffusion", TWIN_DIFFUSION), ("local-uniform", UniformSettings()), ("local-ar", TWIN_AR),
            ("hf-diffusion", HF_DIFFUSION),
            ("hf-ar", HF_AR), ("hf-*", HFLoad()), ("hf-diffusion (LLaDA2.x)", PipelineSettings()),
            ("hf-diffusion (DiffusionGemma)", GemmaSettings()),
            ("mercury", MercurySettings()), ("openai", ChatSettings()), ("replay", ReplaySettings()))


def describe(cls: type, name: str) -> str:
    """A flag's help from its setting's declaration: the label, what it accepts, then the help."""
    kind, o = declared(cls)[name]
    accepts = ("true or false" if kind is bool else f"one of {', '.join(map(str, o.choices))}" if o.choices else
               f"e.g. {', '.join(o.presets)}" if kind is str and o.presets else
               bounds(cls, o) if kind in (int, float) else "")
    if o.clamp:
        accepts += ", a value beyond moved to the nearest"
    if o.follows:
        accepts += f"; left out, the {declared(cls)[o.follows][1].name.lower()}"
    return f"{o.label}{': ' + accepts if accepts else ''}. {o.help}".strip()


def flag_help(name: str, owners: list[str]) -> str:
    """A flag's help: its declaration's description, or where the settings of that name differ between sources
    (the temperature's range, say), each description after the sources it is theirs for."""
    texts: dict[str, list[str]] = {}
    for who in owners:
        texts.setdefault(describe(SETTINGS[who], name), []).append(who)
    if len(owners) == 1:
        return f"{owners[0]}: {describe(SETTINGS[owners[0]], name)}"
    if len(texts) == 1:
        return next(iter(texts))
    return " ".join(f"{', '.join(who)}: {text}" for text, who in texts.items())


def shown(value: Any, o: Option) -> str:
    """A default as --help writes it: 0.9, true, off (a feature left off), none (no pins)."""
    if value is None:
        return "off" if o.off else "the model's own" if o.own else "none"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, tuple):
        return ", ".join(value) or "none"
    if value == "":
        return "empty"
    return number(value) if isinstance(value, float) else str(value)


def default_of(name: str) -> str:
    """A setting's default for --help: "(default: 0)", or where sources start from different values, each value
    with the sources that use it: "(default: 128 for local-diffusion, local-ar; 64 for hf-diffusion, hf-ar)"."""
    sources: dict[str, list[str]] = {}
    for source, settings in DEFAULTS:
        if name in declared(type(settings)):
            sources.setdefault(shown(getattr(settings, name), declared(type(settings))[name][1]), []).append(source)
    if len(sources) == 1:
        return f"(default: {next(iter(sources))})"
    return "(default: " + "; ".join(f"{value} for {', '.join(who)}" for value, who in sources.items()) + ")"


def taken_by(name: str) -> str:
    """Which sources honour a setting, from their declarations (app/sources/base.py `Backend`), for --help:
    "(taken by local-diffusion, hf-diffusion (masked sampler))"; any other source refuses the flag."""
    load_plugins()
    who = [kind.prefix + (f" ({b.label})" if len(kind.backends) > 1 else "")
           for kind in REGISTRY.values() for b in kind.backends if name in b.names]
    return f"(taken by {', '.join(who)})"


def parser() -> argparse.ArgumentParser:
    """The flags of `generate`: every declared setting (app/engine/options.py) of every source kind.
    They default to unset, so only the flags given are passed and each source keeps its own defaults."""
    p = command_parser("generate", __doc__.splitlines()[0],
                       epilog="Options left out keep the source's own defaults (above, per source where they differ); "
                              "left-out steps follow --length, and --factor replaces the default threshold. A source "
                              "refuses a flag it does not take. --json prints the settings that ran.")
    p.add_argument("--source", default="local-diffusion",
                   help="local-diffusion, local-uniform, local-ar, hf-diffusion:ID, hf-ar:ID, mercury, openai:MODEL, "
                        "replay:NAME...")
    p.add_argument("--prompt", required=True,
                   help="the text the model answers: the built-in twins continue it as a story, "
                        "chat models reply to it")
    owners: dict[str, list[str]] = {}
    for who, cls in SETTINGS.items():
        for name in declared(cls):
            owners.setdefault(name, []).append(who)
    for name, whose in owners.items():  # a setting of one source only says whose it is
        kind, o = declared(SETTINGS[whose[0]])[name]
        text = f"{flag_help(name, whose)} {default_of(name)} {taken_by(name)}"
        pins = {"action": "append", "metavar": "POSITION:TEXT"}  # pins: one flag each
        extra: dict[str, Any] = pins if kind is tuple else {}
        p.add_argument("--" + (o.cli or name).replace("_", "-"), dest=name, default=None, help=text, **extra)
    add_flags(p)
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the text")
    p.add_argument("--trace", action="store_true", help="with --json, include every frame")
    return p


def run(source: str, prompt: str, settings: dict[str, Any], keep_frames: bool = False,
        draft: Revision | None = None) -> dict[str, Any]:
    """Runs one source to its final frame, from `draft` when given (its plan and any note in the result); raises
    UserError with the user-facing sentence."""
    src = make_source(source, **settings)
    if draft is not None:
        src.revise(draft, prompt)
    frames = list(src.stream(prompt, threading.Event()))
    if not frames or not frames[-1].final:
        raise UserError(f"{source} stopped before its final frame.")
    last = frames[-1]
    nfe = last.nfe or 0
    tokens = (last.usage or {}).get("completion_tokens", len(last.tokens))
    out = {"source": source, "prompt": prompt, "text": last.text or "", "frames": len(frames), "nfe": nfe,
           "seconds": round(last.t, 4), "tokens": tokens,
           "tokens_per_forward": round(tokens / nfe, 3) if nfe else None, "settings": src.settings()}
    if draft is not None:
        out["draft"] = {**draft.to_json(), "plan": src.draft_json()}
        out["notice"] = src.notice
    if keep_frames:
        out["trace"] = [f.to_json() for f in frames]
    return out


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    flags = ("source", "prompt", "json", "trace", "start_from", "renoise", "renoise_where", "renoise_seed")
    given = {k: v for k, v in vars(args).items() if v is not None and k not in flags}
    from app.hf.download import watch

    try:
        draft = revision_of(args)
        with watch(lambda line: print(line, file=sys.stderr, flush=True)):  # a model's first download, as it goes
            result = run(args.source, args.prompt, given, keep_frames=args.trace, draft=draft)
    except UserError as e:
        print(str(e), file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(result, ensure_ascii=False))
    else:
        if result.get("notice"):
            print(result["notice"], file=sys.stderr)
        print(result["text"])
    return 0
