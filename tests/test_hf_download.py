"""A model not yet on this machine is downloaded with progress where the user looks (the command line's stderr, the
page's loading line), and one too big for this machine's memory is refused in one sentence before any download.
The Hub is a loopback HTTP server (tests/hub_server.py) that huggingface_hub reaches through HF_ENDPOINT."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from app.errors import UserError
from app.hf.download import check_fits, need_gb
from tests.hub_server import serve

ROOT = Path(__file__).resolve().parent.parent
REPO = "converge/tiny-llada2"


def test_weights_that_do_not_fit_are_refused_in_one_sentence() -> None:
    """8 GB of 16-bit weights take 17.6 GB in float32 (twice, plus a tenth), 8.8 GB in bfloat16."""
    assert need_gb(8 * 10**9, "float32") == pytest.approx(17.6) and need_gb(8 * 10**9, "bfloat16") == pytest.approx(8.8)
    with pytest.raises(UserError) as err:
        check_fits("org/big", 8 * 10**9, {"device": "cpu", "dtype": "float32"}, free=(10.0, "this machine's RAM"))
    text = str(err.value)
    assert text == ("org/big needs about 17.6 GB of memory in float32 on cpu and this machine's RAM has 10.0 GB free: "
                    "nothing was downloaded; pick a smaller model or another machine.")
    check_fits("org/big", 8 * 10**9, {"device": "cuda", "dtype": "bfloat16"}, free=(10.0, "NVIDIA L4"))


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("torch", reason="torch is not installed")
    pytest.importorskip("transformers", reason="transformers is not installed")
    pytest.importorskip("diffusers", reason="diffusers is not installed (requirements-test.txt)")
    from tests.hf_families import build_llada2

    return build_llada2(tmp_path_factory.mktemp("hub"))


def _record(model: str, home: Path, url: str, out: Path) -> subprocess.CompletedProcess:
    """`python -m app record` with the left side a Hugging Face model, in a fresh process whose Hub is `url`."""
    left = {"trust_remote_code": True, "device": "cpu", "gen_length": 8, "steps": 8, "block_length": 8,
            "stop_at_eos": False}
    env = {**os.environ, "HF_HOME": str(home), "HF_ENDPOINT": url, "HF_HUB_DISABLE_XET": "1"}
    env.pop("HF_HUB_OFFLINE", None)
    return subprocess.run([sys.executable, "-m", "app", "record", "--left", f"hf-diffusion:{model}", "--left-settings",
                           json.dumps(left), "--right", "local-ar", "--right-settings", '{"gen_length": 8}',
                           "--prompt", "the cat had a red ball", "--out", str(out)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)


def test_a_first_load_downloads_with_progress_on_stderr_and_a_second_reads_the_cache(tiny: Path,
                                                                                      tmp_path: Path) -> None:
    served: list[str] = []
    with serve({REPO: tiny}, served=served) as url:
        first = _record(REPO, tmp_path / "home", url, tmp_path / "first.jsonl")
        assert first.returncode == 0, first.stdout[-2000:] + first.stderr[-2000:]
        lines = [line for line in first.stderr.splitlines() if line.startswith(f"downloading {REPO}: ")]
        assert lines and lines[-1].endswith("(100%)") and "of 0.02 GB" in lines[-1]
        assert len(lines) == len(set(lines)) >= 2  # one line a whole percent, not one a chunk
        assert "model.safetensors" in served and (tmp_path / "first.jsonl").is_file()
        before = list(served)
        second = _record(REPO, tmp_path / "home", url, tmp_path / "second.jsonl")
        assert second.returncode == 0, second.stderr[-2000:]
        assert "downloading" not in second.stderr and served == before  # nothing fetched again


def test_a_model_too_big_for_this_machine_is_refused_before_any_download(tiny: Path, tmp_path: Path) -> None:
    """The stand-in Hub lists 10 TB of weights: the side ends with one sentence (the command prints each side's end)
    and no weights were sent (only config.json, whose model type says which sampler would run it)."""
    served: list[str] = []
    huge = "converge/huge"
    with serve({huge: tiny}, claims={huge: {"model.safetensors": 10**13}}, served=served) as url:
        run = _record(huge, tmp_path / "home", url, tmp_path / "huge.jsonl")
    assert run.returncode != 0
    said = next(line for line in run.stdout.splitlines() if line.startswith("left: "))
    assert f"error, 0 frames ({huge} needs about 22000.0 GB of memory in float32 on cpu and this machine's RAM" in said
    assert said.endswith("nothing was downloaded; pick a smaller model or another machine.)")
    assert "downloading" not in run.stderr
    assert served in ([], ["config.json"])
    assert not list((tmp_path / "home").rglob("*.safetensors"))


def test_the_page_loading_line_says_how_far_a_download_is(tiny: Path, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """While a download runs, the line the page shows under "Loading..." carries its progress. The download is held
    at its first whole percent until the page's line has shown it, so no timing decides the outcome."""
    import huggingface_hub.constants

    from app.hf import download as hf_download
    from app.ui.loading import while_loading

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "cache"))
    shown, held = threading.Event(), []

    def hold(line: str) -> None:
        if not held:
            held.append(line)
            assert shown.wait(120), "the page never showed the download"

    lines = []
    with serve({REPO: tiny}) as url:
        monkeypatch.setenv("HF_ENDPOINT", url)
        monkeypatch.setenv("HF_HUB_DISABLE_XET", "1")
        with hf_download.watch(hold):
            loading = while_loading(lambda: hf_download.download(REPO, {"device": "cpu", "dtype": "float32"}),
                                    "a tiny LLaDA2")
            try:
                while True:
                    line = next(loading)
                    lines.append(line)
                    if f"downloading {REPO}: " in line:
                        shown.set()
            except StopIteration as done:
                folder = Path(done.value)
    assert any("Loading a tiny LLaDA2... " in x and f": downloading {REPO}: " in x and "GB (" in x for x in lines)
    assert (folder / "model.safetensors").is_file() and hf_download.progress() is None
