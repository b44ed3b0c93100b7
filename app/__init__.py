"""Converge: watch a diffusion language model converge, side by side with an autoregressive model typing."""

import os

# One BLAS thread per model, set before numpy loads: a race runs each side on its own core, and
# OpenBLAS threads that outnumber the cores spin-wait, which made a built-in diffusion story take
# 4.5 s instead of 1.4 s beside one other busy process (`python -m app generate --source local-diffusion`).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

__version__ = "0.1.0"
