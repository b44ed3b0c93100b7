"""Both twins before and after the guard against repeated runs they share, alone (the twins bench also runs it), or
under each of several guards given to both alike:

    python -m scripts.twin_guard [MODELS_DIR] > guard.json
    python -m scripts.twin_guard [MODELS_DIR] --compare [N:on|off ...] > guards.json

On the bench's 24 held-out openings and the first screen's prompt, three seeds, 128 tokens (app.bench.twins `guard`):
stutter, answers that repeat a sentence, empty answers, referee perplexity pooled and by seed, with the worst seed.
`--compare` takes (run length, stutter guard) pairs, 4:off for no repeated run of 4 tokens and the stutter guard off;
alone it compares app.bench.twins GUARD_CONFIGS.
"""

from __future__ import annotations

import argparse
import json

from app.bench.twins import GUARD_CONFIGS, bench


def guard_config(text: str) -> tuple[int, bool]:
    """One N:on|off pair: no repeated run of N tokens, the stutter guard on or off."""
    n, _, neighbour = text.partition(":")
    if not n.isdigit() or neighbour not in ("on", "off"):
        raise argparse.ArgumentTypeError(f"give RUN:on or RUN:off (4:on), not {text!r}")
    return int(n), neighbour == "on"


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("models_dir", nargs="?", default=None)
    parser.add_argument("--compare", nargs="*", type=guard_config, default=None,
                        help="guards to give both twins alike, RUN:on|off each (default: GUARD_CONFIGS)")
    args = parser.parse_args()
    guards = () if args.compare is None else tuple(args.compare) or GUARD_CONFIGS
    print(json.dumps(bench(args.models_dir, guard_only=True, guards=guards), indent=1))
