"""A Hugging Face model's files fetched into the cache with progress a person can watch, after checking that this
machine has the memory to run it (needs huggingface_hub, which transformers brings; imported when a download starts).

`download` first lists the files a model needs with their sizes (huggingface_hub's dry run: nothing is written),
refuses in one sentence when the weights cannot fit the memory of the device they will run on, then downloads them
into the Hugging Face cache, where transformers then loads them without the network. While it runs, `progress()`
says how far it is (the page's loading line, app/ui/loading.py) and each `watch` listener gets a line every whole
percent (the command line's stderr).
"""

from __future__ import annotations

import contextlib
import fnmatch
import io
import os
import threading
from typing import Any, Callable, Iterator

from app.errors import UserError

PATTERNS = ["*.json", "*.py", "*.txt", "*.model", "*.tiktoken", "tokenizer*"]  # besides the weights
HEADROOM = 1.1  # activations and the runtime's own memory on top of the weights, as app/sources/pairs.py counts
STORED_BYTES = 2  # published weights are 16-bit (bfloat16 or float16): float32 needs twice their size

_lock = threading.Lock()
_now: dict[str, Any] = {}  # name, done, total (bytes) of the download under way
_listeners: list[Callable[[str], None]] = []


def _line(name: str, done: float, total: float) -> str:
    """How far a download is, in words."""
    share = f" ({100 * done / total:.0f}%)" if total else ""
    return f"downloading {name}: {done / 1e9:.2f} of {total / 1e9:.2f} GB{share}"


def progress() -> str | None:
    """The download under way in this process, in words, or None when there is none."""
    with _lock:
        return _line(_now["name"], _now["done"], _now["total"]) if _now else None


@contextlib.contextmanager
def watch(listener: Callable[[str], None]) -> Iterator[None]:
    """Calls `listener` with a line each whole percent of any download while the block runs."""
    with _lock:
        _listeners.append(listener)
    try:
        yield
    finally:
        with _lock:
            _listeners.remove(listener)


def _report(done: float) -> None:
    """Records a download's bytes so far and tells the listeners when it passed a whole percent."""
    with _lock:
        if not _now:
            return
        total = _now["total"]
        before = int(100 * _now["done"] / total) if total else -1
        _now["done"] = done
        after = int(100 * done / total) if total else -1
        line = _line(_now["name"], done, total) if after != before else None
        listeners = list(_listeners)
    if line is not None:
        for listener in listeners:
            listener(line)


def _bar_class() -> type:
    """A silent tqdm whose byte counts feed `_report` (huggingface_hub drives one bar per download for the bytes
    written to disk, named "Reconstructing"; a plain tqdm subclass is never disabled by its settings)."""
    from tqdm import tqdm

    class Bar(tqdm):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            kwargs.pop("name", None)
            super().__init__(*args, **{**kwargs, "file": io.StringIO(), "disable": False})

        def update(self, n: float | None = 1) -> bool | None:
            out = super().update(n)
            if self.unit == "B" and str(self.desc).startswith("Reconstruct"):
                _report(self.n)
            return out

    return Bar


def free_gb(device: str) -> tuple[float | None, str]:
    """(free GB, where) on `device` ("cuda", "cuda:N", "mps" or "cpu"): a CUDA GPU's free memory, else the memory
    the OS calls available (Apple's MPS shares it); None when it cannot be read."""
    if device.startswith("cuda"):
        import torch

        index = int(device.partition(":")[2] or 0)
        free, _ = torch.cuda.mem_get_info(index)
        return free / 1e9, torch.cuda.get_device_name(index)
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            info = {line.split(":")[0]: line.split()[1] for line in f if ":" in line}
        return int(info["MemAvailable"]) * 1024 / 1e9, "this machine's RAM"
    except (OSError, KeyError, ValueError, IndexError):
        pages = os.sysconf("SC_PHYS_PAGES") if hasattr(os, "sysconf") else 0
        return (pages * os.sysconf("SC_PAGE_SIZE") / 1e9 if pages else None), "this machine's RAM"


def need_gb(weights_bytes: int, dtype: str) -> float:
    """Memory the weights take once loaded in `dtype`, with HEADROOM, in GB."""
    per = 4 if dtype == "float32" else 2
    return weights_bytes * per / STORED_BYTES * HEADROOM / 1e9


def check_fits(name: str, weights_bytes: int, runs_on: dict[str, str],
               free: tuple[float | None, str] | None = None) -> None:
    """Raises UserError, in one sentence, when `weights_bytes` of weights cannot fit the free memory of the device
    they will run on; `free` overrides the measurement (what `free_gb` returns)."""
    free_now, where = free if free is not None else free_gb(runs_on["device"])
    need = need_gb(weights_bytes, runs_on["dtype"])
    if free_now is not None and free_now < need:
        raise UserError(f"{name} needs about {need:.1f} GB of memory in {runs_on['dtype']} on {runs_on['device']} "
                        f"and {where} has {free_now:.1f} GB free: nothing was downloaded; pick a smaller model or "
                        "another machine.")


def _weights(files: list[Any]) -> list[Any]:
    """The weight files to fetch: the safetensors ones when the model has any, else its PyTorch .bin files."""
    safe = [f for f in files if f.filename.endswith(".safetensors")]
    return safe or [f for f in files if f.filename.endswith(".bin")]


def download(name: str, runs_on: dict[str, str], free: tuple[float | None, str] | None = None) -> str:
    """Fetches model `name` into the Hugging Face cache, after `check_fits`, reporting progress as it goes; returns
    the snapshot folder. huggingface_hub's errors propagate for the caller to explain."""
    from huggingface_hub import snapshot_download

    endpoint = os.environ.get("HF_ENDPOINT") or None  # read now, not when huggingface_hub was imported
    listed = snapshot_download(name, dry_run=True, endpoint=endpoint)
    weights = _weights(listed)
    check_fits(name, sum(int(f.file_size or 0) for f in weights), runs_on, free)
    wanted = PATTERNS + [f.filename for f in weights]
    total = sum(int(f.file_size or 0) for f in listed
                if f.will_download and any(fnmatch.fnmatch(f.filename, p) for p in wanted))
    with _lock:
        _now.update(name=name, done=0, total=total)
    try:
        return snapshot_download(name, allow_patterns=wanted, tqdm_class=_bar_class(), endpoint=endpoint)
    finally:
        with _lock:
            _now.clear()
