"""Records the bundled example races in recordings/examples/ with `python -m app record`, then captions them.

Each example races the built-in twins (local-diffusion against local-ar: no key, no network) with different
diffusion sampler settings, and gets a one-line caption in its header (header["caption"]), which the page
and the exported HTML show above the race. Record on an otherwise idle machine: the timings are real.
The Mercury-format example streams from the repository's loopback test server (tests/wire_server.py), which
speaks Inception's wire format with synthetic drafts; its caption says so.

    python scripts/make_examples.py                 # all examples, into recordings/examples/
    python scripts/make_examples.py --only 02-random-order-no-blocks --out /tmp/examples
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Iterator

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "assets" / "models"
AR = {"gen_length": 64, "temperature": 0.0}

EXAMPLES: list[dict[str, Any]] = [
    {"name": "01-confidence-blocks",
     "caption": "Confidence order in blocks of 16: the diffusion twin commits its surest tokens first, block by block, "
                "while the AR twin types left to right.",
     "prompt": "A small robot lived in a box under the stairs.",
     "left": {"gen_length": 64, "steps": 32, "block_length": 16, "scoring": "confidence", "filter": 0}},
    {"name": "02-random-order-no-blocks",
     "caption": "Random order, no blocks: positions open anywhere in the answer in a random order, "
                "so the text converges everywhere at once (and the colours say nothing about confidence).",
     "prompt": "Mila built a kite out of paper and string.",
     "left": {"gen_length": 64, "steps": 32, "block_length": 64, "scoring": "random", "filter": 0}},
    {"name": "03-few-steps-parallel",
     "caption": "Parallel decoding by budget: 16 steps for 64 tokens commits 4 tokens per forward pass, "
                "so the diffusion twin finishes in a quarter of the passes, and the text shows what that costs.",
     "prompt": "The old bus stopped at the edge of the town.",
     "left": {"gen_length": 64, "steps": 16, "block_length": 16, "scoring": "confidence", "threshold": 0, "filter": 0,
              "no_repeat": False, "no_repeat_ngram": 0}},
    {"name": "05-learned-filter",
     "caption": "Entropy order in blocks of 16 with the twin's learned commit filter at 0.5: it adds every position it "
                "judges final, so several tokens land in one forward pass, not always the leftmost (the page's default "
                "is a more cautious 0.65: bolder levels cost this twin text quality).",
     "prompt": "Tom found a little red boat by the river.",
     "left": {"gen_length": 128, "filter": 0.5}, "right": {"gen_length": 128, "temperature": 0.0}},
    {"name": "04-mercury-wire-format",
     "caption": "Synthetic: Converge's test server streaming in Mercury's diffusing wire format (whole noisy drafts "
                "that settle block by block), not real Mercury output, beside the diffusion twin's masks.",
     "prompt": "How does diffusion decoding differ from autoregressive decoding?",
     "left_source": "mercury:mercury-2", "wire": True,
     "right_source": "local-diffusion",
     "right": {"gen_length": 64, "steps": 64, "block_length": 64, "threshold": 0, "filter": 0}},
]


def record(example: dict[str, Any], out: Path) -> Path:
    """Runs one race through the CLI into a temporary file, adds the caption, and moves it into place."""
    with tempfile.TemporaryDirectory() as tmp, wire_server(example.get("wire", False)) as env:
        raw = Path(tmp) / "race.jsonl"
        cmd = [sys.executable, "-m", "app", "record", "--left", example.get("left_source", "local-diffusion"),
               "--right", example.get("right_source", "local-ar"), "--prompt", example["prompt"], "--out", str(raw),
               "--left-settings", json.dumps(example.get("left", {})),
               "--right-settings", json.dumps(example.get("right", AR))]
        proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env={**os.environ, **env})
        print(proc.stdout.strip())
        if proc.returncode != 0:
            raise SystemExit(f"{example['name']}: python -m app record failed (exit {proc.returncode}): "
                             f"{proc.stderr.strip()}")
        lines = raw.read_text(encoding="utf-8").splitlines(keepends=True)
        header = json.loads(lines[0])
        header["caption"] = example["caption"]
        header["recorded_on"] = {"machine": platform.machine(), "cpus": os.cpu_count(),
                                 "python": platform.python_version()}
        lines[0] = json.dumps(header, ensure_ascii=False) + "\n"
        target = out / f"{example['name']}.jsonl"
        part = out / f".{target.name}.part"
        part.write_text("".join(lines), encoding="utf-8")
        os.replace(part, target)
    check(target)
    return target


@contextlib.contextmanager
def wire_server(wanted: bool) -> Iterator[dict[str, str]]:
    """The loopback test server's address and key as environment variables for the mercury source, or {}."""
    if not wanted:
        yield {}
        return
    sys.path.insert(0, str(ROOT))
    from tests.wire_server import DEFAULT_KEY, serve

    with serve() as url:
        yield {"INCEPTION_BASE_URL": url, "INCEPTION_API_KEY": DEFAULT_KEY}


def check(path: Path) -> None:
    """Refuses an example that does not read cleanly or where a side did not finish."""
    sys.path.insert(0, str(ROOT))
    from app.trace.reading import read_recording

    rec = read_recording(path)
    problems = list(rec.warnings) + [f"{s} ended {rec.ends.get(s, {}).get('status')!r}" for s in ("left", "right")
                                     if rec.ends.get(s, {}).get("status") != "done"]
    if problems:
        raise SystemExit(f"{path.name} is not a good example: {'; '.join(problems)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "recordings" / "examples"), help="folder for the examples")
    parser.add_argument("--only", action="append", choices=[e["name"] for e in EXAMPLES], help="record only these")
    args = parser.parse_args(argv)
    missing = [f for f in ("diffusion.safetensors", "ar.safetensors") if not (MODELS / f).is_file()]
    if missing:
        print(f"The twins are not trained yet ({', '.join(missing)} missing in assets/models/); "
              "train them first (python -m app.training.train).", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for example in EXAMPLES:
        if args.only and example["name"] not in args.only:
            continue
        print(f"recorded {record(example, out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
