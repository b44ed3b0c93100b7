"""Video export: a real recording becomes a GIF Pillow reads and an MP4 ffmpeg decodes, timed by the trace."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from app.analysis.changes import metrics
from app.cli.export import main as cli_main
from app.errors import UserError
from app.export.video import export_video, render_still
from app.export.video.fonts import Glyphs, clean
from app.export.video.palette import CHANGED, FG, HEAT, NEW
from app.export.video.scene import MIN_SIZE, Scene
from app.export.video.track import load, timer_text
from app.trace.frames import Frame, RecordingWriter, make_header

SIZE = (480, 270)
FPS = 10
HOSTILE = ["Hi", " ", "\U0001F600", " ", "\u202eevil\u202c", " ", "zero\u200bwidth", " ", "nul\x00byte", "\n",
           "<b>bold</b>", " ", "\u05e9\u05dc\u05d5\u05dd", " ", "\u4e2d\u6587", " ", "e\u0301", " ", "x" * 100_000, " ",
           "end"]


def make_recording(path: Path, right_seconds: float = 2.0) -> Path:
    """Left: a masked diffusion side (unmask, change, remask) done at 1.2 s; right: hostile text typed until
    right_seconds."""
    writer = RecordingWriter(path, make_header("Say hi \u202e\U0001F600\x00", {
        "left": {"name": "local-diffusion", "settings": {}}, "right": {"name": "openai:typist\u202e", "settings": {}}}))
    states = [
        (["", "", "", "", ""], [True] * 5),
        (["the", "", "", "", ""], [False, True, True, True, True]),
        (["the", "cat", "", "", ""], [False, False, True, True, True]),
        (["the", "dog", "", "sat", ""], [False, False, True, False, True]),
        (["the", "dog", "", "", "."], [False, False, True, True, False]),
        (["the", "dog", "has", "sat", "."], [False] * 5),
    ]
    for k, (tokens, masked) in enumerate(states):
        writer.frame("left", Frame(t=0.2 * (k + 1), step=k, tokens=tokens, masked=masked, nfe=k + 1,
                                   final=k == len(states) - 1))
    writer.end("left", "done")
    n = len(HOSTILE)
    for k in range(1, n + 1):
        writer.frame("right", Frame(t=right_seconds * k / n, step=k, text="".join(HOSTILE[:k]), final=k == n))
    writer.end("right", "done")
    writer.close()
    return path


@pytest.fixture
def recording(tmp_path: Path) -> Path:
    return make_recording(tmp_path / "race.jsonl")


def gif_frames(path: Path) -> tuple[int, int, list[np.ndarray]]:
    """Frame count, total delay in ms and every frame as RGB, as Pillow reads the file."""
    with Image.open(path) as im:
        assert im.format == "GIF" and im.size == SIZE
        total, pictures = 0, []
        for i in range(im.n_frames):
            im.seek(i)
            total += im.info["duration"]
            pictures.append(np.asarray(im.convert("RGB"), dtype=np.int16))
        return im.n_frames, total, pictures


def still(path: Path, tmp_path: Path, t: float) -> np.ndarray:
    out = render_still(path, tmp_path / f"still-{t}.png", t=t, size=SIZE)
    with Image.open(out) as im:
        return np.asarray(im.convert("RGB"), dtype=np.int16)


def test_gif_lasts_the_race_and_each_frame_shows_the_trace_at_its_time(recording: Path, tmp_path: Path) -> None:
    out = export_video(recording, tmp_path / "race.gif", fmt="gif", fps=FPS, size=SIZE)
    count, total_ms, pictures = gif_frames(out)
    assert count == math.ceil(2.0 * FPS)
    assert abs(total_ms - 2000) <= 1000 / FPS
    for k in range(count):
        t = 2.0 if k == count - 1 else k / FPS
        wrong = np.abs(pictures[k] - still(recording, tmp_path, t)).max(axis=2) > 60  # beyond palette rounding
        assert wrong.sum() == 0, f"frame {k} is not the race at {t} s"
    assert np.abs(pictures[5] - pictures[15]).mean() > 1.0


def test_mp4_decodes_to_the_race_duration(recording: Path, tmp_path: Path) -> None:
    imageio_ffmpeg = pytest.importorskip("imageio_ffmpeg")
    out = export_video(recording, tmp_path / "race.mp4", fmt="mp4", fps=FPS, size=SIZE)
    frames, seconds = imageio_ffmpeg.count_frames_and_secs(str(out))
    assert frames == math.ceil(2.0 * FPS)
    assert abs(seconds - 2.0) <= 1 / FPS
    reader = imageio_ffmpeg.read_frames(str(out))
    meta = next(reader)
    assert tuple(meta["size"]) == SIZE
    last = None
    for raw in reader:
        last = raw
    picture = np.frombuffer(last, np.uint8).reshape(SIZE[1], SIZE[0], 3).astype(np.int16)
    assert np.abs(picture - still(recording, tmp_path, 2.0)).mean() < 6.0


def test_each_side_shows_its_latest_frame_with_the_page_colours(recording: Path) -> None:
    scene = Scene(load(recording), (1280, 720))

    def area(side: int, part: str) -> np.ndarray:
        x, y = scene.panels[side][:2]
        if part == "heat":
            top, left = y + scene.heat_y, x + scene.heat_x
            return scene.canvas[top:top + scene.heat_h, left:left + scene.heat_w]
        return scene.canvas[y + scene.text_y:y + scene.text_y + scene.text_h,
                            x + scene.inner_x:x + scene.inner_x + scene.inner_w]

    def has(pixels: np.ndarray, colour: tuple[int, int, int]) -> bool:
        return bool((pixels == np.array(colour, np.uint8)).all(axis=2).any())

    scene.draw(0.05)  # before either side's first frame
    assert (area(0, "heat") == 255).all() and (area(1, "heat") == 255).all()
    assert not has(area(0, "text"), NEW) and not has(area(1, "text"), NEW)
    scene.draw(0.45)  # left frame 1: "the" unmasked
    assert has(area(0, "text"), NEW) and not has(area(0, "text"), CHANGED)
    assert not has(area(0, "heat"), CHANGED)
    scene.draw(0.8)  # left frame 3: "cat" became "dog"
    assert has(area(0, "text"), CHANGED) and has(area(0, "heat"), CHANGED)
    assert not has(area(0, "heat"), (0, 0, 0))
    scene.draw(1.0)  # left frame 4: "sat" remasked
    assert has(area(0, "heat"), (0, 0, 0)) and not has(area(0, "text"), CHANGED)
    scene.draw(2.0)
    assert has(area(1, "heat"), NEW) and has(area(1, "heat"), tuple(HEAT[1]))
    assert [tr.shown for tr in scene.tracks] == [5, len(HOSTILE) - 1]


def test_a_frames_note_is_drawn_above_its_text_as_the_page_shows_it(tmp_path: Path) -> None:
    path = tmp_path / "notes.jsonl"
    writer = RecordingWriter(path, make_header("p", {"left": {"name": "forward process", "settings": {}}}))
    for k, note in enumerate(["t = 0.00", None, "t = 1.00: 2 of 2 positions masked (100%)"]):
        writer.frame("left", Frame(t=0.5 * k, step=k, tokens=["a", "b"], masked=[k > 0, k > 1], note=note))
    writer.end("left", "done")
    writer.close()
    scene = Scene(load(path), (1280, 720))
    x, y = scene.panels[0][:2]
    strip = scene.canvas[y + scene.msg_y:y + scene.msg_y + scene.msg_h,
                         x + scene.inner_x:x + scene.inner_x + scene.inner_w]
    shown = []
    for t in (0.0, 0.5, 1.0):
        scene.draw(t)
        shown.append(strip.copy())
    assert (shown[0] == FG).all(axis=2).any() and (shown[1] == 255).all()  # a frame without a note: nothing
    assert (shown[2] == FG).all(axis=2).sum() > (shown[0] == FG).all(axis=2).sum()  # the longer note


def test_timers_count_final_tokens_in_place_and_end_on_the_metrics(recording: Path) -> None:
    scene = Scene(load(recording), SIZE)
    for tr in scene.tracks:
        m = metrics(tr.frames)
        assert tr.in_place[-1] == m["answer_tokens"]  # the answer as the metrics count it
        last = timer_text(tr.frames[-1].t, tr.in_place[-1], 80)
        assert last == (f"{m['t_final']:.2f} s \u00b7 {m['answer_tokens']} tok final \u00b7 "
                        f"{m['tokens_per_s']:.1f} tok/s")
    left = scene.tracks[0]
    # "cat" is not the final word; "sat" counts while shown, then is remasked as "." arrives
    assert left.in_place == [0, 1, 1, 3, 3, 5]
    assert timer_text(1.5, 3, 10) == "1.50 s"


@pytest.mark.parametrize("fmt", ["gif", "mp4"])
def test_speed_two_halves_the_duration_and_hold_adds_its_seconds(recording: Path, tmp_path: Path, fmt: str) -> None:
    def duration(**options: float) -> float:
        out = export_video(recording, tmp_path / f"race-{len(list(tmp_path.iterdir()))}.{fmt}", fmt=fmt, fps=FPS,
                           size=SIZE, **options)
        if fmt == "gif":
            return gif_frames(out)[1] / 1000
        return pytest.importorskip("imageio_ffmpeg").count_frames_and_secs(str(out))[1]

    assert abs(duration(speed=1.0) - 2.0) <= 1 / FPS
    assert abs(duration(speed=2.0) - 1.0) <= 1 / FPS
    assert abs(duration(speed=2.0, hold=0.5) - 1.5) <= 1 / FPS


@pytest.mark.parametrize("content", [b"", b"not a recording\n", b"\xff\xfe\x00garbage",
                                     b'{"type": "header", "schema": 99}\n',
                                     b'{"type": "header", "schema": 1, "prompt": "p", "sources": {}}\n'])
@pytest.mark.parametrize("fmt", ["gif", "mp4"])
def test_a_corrupt_recording_is_named_and_nothing_is_written(tmp_path: Path, content: bytes, fmt: str) -> None:
    folder = tmp_path / "work"
    folder.mkdir()
    bad = folder / "bad.jsonl"
    bad.write_bytes(content)
    with pytest.raises(UserError, match="bad.jsonl"):
        export_video(bad, folder / f"out.{fmt}", fmt=fmt, fps=FPS, size=SIZE)
    assert [p.name for p in folder.iterdir()] == ["bad.jsonl"]


def test_a_truncated_recording_exports_the_frames_before_the_bad_line(recording: Path, tmp_path: Path,
                                                                      caplog: pytest.LogCaptureFixture) -> None:
    data = recording.read_bytes()
    recording.write_bytes(data[:data.index(b'"side": "right"') + 40])
    out = export_video(recording, tmp_path / "cut.gif", fmt="gif", fps=FPS, size=SIZE)
    assert gif_frames(out)[0] == math.ceil(1.2 * FPS)
    assert any("is not valid" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("fmt", ["gif", "mp4"])
@pytest.mark.parametrize("error", [RuntimeError, KeyboardInterrupt])
def test_a_failure_mid_export_leaves_no_file(recording: Path, tmp_path: Path, fmt: str, error: type) -> None:
    out = tmp_path / "videos" / f"race.{fmt}"
    out.parent.mkdir()

    def fail(done: int, total: int) -> None:
        if done == 5:
            assert any(out.parent.iterdir())  # the temporary file is being written
            raise error("stop")

    with pytest.raises(error):
        export_video(recording, out, fmt=fmt, fps=FPS, size=SIZE, progress=fail)
    assert list(out.parent.iterdir()) == []


@pytest.mark.parametrize("options", [{"fps": 0}, {"fps": 60, "fmt": "gif"}, {"speed": 0}, {"speed": float("nan")},
                                     {"size": (481, 270)}, {"size": (100, 100)}, {"hold": -1}, {"fmt": "avi"}])
def test_bad_options_are_refused_before_anything_is_written(recording: Path, tmp_path: Path, options: dict) -> None:
    args = {"fmt": "mp4", "fps": FPS, "size": SIZE, **options}
    folder = tmp_path / "videos"
    folder.mkdir()
    with pytest.raises(UserError):
        export_video(recording, folder / "out.video", **args)
    assert list(folder.iterdir()) == []


def test_hostile_text_is_drawn_as_plain_glyphs() -> None:
    assert clean("a\u202eb\u200bc\x00d\ne\tf\rg") == list("abc\ufffdd\ne\tf g")
    glyphs = Glyphs(14, 21, limit=500, scale=1.0)
    ids = glyphs.token("x" * 100_000)
    assert len(ids) == 500 and len(set(ids[:-1])) == 1
    for text in HOSTILE + ["\U0001F9EA\U0010FFFF\ud800", "\u0301" * 50]:
        cells = glyphs.render(np.array([[max(0, i) for i in glyphs.token(text)] or [0]]),
                              np.zeros((1, max(1, len(glyphs.token(text)))), np.int8))
        assert cells.shape[0] == glyphs.ch


def test_colours_come_from_the_theme_and_the_heatmap_reads_in_greyscale() -> None:
    """app/view/theme.json is the only place colours are written (player.css names none; the video reads its light
    half)."""
    css = (Path(__file__).resolve().parent.parent / "app" / "view" / "player" / "player.css").read_text()
    assert not re.findall(r"#[0-9a-fA-F]{3,8}\b|rgba?\(", css)
    c = HEAT.astype(float) / 255
    linear = np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
    y = linear @ np.array([0.2126, 0.7152, 0.0722])
    lightness = np.where(y > 0.008856, 116 * np.cbrt(y) - 16, 903.3 * y)
    gaps = np.abs(lightness[:, None] - lightness[None, :]) + 100 * np.eye(len(HEAT))
    assert gaps.min() >= 6, lightness.round(1)  # every cell state differs in greyscale too


def test_cli_writes_a_gif_and_reports_a_bad_file(recording: Path, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "cli.gif"
    assert cli_main([str(recording), "--out", str(out), "--fps", "5", "--width", str(MIN_SIZE[0]),
                     "--height", str(MIN_SIZE[1]), "--speed", "4", "--hold", "0"]) == 0
    assert f"wrote {out}" in capsys.readouterr().out
    assert gif_frames(out)[0] == math.ceil(2.0 / 4 * 5)
    bad = tmp_path / "bad.jsonl"
    bad.write_text("nope\n")
    assert cli_main([str(bad), "--format", "mp4", "--out", str(tmp_path / "bad.mp4")]) == 1
    assert "bad.jsonl is not a Converge recording" in capsys.readouterr().err
    assert not (tmp_path / "bad.mp4").exists()
    assert cli_main([str(recording), "--format", "gif", "--out", str(tmp_path / "x.mp4")]) == 2


def test_cli_draws_a_progress_bar_on_a_terminals_stderr(recording: Path, tmp_path: Path) -> None:
    import os
    import pty
    import subprocess
    import sys

    out = tmp_path / "bar.gif"
    leader, follower = pty.openpty()  # stderr is a terminal, as when a person runs the command
    proc = subprocess.Popen([sys.executable, "-m", "app", "export", str(recording), "--out", str(out), "--fps", "10",
                             "--width", str(MIN_SIZE[0]), "--height", str(MIN_SIZE[1]), "--hold", "0"],
                            cwd=Path(__file__).resolve().parent.parent, stdout=subprocess.PIPE, stderr=follower)
    os.close(follower)
    seen = b""
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        seen += chunk
    stdout, _ = proc.communicate(timeout=120)
    os.close(leader)
    assert proc.returncode == 0 and f"wrote {out}".encode() in stdout
    total = gif_frames(out)[0]
    lines = seen.decode().replace("\r\n", "\n").split("\r")
    assert lines[-1].strip() == f"[{'#' * 30}] 100% frame {total}/{total}"
    percents = [int(re.search(r"(\d+)% frame", line).group(1)) for line in lines if "% frame" in line]
    assert len(percents) > 2 and percents == sorted(percents)


def test_cli_without_a_terminal_writes_no_progress(recording: Path, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture) -> None:
    assert cli_main([str(recording), "--out", str(tmp_path / "quiet.gif"), "--fps", "5", "--width", str(MIN_SIZE[0]),
                     "--height", str(MIN_SIZE[1])]) == 0
    assert capsys.readouterr().err == ""


PLAYER_LEGEND_AND_AXES = """() => {
    const root = document.querySelector('#converge');
    const shown = (attr) => [...root.querySelectorAll(`.cv-legend [data-${attr}]`)].filter((n) => !n.hidden)
        .map((n) => n.dataset[attr]);
    const axes = ['left', 'right'].map((s) => {
        const wrap = root.querySelector(`.cv-side[data-side=${s}] .cv-heat-wrap`);
        const y = [...wrap.querySelectorAll('.cv-heat-y span')].map((n) => n.textContent);
        const x = [...wrap.querySelectorAll('.cv-heat-x span')].map((n) => n.textContent);
        return [y[0], y[2], y[1], x[2]];
    });
    return {names: [...shown('style'), ...shown('heat')].filter((n) => n !== 'inspected'), axes: axes};
}"""


@pytest.mark.browser
@pytest.mark.parametrize("example", ["01-confidence-blocks", "04-mercury-wire-format"])
def test_the_video_legend_lists_only_what_occurs_and_labels_the_heatmaps_axes_as_the_player(
        browser: object, tmp_path: Path, example: str) -> None:
    from app.export.html import export_html
    from app.trace.store import EXAMPLES_DIR
    from tests.pages import browser_tab

    path = EXAMPLES_DIR / f"{example}.jsonl"
    with browser_tab(browser, export_html(path, tmp_path / "x.html").as_uri()) as tab:
        tab.wait_for_selector("#converge[data-status=done][data-mode=replay]")
        player = tab.evaluate(PLAYER_LEGEND_AND_AXES)
    scene = Scene(load(path), (1280, 720))
    assert sorted(scene.legend_names) == sorted(player["names"])  # the player's legend: only what occurs
    assert "remasked" not in scene.legend_names  # neither example remasks (the legend once listed it anyway)
    assert [list(tr.axes()) for tr in scene.tracks] == player["axes"]


def test_the_heatmaps_axes_are_drawn_beside_and_under_each_heatmap(recording: Path) -> None:
    scene = Scene(load(recording), (1280, 720))
    for (x, y, _, _), tr in zip(scene.panels, scene.tracks):
        assert tr.axes()[0] == f"{tr.frames[0].t:.2f} s" and tr.axes()[3] == str(tr.width - 1)
        beside = scene.canvas[y + scene.heat_y:y + scene.heat_y + scene.heat_h,
                              x + scene.inner_x:x + scene.heat_x - scene.px(7)]
        under = scene.canvas[y + scene.heat_y + scene.heat_h + 2:y + scene.heat_y + scene.heat_h + scene.axis_h,
                             x + scene.heat_x:x + scene.heat_x + scene.heat_w]
        ink = lambda pixels: int((pixels == np.array(FG, np.uint8)).all(axis=2).sum())  # noqa: E731
        assert ink(beside) > 0 and ink(under) > 0  # the first and last frame's time, 0 and the last position
