"""The page: layout.py composes its boxes (the race, the library, the exports, the lessons, the sampler, the sweeps)."""

import os

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")  # before any module of the page imports gradio
