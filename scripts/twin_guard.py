"""Both twins before and after the guard against repeated runs they share, alone (the twins bench also runs it):

    python -m scripts.twin_guard [MODELS_DIR] > guard.json

On the bench's 24 held-out openings and the first screen's prompt, three seeds, 128 tokens (app.bench.twins `guard`):
stutter, answers that repeat a sentence, empty answers, referee perplexity pooled and by seed, with the worst seed.
"""

from __future__ import annotations

import json
import sys

from app.bench.twins import bench

if __name__ == "__main__":
    print(json.dumps(bench(sys.argv[1] if len(sys.argv) > 1 else None, guard_only=True), indent=1))
