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

from app.cli_help import command_parser
from app.engine.autoregressive import ARSettings
from app.engine.diffusion import DiffusionSettings
from app.engine.options import bounds, declared
from app.errors import SourceError
from app.sources.base import make_source
from app.sources.hf import HFLoad

SETTINGS = {"diffusion": DiffusionSettings, "AR": ARSettings, "hf-*": HFLoad}


def describe(cls: type, name: str) -> str:
    """A flag's help from its setting's declaration: the label, what it accepts, then the help."""
    kind, o = declared(cls)[name]
    accepts = ("true or false" if kind is bool else f"one of {', '.join(map(str, o.choices))}" if o.choices else
               f"e.g. {', '.join(o.presets)}" if kind is str and o.presets else
               bounds(cls, o) if kind in (int, float) else "")
    return f"{o.label}{': ' + accepts if accepts else ''}. {o.help}".strip()


def parser() -> argparse.ArgumentParser:
    """The flags of `generate`: every declared setting (app/engine/options.py) of the samplers and the HF loader.
    They default to unset, so only the flags given are passed and each source keeps its own defaults."""
    p = command_parser("generate", __doc__.splitlines()[0],
                       epilog="Options left out keep the source's own defaults; --json prints the settings that ran.")
    p.add_argument("--source", default="local-diffusion", help="local-diffusion, local-ar, hf-diffusion:ID, hf-ar:ID...")
    p.add_argument("--prompt", required=True)
    owners: dict[str, list[str]] = {}
    for who, cls in SETTINGS.items():
        for name in declared(cls):
            owners.setdefault(name, []).append(who)
    for name, who in owners.items():  # a setting of one sampler only says whose it is
        cls = SETTINGS[who[0]]
        kind, o = declared(cls)[name]
        text = describe(cls, name) if len(who) > 1 else f"{who[0]}: {describe(cls, name)}"
        extra = {"action": "append", "metavar": "POSITION:TEXT"} if kind is tuple else {}  # pins: one flag each
        p.add_argument("--" + (o.cli or name).replace("_", "-"), dest=name, default=None, help=text, **extra)
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the text")
    p.add_argument("--trace", action="store_true", help="with --json, include every frame")
    return p


def run(source: str, prompt: str, settings: dict[str, Any], keep_frames: bool = False) -> dict[str, Any]:
    """Runs one source to its final frame; raises SourceError with the user-facing sentence."""
    src = make_source(source, **settings)
    frames = list(src.stream(prompt, threading.Event()))
    if not frames or not frames[-1].final:
        raise SourceError(f"{source} stopped before its final frame.")
    last = frames[-1]
    nfe = last.nfe or 0
    tokens = (last.usage or {}).get("completion_tokens", len(last.tokens))
    out = {"source": source, "prompt": prompt, "text": last.text or "", "frames": len(frames), "nfe": nfe,
           "seconds": round(last.t, 4), "tokens": tokens,
           "tokens_per_forward": round(tokens / nfe, 3) if nfe else None, "settings": src.settings()}
    if keep_frames:
        out["trace"] = [f.to_json() for f in frames]
    return out


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    given = {k: v for k, v in vars(args).items() if v is not None and k not in ("source", "prompt", "json", "trace")}
    try:
        result = run(args.source, args.prompt, given, keep_frames=args.trace)
    except SourceError as e:
        print(str(e), file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(result, ensure_ascii=False))
    else:
        print(result["text"])
    return 0
