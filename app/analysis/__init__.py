"""The analysis room: what changed at each step and the metrics (changes.py), a recording as pandas tables, and the
sweeps and the cost of one forward pass measured on the built-in twins."""
