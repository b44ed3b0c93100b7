"""Deployable as a Hugging Face Space as-is: the README's front matter, space.py, and binding 0.0.0.0 only on a
Space."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
import yaml

from app.cli.launch import launch_parser
from tests.pages import free_port

ROOT = Path(__file__).resolve().parent.parent


def front_matter() -> dict:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert text.startswith("---\n"), "README.md must open with the Space's YAML front matter"
    return yaml.safe_load(text.split("---\n", 2)[1])


def test_readme_front_matter_names_the_gradio_sdk_pinned_in_requirements_and_an_existing_app_file() -> None:
    meta = front_matter()
    pinned = re.search(r"^gradio==(\S+)$", (ROOT / "requirements.txt").read_text(), re.M).group(1)
    assert meta["sdk"] == "gradio" and meta["sdk_version"] == pinned
    assert (ROOT / meta["app_file"]).is_file() and meta["app_file"] != "app.py"  # app/ is the package
    assert str(meta["python_version"]) == "3.11"
    assert meta["title"] == "Converge"


def test_the_page_binds_to_0_0_0_0_only_on_a_space(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SPACE_ID", raising=False)
    assert launch_parser().parse_args([]).host == "127.0.0.1"
    monkeypatch.setenv("SPACE_ID", "someone/converge")
    assert launch_parser().parse_args([]).host == "0.0.0.0"
    assert launch_parser().parse_args(["--host", "127.0.0.1"]).host == "127.0.0.1"


def test_space_py_serves_the_page_through_the_normal_launch(tmp_path: Path) -> None:
    port = free_port()
    env = {**os.environ, "SPACE_ID": "someone/converge"}
    # the host is given so the test never listens beyond this machine; the default on a Space is tested above
    proc = subprocess.Popen([sys.executable, "space.py", "--host", "127.0.0.1", "--port", str(port)], cwd=ROOT,
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while True:
            assert proc.poll() is None, proc.stderr.read()
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as r:
                    page = r.read().decode()
                    break
            except OSError:
                assert time.monotonic() < deadline, "space.py did not serve the page within 120 s"
                time.sleep(0.2)  # polling interval while the server starts, not synchronisation
        assert "Converge" in page  # the page's title, from app.ui.layout
        if (ROOT / "app" / "site" / "node_modules" / "onnxruntime-web").is_dir():  # the CLI built the browser race's
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/converge-site/race.js", timeout=30) as r:  # site
                assert r.status == 200 and b"globalThis.converge = " in r.read()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
