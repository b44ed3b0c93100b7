"""A Hugging Face model that fails to load gets one sentence naming the real cause, each produced here for real:
out of memory, damaged weights (the only one told to download again), a gated model on a loopback Hub, a Hub that
cannot be reached with no cached copy, an unknown architecture, and remote code not trusted."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Iterator

import pytest

from app.errors import UserError
from app.sources.base import make_source

torch = pytest.importorskip("torch", reason="torch is not installed")
transformers = pytest.importorskip("transformers", reason="transformers is not installed")

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    from tests.test_hf import build_tiny_models

    return build_tiny_models(tmp_path_factory.mktemp("hf_errors"))


def _load_error(spec: str, **settings: object) -> str:
    with pytest.raises(UserError) as err:
        make_source(spec, **settings)
    text = str(err.value)
    assert "\n" not in text
    return text


def test_a_model_bigger_than_memory_says_so_and_not_download_again(tiny: dict[str, Path], tmp_path: Path) -> None:
    """A checkpoint without its position table, whose config asks for 2**40 positions: transformers allocates the
    missing table and the CPU allocator refuses, as it would for a model too big for the machine."""
    from safetensors.torch import load_file, save_file

    big = tmp_path / "big"
    shutil.copytree(tiny["gpt2"], big)
    weights = load_file(str(big / "model.safetensors"))
    del weights["transformer.wpe.weight"]
    save_file(weights, str(big / "model.safetensors"), metadata={"format": "pt"})
    config = json.loads((big / "config.json").read_text())
    (big / "config.json").write_text(json.dumps({**config, "n_positions": 2 ** 40}))
    text = _load_error(f"hf-ar:{big}", device="cpu")
    assert "does not fit in the memory of cpu in float32" in text and "smaller model" in text
    assert "download" not in text


def test_damaged_weights_alone_are_told_to_download_again(tiny: dict[str, Path], tmp_path: Path) -> None:
    cut = tmp_path / "cut"
    shutil.copytree(tiny["bert"], cut)
    data = (cut / "model.safetensors").read_bytes()
    (cut / "model.safetensors").write_bytes(data[: len(data) // 2])  # an interrupted download
    text = _load_error(f"hf-diffusion:{cut}")
    assert "damaged or cut short" in text and "download the model again" in text


def test_an_unknown_architecture_asks_for_a_newer_transformers(tiny: dict[str, Path], tmp_path: Path) -> None:
    future = tmp_path / "future"
    shutil.copytree(tiny["gpt2"], future)
    config = json.loads((future / "config.json").read_text())
    (future / "config.json").write_text(json.dumps({**config, "model_type": "gpt99"}))
    text = _load_error(f"hf-ar:{future}")
    assert f"needs a newer transformers than {transformers.__version__}" in text
    assert "pip install -U transformers" in text and "download" not in text


def test_an_unreachable_hub_with_no_cached_copy_says_offline(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{port}")
    text = _load_error("hf-ar:some-org/not-downloaded")
    assert "Hub cannot be reached" in text and "not a local folder nor in the Hugging Face cache" in text
    assert "download the model first while online" in text and "again" not in text


class _GatedHub(BaseHTTPRequestHandler):
    """Answers every request as the Hub answers for a gated model the caller has no access to."""

    def _gated(self) -> None:
        body = b'{"error": "Access to model is restricted. You must have access to it and be authenticated."}'
        self.send_response(401)
        self.send_header("X-Error-Code", "GatedRepo")
        self.send_header("X-Error-Message", "Access to model org/gated is restricted and you are not in the "
                                            "authorized list.")
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    do_GET = do_HEAD = _gated

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def gated_hub() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _GatedHub)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()


def test_a_gated_model_says_log_in(gated_hub: str, tmp_path: Path) -> None:
    """huggingface_hub reads HF_ENDPOINT when imported, so the load runs in a fresh interpreter."""
    env = {**os.environ, "HF_ENDPOINT": gated_hub, "HF_HOME": str(tmp_path / "hf"), "PYTHONPATH": str(ROOT)}
    env.pop("HF_HUB_OFFLINE", None)
    env.pop("HF_TOKEN", None)
    code = ("from app.errors import UserError\nfrom app.hf.models import load_causal\n"
            "try:\n    load_causal('org/gated', device='cpu')\nexcept UserError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    text = out.stdout.strip().splitlines()[-1] if out.stdout.strip() else out.stderr[-500:]
    assert "org/gated is a gated model" in text and "log in" in text and "HF_TOKEN" in text, text
    assert "download" not in text
