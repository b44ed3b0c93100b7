"""The page: layout.py composes its boxes (the race, the library, the exports, the lessons, the sampler, the sweeps)."""
