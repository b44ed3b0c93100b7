"""A Hugging Face model's `model_type`, read from its config.json alone, before anything is loaded: what decides
which way a `hf-diffusion:` model runs (LLaDA2.x through diffusers' pipeline, DiffusionGemma through its own generate(),
any other through Converge's sampler), and so which settings the page shows and the CLI accepts for it. A Run asks
several times; a model id's answer (the Hub's, or none after a timeout offline) is kept for the process, while a local
folder's config.json is read afresh each time (cheap, and it may be rewritten)."""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path

FETCH_TIMEOUT = 5.0  # seconds the Hub may take to answer for one config.json


def model_type(name: str, fetch: bool = True) -> str | None:
    """The lower-cased `model_type` in model `name`'s config.json: a local folder's own, else the Hugging Face
    cache's copy, else (with `fetch`) that one small file from the Hub. None when none can be read: not a model,
    no network, no such file; the load that follows says why in its own words."""
    folder = Path(name).expanduser() if name else None
    if folder is not None and folder.is_dir():
        return _read(folder / "config.json")
    return _hub_type(name, fetch)


@functools.lru_cache(maxsize=64)
def _hub_type(name: str, fetch: bool) -> str | None:
    """`model_type` for a model id (not a folder): the cache's config.json, else the Hub's; kept per id."""
    try:
        from huggingface_hub import hf_hub_download, try_to_load_from_cache

        cached = try_to_load_from_cache(name, "config.json")
        if isinstance(cached, str):
            return _read(Path(cached))
        if not fetch:
            return None
        return _read(Path(hf_hub_download(name, "config.json", endpoint=os.environ.get("HF_ENDPOINT") or None,
                                          etag_timeout=FETCH_TIMEOUT)))
    except Exception:  # an id the Hub refuses, no network, a gated repo: the load explains
        return None


def _read(path: Path) -> str | None:
    """The model type in one config.json, or None when the file is missing or is not a config."""
    try:
        value = json.loads(path.read_text(encoding="utf-8")).get("model_type")
    except (OSError, ValueError, AttributeError):
        return None
    return str(value).lower() if value else None
