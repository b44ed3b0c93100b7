"""Schema 2's states on screen: the player's panels, legend, heatmap and inspector, the HTML export, and the GIF and
MP4 frames, for a uniform-state side (noise, drafts, accepted tokens, edits, re-noising, insertions, deletions) raced
against an autoregressive side."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from app.export.html import export_html
from app.export.video import Scene, load
from app.trace.frames import Frame, Recording, make_header, write_recording
from app.view.payload import recording_payload
from app.view.side import DELETED, DRAFT, EDITED, INSERTED, NEW, NOISE, RENOISED, cell_styles, recorded_sides
from app.view.theme import THEME, hex_rgb, rgb
from tests.pages import browser_tab, step_to
from tests.test_states import uniform_frames

ROOT = "#converge"


def ar_frames() -> list[Frame]:
    words = ["The", " big", " dog", " sat", "."]
    return [Frame(t=t, step=k, tokens=words[:k + 1], nfe=k + 1, final=k == 4)
            for k, t in enumerate((0.1, 0.2, 0.3, 0.4, 0.5))]


def race(tmp_path: Path, left: list[Frame] | None = None) -> Path:
    """A recording of a uniform-state side (left) against an autoregressive one (right)."""
    rec = Recording(header=make_header("A dog", {"left": {"name": "uniform", "settings": {}},
                                                 "right": {"name": "ar", "settings": {}}}),
                    frames={"left": left or uniform_frames(), "right": ar_frames()},
                    ends={"left": {"status": "done"}, "right": {"status": "done"}}, warnings=[])
    return write_recording(rec, tmp_path / "states.jsonl")


def test_each_state_has_its_own_cell_style(tmp_path: Path) -> None:
    rows = recorded_sides(load(race(tmp_path)))["left"].rows
    assert cell_styles(rows[0], False)[0] == NOISE
    assert cell_styles(rows[2], False)[1] == NEW  # a draft over noise is news this frame
    assert cell_styles(rows[3], False)[2] == EDITED
    assert cell_styles(rows[4], False)[2] == RENOISED
    assert cell_styles(rows[5], False)[1] == INSERTED
    assert cell_styles(rows[5], False)[3] == INSERTED
    unchanged_draft = recorded_sides(load(race(tmp_path, [
        Frame(t=0.1, step=0, tokens=["a", "b"], states="dn"), Frame(t=0.2, step=1, tokens=["a", "b"], states="dn")])))
    assert cell_styles(unchanged_draft["left"].rows[1], False) == [DRAFT, NOISE]


def test_the_payload_carries_states_and_deleted_tokens(tmp_path: Path) -> None:
    payload = recording_payload(load(race(tmp_path)), run="t")
    rows = payload["sides"]["left"]["rows"]
    assert rows[0]["st"] == "nnn" and rows[5]["dl"] == [[2, 4, "w"]] and "back" not in rows[5]
    assert "st" not in payload["sides"]["right"]["rows"][0]
    assert [round(v, 2) for _, v in payload["sides"]["left"]["settled"]] == [0.0, 0.2, 0.2, 0.4, 0.4, 0.6, 1.0]


def test_the_payload_carries_each_positions_entropy_with_nulls(tmp_path: Path) -> None:
    left = [Frame(t=0.1, step=0, tokens=["qx", "zz"], states="nn"),
            Frame(t=0.2, step=1, tokens=["a", "zz"], states="an", entropy=[0.4321, 2.5]),
            Frame(t=0.3, step=2, tokens=["a", "b"], states="aa", entropy=[None, 1.236], final=True)]
    payload = recording_payload(load(race(tmp_path, left)), run="t")
    rows = payload["sides"]["left"]["rows"]
    assert "en" not in rows[0] and rows[1]["en"] == [0.43, 2.5] and rows[2]["en"] == [None, 1.24]
    assert all("en" not in row for row in payload["sides"]["right"]["rows"])


def test_the_html_export_holds_the_states(tmp_path: Path) -> None:
    text = export_html(race(tmp_path), tmp_path / "states.html").read_text(encoding="utf-8")
    assert '"st":"nnn"' in text and '"dl":[[2,4,"w"]]' in text and ".cv-tok.cv-z" in text


def shown(tab: Any, side: str) -> dict[str, Any]:
    return tab.evaluate("""(side) => {
        const root = document.querySelector('#converge');
        const text = root.querySelector(`.cv-side[data-side=${side}] .cv-text`);
        const runs = [...text.querySelectorAll('.cv-tok')].map((n) => [n.className, n.textContent]);
        const legend = [...root.querySelectorAll('.cv-legend [data-style]')].filter((n) => !n.hidden)
            .map((n) => n.dataset.style);
        const heat = [...root.querySelectorAll('.cv-legend [data-heat]')].filter((n) => !n.hidden)
            .map((n) => n.dataset.heat);
        const s = root.convergePlayer.state.sides[side];
        const noise = text.querySelector('.cv-z');
        return {runs, legend, heat, text: text.textContent, cols: s.heatW,
                row5: [...Array(s.heatW).keys()].map((c) => s.heat[5 * s.heatW + c]),
                font: noise && getComputedStyle(noise).fontStyle, colour: noise && getComputedStyle(noise).color};
    }""", side)


def heat32(name: str) -> int:
    r, g, b = hex_rgb(THEME["heat"][name])
    return 255 << 24 | b << 16 | g << 8 | r


@pytest.mark.browser
def test_the_player_draws_each_state_and_lists_only_the_states_that_occur(browser: Any, tmp_path: Path) -> None:
    out = export_html(race(tmp_path), tmp_path / "states.html")
    with browser_tab(browser, out.as_uri()) as tab:
        tab.wait_for_selector(f"{ROOT}[data-status=done][data-mode=replay]")
        step_to(tab, 0)  # the shared timeline's first key is the left side's first frame
        first = shown(tab, "left")
        assert [c for c, _ in first["runs"]] == ["cv-tok cv-z"] and first["text"] == "xqz"
        assert first["font"] == "italic" and first["colour"] == "rgb({}, {}, {})".format(*rgb("noise"))
        step_to(tab, 4)  # left frame 4: "mat" re-noised to "w"
        assert ["cv-tok cv-z cv-rn", "w"] in shown(tab, "left")["runs"]
        step_to(tab, 5)  # left frame 5: "big" and "sat" inserted, "w" deleted (struck through at the end)
        five = shown(tab, "left")
        assert five["runs"] == [["cv-tok cv-i", "big"], ["cv-tok cv-i", "sat"], ["cv-tok cv-x", "w"]]
        assert five["text"] == "Thebigdogsatw"
        assert five["cols"] == 6  # columns follow each position: "w" keeps its own, deleted in this row
        assert five["row5"] == [heat32(x) for x in ("unchanged", "inserted", "unchanged", "inserted", "empty",
                                                    "deleted")]
        legend = set(five["legend"])
        assert {"noise", "draft", "edited", "renoised", "inserted", "deleted"} <= legend
        assert "remasked" not in legend and "masked" not in legend and "pinned" not in legend
        assert {"noise", "drafted", "edited", "renoised", "inserted", "deleted"} <= set(five["heat"])
        assert "given" not in five["heat"] and "remasked" not in five["heat"]


@pytest.mark.browser
def test_the_inspector_follows_a_position_across_an_insertion(browser: Any, tmp_path: Path) -> None:
    out = export_html(race(tmp_path), tmp_path / "states.html")
    with browser_tab(browser, out.as_uri()) as tab:
        tab.wait_for_selector(f"{ROOT}[data-status=done][data-mode=replay]")
        step_to(tab, 6)
        tab.locator(f"{ROOT} .cv-insp-pos").fill("2")  # "dog" in the last frame: position 1 before the insertion
        tab.wait_for_selector(f"{ROOT} .cv-inspector[data-pos='2']")
        events = tab.evaluate(f"[...document.querySelectorAll('{ROOT} .cv-insp-event')].map((n) => n.textContent)")
        assert [e.split(" \u00b7 ")[1] for e in events] == ["frame 3", "frame 4"]
        assert "drafted \u201cdog\u201d" in events[0] and "accepted \u201cdog\u201d" in events[1]
        step_to(tab, 0)  # the first frame, where this position was noise
        now = tab.text_content(f"{ROOT} .cv-insp-now")
        assert "\u201cq\u201d" in now and THEME["styles"]["noise"]["label"] in now


def colour_share(scene: Scene, colour: tuple[int, int, int], box: tuple[int, int, int, int]) -> int:
    x0, y0, x1, y1 = box
    return int(np.all(scene.canvas[y0:y1, x0:x1] == np.array(colour, np.uint8), axis=-1).sum())


def test_video_frames_draw_noise_unlike_accepted_text(tmp_path: Path) -> None:
    scene = Scene(load(race(tmp_path)), (1280, 720))
    x0, y0, w, _ = scene.panels[0]
    box = (x0 + scene.grid_x, y0 + scene.grid_y, x0 + scene.grid_x + w // 2, y0 + scene.grid_y + scene.glyphs.ch)
    scene.draw(0.1)  # all noise
    noisy_ink = colour_share(scene, rgb("noise"), box)
    noisy_fg = colour_share(scene, rgb("fg"), box)
    scene.draw(0.45)  # "The dog" accepted and unchanged, "w" noise
    assert noisy_ink > 0 and noisy_fg == 0
    assert colour_share(scene, rgb("fg"), box) > 0
    scene.draw(0.6)  # "w" deleted: struck through in the deleted colour
    assert colour_share(scene, rgb("deleted"), box) > 0


def test_a_schema_1_race_draws_no_schema_2_legend_entries(tmp_path: Path) -> None:
    plain = Scene(load(race(tmp_path, ar_frames())), (1280, 720))
    states = Scene(load(race(tmp_path)), (1280, 720))
    assert len(states.legend_items) > len(plain.legend_items)
    assert json.dumps(recording_payload(load(race(tmp_path, ar_frames())), run="x")).count('"st"') == 0
    assert DELETED > NOISE


def noisy_start(tmp_path: Path) -> Path:
    """The uniform race with its all-noise canvas at t = 0, the first picture a video draws."""
    return race(tmp_path, [Frame(t=0.0, step=0, tokens=["x", "q", "z"], states="nnn")] + uniform_frames()[1:])


def text_area(path: Path, size: tuple[int, int]) -> tuple[slice, slice]:
    scene = Scene(load(path), size)
    x0, y0, w, _ = scene.panels[0]
    return (slice(y0 + scene.grid_y, y0 + scene.grid_y + scene.glyphs.ch),
            slice(x0 + scene.grid_x, x0 + scene.grid_x + w // 2))


def near(picture: np.ndarray, colour: tuple[int, int, int], within: int) -> int:
    return int((np.abs(picture.astype(np.int16) - np.array(colour)).max(axis=-1) <= within).sum())


def test_a_gif_draws_noise_in_its_own_colour_and_accepted_text_in_ink(tmp_path: Path) -> None:
    from app.export.video import export_video

    path = noisy_start(tmp_path)
    out = export_video(path, tmp_path / "states.gif", fmt="gif", fps=10, size=(640, 360))
    rows, cols = text_area(path, (640, 360))
    with Image.open(out) as im:
        im.seek(0)
        first = np.asarray(im.convert("RGB"))[rows, cols]
        im.seek(im.n_frames - 1)
        last = np.asarray(im.convert("RGB"))[rows, cols]
    assert near(first, rgb("noise"), 8) > 0 and near(first, rgb("fg"), 40) == 0
    assert near(last, rgb("fg"), 40) > 0


def test_an_mp4_draws_noise_lighter_than_accepted_text(tmp_path: Path) -> None:
    imageio_ffmpeg = pytest.importorskip("imageio_ffmpeg")
    from app.export.video import export_video

    path = noisy_start(tmp_path)
    size = (640, 360)
    out = export_video(path, tmp_path / "states.mp4", fmt="mp4", fps=10, size=size)
    rows, cols = text_area(path, size)
    reader = imageio_ffmpeg.read_frames(str(out))
    next(reader)
    pictures = [np.frombuffer(raw, np.uint8).reshape(size[1], size[0], 3)[rows, cols] for raw in reader]
    dark = [int((p.max(axis=-1) < 90).sum()) for p in pictures]
    assert dark[0] == 0 and dark[-1] > 0  # noise is never drawn in the accepted tokens' ink


def test_the_video_heatmap_keeps_each_position_in_its_column(tmp_path: Path) -> None:
    from app.export.video.palette import H_DELETED, HEAT_NAMES

    scene = Scene(load(race(tmp_path)), (1280, 720))
    strip = scene.tracks[0].heat
    assert strip is not None and strip.positions == 6
    scene.draw(0.6)  # left frame 5: "w" deleted in its own (last) column, "big" and "sat" inserted in theirs
    r0, _ = strip.span(5)
    row = strip.cells[r0]
    last = strip.starts >= 5
    assert (row[last] == H_DELETED).all()
    assert (row[(strip.starts >= 1) & (strip.starts < 2)] == HEAT_NAMES.index("inserted")).all()


@pytest.mark.browser
def test_a_deleted_token_is_drawn_as_text_never_as_html(browser: Any, tmp_path: Path) -> None:
    hostile = "<img src=x onerror=document.title='owned'>"
    out = export_html(race(tmp_path, [Frame(t=0.1, step=0, tokens=[hostile, "b"], states="aa"),
                                      Frame(t=0.2, step=1, tokens=["b"], states="a", deleted=[0])]),
                      tmp_path / "hostile.html")
    with browser_tab(browser, out.as_uri()) as tab:
        tab.wait_for_selector(f"{ROOT}[data-status=done][data-mode=replay]")
        step_to(tab, 1)
        struck = tab.text_content(f"{ROOT} .cv-side[data-side=left] .cv-x")
        assert struck == hostile and tab.locator(f"{ROOT} img").count() == 0 and tab.title() != "owned"


def shrinking_text() -> list[Frame]:
    """Mercury-like snapshots: noise settles, then the answer shrinks ("the file" becomes "it")."""
    return [Frame(t=0.1, step=0, text="I wYll r%ad"), Frame(t=0.2, step=1, text="I will read the file."),
            Frame(t=0.3, step=2, text="I will read it.", final=True)]


@pytest.mark.browser
def test_a_text_snapshot_that_shrinks_shows_what_it_dropped_struck_through(browser: Any, tmp_path: Path) -> None:
    out = export_html(race(tmp_path, shrinking_text()), tmp_path / "text.html")
    with browser_tab(browser, out.as_uri()) as tab:
        tab.wait_for_selector(f"{ROOT}[data-status=done][data-mode=replay]")
        step_to(tab, 1)
        assert tab.locator(f"{ROOT} .cv-side[data-side=left] .cv-x").count() == 0
        step_to(tab, 2)
        now = shown(tab, "left")
        assert ["cv-tok cv-x", " file"] in now["runs"] and now["text"] == "I will read it file."
        assert "deleted" in now["legend"] and "deleted" in now["heat"]
        row = tab.evaluate("""() => { const s = document.querySelector('#converge').convergePlayer.state.sides.left;
            return [...Array(s.heatW).keys()].map((c) => s.heat[2 * s.heatW + c]); }""")
        assert row[8:10] == [heat32("deleted")] * 2 and len(row) == 10  # two cells past its eight tokens


def test_the_video_draws_a_shrinking_text_snapshots_deletions(tmp_path: Path) -> None:
    from app.export.video.palette import H_DELETED

    scene = Scene(load(race(tmp_path, shrinking_text())), (1280, 720))
    strip = scene.tracks[0].heat
    assert strip is not None
    scene.draw(0.3)
    r0, _ = strip.span(2)
    assert (strip.cells[r0][strip.starts >= 8] == H_DELETED).all()
    assert len(scene.legend_items) > len(Scene(load(race(tmp_path, shrinking_text()[:2])), (1280, 720)).legend_items)
