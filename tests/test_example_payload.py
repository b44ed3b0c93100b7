"""The page opens on the first bundled example: its payload is read and analysed once per version of the file and
kept (app/ui/player_ui.py `recording_at_start`), each load with a run id of its own; a visitor's recording is read
every time."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from app.trace.store import EXAMPLES_DIR
from app.ui import player_ui


@pytest.fixture
def examples(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of two bundled examples as the examples folder."""
    folder = tmp_path / "examples"
    folder.mkdir()
    for src in sorted(EXAMPLES_DIR.glob("*.jsonl"))[:2]:
        shutil.copy(src, folder / src.name)
    monkeypatch.setenv("CONVERGE_EXAMPLES", str(folder))
    return folder


def reads(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The files `recording_at_start` reads from now on."""
    seen: list[Path] = []
    real = player_ui.load_payload

    def counted(path, *args, **kwargs):  # type: ignore[no-untyped-def]
        seen.append(Path(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(player_ui, "load_payload", counted)
    return seen


def test_an_example_is_read_once_and_each_load_gets_its_own_run(examples: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    first = sorted(examples.glob("*.jsonl"))[0]
    seen = reads(monkeypatch)
    one, two = player_ui.recording_at_start(first), player_ui.recording_at_start(first)
    assert one["mode"] == "replay" and one["cursor"] == "start" and one["sides"]
    assert one["run"] != two["run"]
    assert {k: v for k, v in one.items() if k != "run"} == {k: v for k, v in two.items() if k != "run"}
    assert seen == [first]  # the folder is this test's own, so nothing was kept before


def test_an_example_changed_on_disk_is_read_again(examples: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = sorted(examples.glob("*.jsonl"))[0]
    before = player_ui.recording_at_start(first)
    lines = first.read_text(encoding="utf-8").splitlines()
    first.write_text("\n".join(lines[:1] + lines[3:]) + "\n", encoding="utf-8")  # two frames fewer
    seen = reads(monkeypatch)
    after = player_ui.recording_at_start(first)
    assert seen == [first] and after["sides"] != before["sides"]


def test_a_visitors_recording_is_read_every_time(examples: Path, recordings: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    mine = recordings / "mine.jsonl"
    shutil.copy(sorted(examples.glob("*.jsonl"))[0], mine)
    seen = reads(monkeypatch)
    player_ui.recording_at_start(mine)
    player_ui.recording_at_start(mine)
    assert seen == [mine, mine]
