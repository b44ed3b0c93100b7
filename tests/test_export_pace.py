"""Exports for slides (issue 41, item 1): the GIF and MP4 last as long as the player's replay at the watch pace
(theme.json's `pace`, read by the player, the page's export box and `python -m app export` alike), then hold the last
frame, and the GIF loops or plays once by choice. Durations are read back as a viewer's player would: the GIF's
frame delays and loop count with Pillow, the MP4's with imageio-ffmpeg."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from app.cli.export import main as cli_main
from app.export.video.scene import MIN_SIZE
from app.trace.frames import Frame, RecordingWriter, make_header
from app.trace.reading import read_recording
from app.view.pace import HOLD, PACE, PACES, pace_factor
from app.view.theme import THEME
from tests.fixtures import drain

END = 0.6  # seconds the built race lasts: well under the watch pace
SMALL = ["--fps", "10", "--width", str(MIN_SIZE[0]), "--height", str(MIN_SIZE[1])]


def local_race(path: Path, end: float = END, api_right: bool = False) -> Path:
    """A race of two local models (both report forward passes) that ends at `end` s; `api_right`: the right side
    reports none, as an API model."""
    header = make_header("Once upon a time", {"left": {"name": "local-diffusion", "settings": {}},
                                              "right": {"name": "openai:x" if api_right else "local-ar",
                                                        "settings": {}}})
    w = RecordingWriter(path, header)
    words = ["Once ", "upon ", "a ", "time", "."]
    for i in range(5):
        t = end * (i + 1) / 5
        w.frame("left", Frame(t=t * 0.8, step=i, tokens=words, masked=[k > i for k in range(5)], nfe=i + 1,
                              final=i == 4))
        w.frame("right", Frame(t=t, step=i, tokens=words[: i + 1], nfe=None if api_right else i + 1, final=i == 4))
    w.end("left", "done")
    w.end("right", "done")
    w.close()
    return path


@pytest.fixture
def race(tmp_path: Path) -> Path:
    return local_race(tmp_path / "race.jsonl")


def gif_timing(path: Path) -> tuple[float, int | None]:
    """The GIF's length in seconds (its frame delays summed) and its loop count (None: no loop block, plays once)."""
    with Image.open(path) as im:
        total = 0
        for i in range(im.n_frames):
            im.seek(i)
            total += im.info["duration"]
        im.seek(0)
        return total / 1000, im.info.get("loop")


def mp4_seconds(path: Path) -> float:
    return pytest.importorskip("imageio_ffmpeg").count_frames_and_secs(str(path))[1]


def test_the_pace_is_declared_once_in_the_theme_the_player_reads() -> None:
    theme = json.loads((Path(__file__).resolve().parent.parent / "app/view/theme.json").read_text(encoding="utf-8"))
    assert PACE == theme["pace"] == THEME["pace"] and PACES == tuple(theme["paces"]) and PACE in PACES
    assert 2 <= HOLD <= 3


def test_the_pace_factor_is_the_players(tmp_path: Path) -> None:
    rec = read_recording(local_race(tmp_path / "a.jsonl"))
    assert pace_factor(rec, "time", 8) == pytest.approx(END / 8)
    assert pace_factor(rec, "time", 0) == 1  # real time
    assert pace_factor(rec, "passes", 8) == 1  # the forward-pass clock has its own rate
    assert pace_factor(read_recording(local_race(tmp_path / "b.jsonl", end=10)), "time", 8) == 1  # never sped up
    assert pace_factor(read_recording(local_race(tmp_path / "c.jsonl", api_right=True)), "time", 8) == 1


def test_the_cli_makes_a_gif_and_mp4_at_the_watch_pace_held_and_looping(race: Path, tmp_path: Path) -> None:
    gif, mp4 = tmp_path / "pace.gif", tmp_path / "pace.mp4"
    assert cli_main([str(race), "--out", str(gif), *SMALL]) == 0
    seconds, loop = gif_timing(gif)
    assert seconds == pytest.approx(PACE + HOLD, abs=0.1) and loop == 0
    assert cli_main([str(race), "--out", str(mp4), *SMALL]) == 0
    assert mp4_seconds(mp4) == pytest.approx(PACE + HOLD, abs=0.1)


@pytest.mark.parametrize(("flags", "seconds", "loop"), [
    (["--once"], PACE + HOLD, None),
    (["--pace", "5", "--hold", "0"], 5.0, 0),
    (["--speed", "2"], END / 2 + HOLD, 0),  # --speed alone: against real time, as before
    (["--speed", "0.5", "--pace", "5", "--hold", "1"], 5 / 0.5 + 1, 0),  # both: the player's speed at that pace
    (["--pace", "0", "--hold", "3", "--once"], END + 3, None),
])
def test_cli_flags_override_the_pace_hold_and_loop(race: Path, tmp_path: Path, flags: list[str], seconds: float,
                                                    loop: int | None) -> None:
    out = tmp_path / "o.gif"
    assert cli_main([str(race), "--out", str(out), *SMALL, *flags]) == 0
    assert gif_timing(out) == (pytest.approx(seconds, abs=0.1), loop)


def test_a_race_with_an_api_side_keeps_its_real_timing(tmp_path: Path) -> None:
    race, out = local_race(tmp_path / "api.jsonl", api_right=True), tmp_path / "api.gif"
    assert cli_main([str(race), "--out", str(out), *SMALL]) == 0
    assert gif_timing(out) == (pytest.approx(END + HOLD, abs=0.1), 0)


def export_from_page(fmt: str, race: Path, *inputs: Any) -> Path:
    """The page's export handler, as the export box calls it (the browser has filled in the player's pace)."""
    from app.ui.export_ui import export_current

    *_, (out, message) = drain(export_current(fmt)(str(race), "time", *inputs))
    assert message == f"{race.stem}.{fmt} is ready: use the download link.", message
    return Path(out)


def test_the_pages_export_follows_the_players_pace_and_the_boxs_hold_and_loop(race: Path) -> None:
    seconds, loop = gif_timing(export_from_page("gif", race, f"{PACE:g}", HOLD, "Loop"))
    assert seconds == pytest.approx(PACE + HOLD, abs=0.1) and loop == 0
    assert gif_timing(export_from_page("gif", race, "5", 2, "Play once")) == (pytest.approx(7.0, abs=0.1), None)
    assert mp4_seconds(export_from_page("mp4", race, "15", 3, "Loop")) == pytest.approx(18.0, abs=0.1)


def test_the_pages_export_refuses_nothing_odd_it_falls_back_to_the_defaults(race: Path) -> None:
    seconds, loop = gif_timing(export_from_page("gif", race, "player", "-4", "maybe"))
    assert seconds == pytest.approx(PACE + HOLD, abs=0.1) and loop == 0


def test_the_video_header_shows_a_stretched_speed_in_two_digits_never_the_floats_length() -> None:
    from app.export.video.scene import speed_text

    assert [speed_text(v) for v in (0.408199, 0.075, 2.0, 12.5, 0.5)] == ["0.41", "0.075", "2", "12.5", "0.5"]
