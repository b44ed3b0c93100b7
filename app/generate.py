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
from app.errors import SourceError
from app.sources.base import make_source

# flag -> setting name; only the flags given are passed, so each source keeps its own defaults
OPTIONS = {
    "length": ("gen_length", "answer length in tokens (AR: the most it may write)"),
    "steps": ("steps", "diffusion steps, total over blocks"),
    "block_length": ("block_length", "diffusion block length (divides the length)"),
    "scoring": ("scoring", "confidence, margin, entropy or random"),
    "temperature": ("temperature", "0 = greedy"),
    "threshold": ("threshold", "Fast-dLLM confidence threshold (0 = off)"),
    "factor": ("factor", "Fast-dLLM factor rule (0 = off)"),
    "remask": ("remask", "ReMDM-style remasking probability"),
    "eos_discount": ("eos_discount", "score factor for end-of-text candidates"),
    "stop_at_eos": ("stop_at_eos", "true/false: stop once the answer is complete"),
    "prefix_cache": ("prefix_cache", "true/false: reuse the prefix's keys/values within a block"),
    "lookahead": ("lookahead", "masked tokens right of the block the model sees (0 = all)"),
    "top_k": ("top_k", "AR: sample among the k most likely tokens (0 = off)"),
    "top_p": ("top_p", "AR: nucleus sampling mass"),
    "seed": ("seed", "random seed"),
    "shift": ("shift", "hf-diffusion: auto, shifted (Dream) or aligned"),
    "chat": ("chat", "hf-*: true/false, use the model's chat template"),
    "trust_remote_code": ("trust_remote_code", "hf-*: true/false, run the model's own code"),
    "device": ("device", "hf-*: auto (CUDA, then MPS, then CPU), cpu, cuda, cuda:N or mps"),
    "dtype": ("dtype", "hf-*: auto (16-bit on a GPU, float32 on the CPU), float32, bfloat16 or float16"),
}


def parser() -> argparse.ArgumentParser:
    p = command_parser("generate", __doc__.splitlines()[0],
                       epilog="Options left out keep the source's own defaults; --json prints the settings that ran.")
    p.add_argument("--source", default="local-diffusion", help="local-diffusion, local-ar, hf-diffusion:ID, hf-ar:ID...")
    p.add_argument("--prompt", required=True)
    for flag, (_, text) in OPTIONS.items():
        p.add_argument("--" + flag.replace("_", "-"), dest=flag, default=None, help=text)
    p.add_argument("--pin", action="append", default=[], metavar="POSITION:TEXT",
                   help="diffusion: fix TEXT at answer position POSITION before the run (repeatable)")
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
    settings = {OPTIONS[k][0]: v for k, v in vars(args).items() if k in OPTIONS and v is not None}
    if args.pin:
        settings["pins"] = args.pin
    try:
        result = run(args.source, args.prompt, settings, keep_frames=args.trace)
    except SourceError as e:
        print(str(e), file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(result, ensure_ascii=False))
    else:
        print(result["text"])
    return 0
