"""The command line runs a race headless against real HTTP servers and writes the recording."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from app.trace.reading import read_recording
from tests.fixtures import needs_twins

ROOT = Path(__file__).resolve().parent.parent


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "app", *args], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=300)


def test_record_mercury_against_openai_writes_each_sides_final_text(api_env: str, tmp_path: Path) -> None:
    out = tmp_path / "race.jsonl"
    proc = run_cli("record", "--left", "mercury", "--right", "openai:mercury-2", "--prompt", "Tell me a story.",
                   "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    rec = read_recording(out)
    for side in ("left", "right"):
        frames = rec.frames[side]
        assert len(frames) > 2 and frames[-1].final
        assert frames[-1].text == frames[-2].text or frames[-1].text.startswith(frames[-2].text)
    assert rec.frames["left"][-1].text == rec.frames["right"][-1].text
    assert rec.header["sources"]["left"]["settings"]["diffusing"] is True
    from tests.wire_server import DEFAULT_KEY as TEST_KEY

    assert TEST_KEY not in out.read_text() and TEST_KEY not in proc.stdout + proc.stderr


def test_record_refuses_a_pin_that_is_not_position_text_before_either_side_runs(tmp_path: Path) -> None:
    out = tmp_path / "race.jsonl"
    proc = run_cli("record", "--prompt", "Once", "--out", str(out), "--pin", "x: The end.")
    assert proc.returncode == 2 and "is not POSITION:TEXT" in proc.stderr and not out.exists()


def test_record_reports_a_missing_key_and_still_saves_the_other_side(api_env: str, tmp_path: Path) -> None:
    out = tmp_path / "race.jsonl"
    proc = run_cli("record", "--left", "mercury", "--right", "openai:mercury-2", "--prompt", "Hi", "--out", str(out),
                   env={"INCEPTION_API_KEY": ""})
    assert proc.returncode == 1
    assert "INCEPTION_API_KEY" in proc.stdout
    assert read_recording(out).frames["right"][-1].final


def first_readme_command(command: str) -> list[str]:
    """The README's first `python -m app COMMAND ...`, inline or in a code block, as argv (a trailing comment dropped,
    continued lines joined)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    rest = text[text.index(f"python -m app {command} "):].replace("\\\n", " ")
    end = min(i for i in (rest.find("`"), rest.find("\n")) if i >= 0)
    return shlex.split(rest[:end], comments=True)


@needs_twins
def test_the_readmes_first_record_example_races_the_built_in_twins_with_no_key(tmp_path: Path) -> None:
    argv = first_readme_command("record")
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    proc = subprocess.run([sys.executable, *argv[1:]], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env={**env, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = tmp_path / argv[argv.index("--out") + 1]
    rec = read_recording(out)
    assert {side: source["name"] for side, source in rec.header["sources"].items()} == {
        "left": "local-diffusion", "right": "local-ar"}
    assert all(rec.frames[side] and rec.frames[side][-1].final for side in ("left", "right"))


def test_bench_prints_one_json_object_with_the_pipeline_figures() -> None:
    proc = run_cli("bench", "--json", "--only", "pipeline")
    assert proc.returncode == 0, proc.stderr
    figures = json.loads(proc.stdout)["pipeline"]
    for key in ("frame_ms_p50", "frame_ms_p99", "difflib_frame_ms_p50"):
        assert figures[key] > 0


@needs_twins
def test_bench_on_a_twins_folder_without_a_filter_says_how_to_fit_one_before_any_work(tmp_path: Path) -> None:
    from app.engine.model import DEFAULT_MODELS_DIR

    for twin in DEFAULT_MODELS_DIR.glob("*"):  # a training run's candidate: the shipped twins, but for the filter
        if twin.suffix in (".json", ".safetensors") and twin.name != "diffusion.filter.safetensors":
            shutil.copy(twin, tmp_path / twin.name)
    proc = run_cli("bench", "--json", "--only", "twins", "--models", str(tmp_path))
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip() == (f"{tmp_path} has no diffusion.filter.safetensors (fit the filter first: python -m "
                                   "app.training.fit_filter --models DIR --corpus ../shared/corpus/tinystories-*.txt).")


def test_help_lists_every_command_and_each_commands_help_shows_its_options_with_defaults() -> None:
    from app.cli import COMMANDS

    top = run_cli("--help")
    assert top.returncode == 0, top.stderr
    assert "--host" in top.stdout and "(default: 7860)" in " ".join(top.stdout.split())
    listed = {line.split()[0]: line for line in top.stdout.split("commands (")[1].splitlines()[1:] if line.strip()}
    assert list(listed) == list(COMMANDS) == ["record", "pairs", "generate", "export", "stats", "site",
                                                "board", "bench"]
    for name, line in COMMANDS.items():
        assert line in listed[name]
    # one option of each command, with the default its --help must show
    shown = {"record": "(default: local-diffusion)", "pairs": "--json", "generate": "source's own defaults",
             "export": "(default: 1280)", "stats": "--csv FILE", "site": "OUT_DIR",
             "board": "(default: board.csv)", "bench": "default: all of them"}
    for name in COMMANDS:
        proc = run_cli(name, "--help")
        assert proc.returncode == 0, proc.stderr
        words = " ".join(proc.stdout.split())  # argparse wraps to the terminal's width
        assert words.startswith(f"usage: python -m app {name} ") and shown[name] in words, proc.stdout
