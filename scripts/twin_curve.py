"""The diffusion twin's curve of tokens per pass against quality, alone (the twins bench also runs it):

    python -m scripts.twin_curve [MODELS_DIR] > curve.json

The page's defaults with one lever moved at a time (app.bench.twins.CURVE), on the bench's 24 held-out openings at
128 tokens: answer tokens per network call, share of commits not the leftmost masked position, referee perplexity,
distinct-2, stutter, recital and empty answers, for the twins in MODELS_DIR (default: the shipped ones).
"""

from __future__ import annotations

import json
import sys

from app.bench.twins import bench

if __name__ == "__main__":
    print(json.dumps(bench(sys.argv[1] if len(sys.argv) > 1 else None, curve_only=True), indent=1))
