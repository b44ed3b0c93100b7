"""The trainer, however its modules are laid out, writes the same bytes: a tiny run of each twin (and a paused and
resumed one) is hashed and compared with tests/assets/train_golden.json, which the single-file train.py wrote
(`python -m tests.test_train_golden --write` records it; see that file's "made_by").

The runs go in a process of their own under MKL's conditional numerical reproducibility (MKL_CBWR=COMPATIBLE, one
thread): without it MKL picks its float32 kernels by the CPU model, and two machines with the same torch and the same
AVX512 wrote different bytes from the same code."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="training needs torch, the optional training extra (pip install torch)")

from app.training.train import main  # noqa: E402
from tests.test_train import small_args, write_corpus  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = Path(__file__).parent / "assets" / "train_golden.json"
REPRODUCIBLE = {"MKL_CBWR": "COMPATIBLE", "OMP_NUM_THREADS": "1"}  # the same float32 bits on any x86 CPU
STEPS = 12  # per run: a few seconds in all on one thread


def platform_key() -> str:
    """torch's version and MKL's reproducible mode: float32 sums are bitwise repeatable only where both are the same."""
    return f"torch {torch.__version__}, MKL_CBWR={REPRODUCIBLE['MKL_CBWR']}"


def timeless(value: object) -> object:
    """`value` (a training log or part of one) without its wall-clock fields, at any depth."""
    clock = ("seconds", "seconds_including_data", "hardware", "command")
    if isinstance(value, dict):
        return {k: timeless(v) for k, v in value.items() if k not in clock}
    return [timeless(v) for v in value] if isinstance(value, list) else value


def digest(out: Path, twin: str, log: dict) -> dict:
    """The sha256 of a written twin's weights file and of its training log without the wall-clock fields."""
    return {"weights": hashlib.sha256((out / f"{twin}.safetensors").read_bytes()).hexdigest(),
            "log": hashlib.sha256(json.dumps(timeless(log), sort_keys=True).encode()).hexdigest()}


def tiny_runs(tmp: Path) -> dict:
    """Each objective for STEPS steps in float32 on one thread: AR (with its fork), masked diffusion from the fork
    (block layouts, certainty forcing), uniform from scratch (block layouts, clean weight), and an AR run paused and
    resumed from its checkpoint. Returns each run's digest."""
    corpus, out = tmp / "stories.txt", tmp / "models"
    write_corpus(corpus)
    budget = ["--tokens", str(8 * 49 * STEPS), "--eval-every", "5", "--dropout", "0.1"]
    got = {"ar": digest(out, "ar", main(small_args(corpus, out, "ar", *budget)))}
    fork = str(out / "ar_fork.safetensors")
    got["diffusion"] = digest(out, "diffusion", main(small_args(
        corpus, out, "diffusion", *budget, "--init-from", fork, "--block-frac", "0.5", "--certainty", "0.1")))
    got["uniform"] = digest(out, "uniform", main(small_args(
        corpus, out, "uniform", *budget, "--block-frac", "0.5", "--clean-weight", "0.2", "--pad-frac", "0.5")))
    paused = tmp / "paused"
    (paused).mkdir()
    (paused / "tokenizer.json").write_bytes((out / "tokenizer.json").read_bytes())
    main(small_args(corpus, paused, "ar", *budget, "--pause-after", "5"))
    got["ar_resumed"] = digest(paused, "ar", main(small_args(corpus, paused, "ar", *budget, "--resume")))
    return got


def reproducible_runs(tmp: Path) -> dict:
    """`tiny_runs` in a fresh process under REPRODUCIBLE (MKL reads it when it loads, so not in this process)."""
    done = subprocess.run([sys.executable, "-m", "tests.test_train_golden", "--digest", str(tmp)], cwd=ROOT,
                          env={**os.environ, **REPRODUCIBLE}, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_tiny_runs_of_each_twin_write_the_bytes_the_single_file_trainer_wrote(tmp_path) -> None:
    golden = json.loads(GOLDEN.read_text())
    if golden["platform"] != platform_key():
        pytest.skip(f"the golden hashes were made with {golden['platform']}, this is {platform_key()}")
    got = reproducible_runs(tmp_path)
    assert got["ar_resumed"]["weights"] == got["ar"]["weights"]  # resuming is exact, so the two agree
    assert got == golden["runs"]


if __name__ == "__main__" and "--digest" in sys.argv:  # the subprocess of reproducible_runs
    print(json.dumps(tiny_runs(Path(sys.argv[sys.argv.index("--digest") + 1]))))
elif __name__ == "__main__" and "--write" in sys.argv:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        runs = reproducible_runs(Path(tmp))
    rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    GOLDEN.write_text(json.dumps({"made_by": f"python -m tests.test_train_golden --write, at commit {rev}",
                                  "platform": platform_key(), "runs": runs}, indent=1) + "\n")
