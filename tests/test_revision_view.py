"""A race that started from a draft (issue 53, item 4) on screen: the revision letters read by analysis, the kept,
edited and re-noised cell states in the payload, the panels, the heatmap, the inspector, the chart, the legend and the
metrics table, and the HTML, GIF and MP4 exports; a side that can only keep a prefix says so in its panel."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from app.analysis.changes import metrics
from app.engine.draft import Plan, Revision, letters
from app.export.html import export_html
from app.export.video import Scene, export_video, load
from app.export.video.palette import H_REVISED, HEAT, REOPENED_MARK, REVISED_MARK
from app.export.video.track import HeatStrip
from app.trace.frames import Frame, Recording, make_header, write_recording
from app.view.payload import recording_payload
from app.view.side import KEPT, MASKED, NEW, REOPENED, REVISED, UNCHANGED, cell_styles, recorded_sides
from app.view.theme import THEME, hex_rgb
from tests.pages import browser_tab, step_to

ROOT = "#converge"
DRAFT = ["The", " cat", " sat", " on", " the", " mat", "."]
RENOISED = (1, 5)  # " cat" and " mat" re-noised: the masked side fills them again
PREFIX = 1  # the AR side keeps the draft up to its first re-noised position


def masked_frames() -> list[Frame]:
    """A masked side that starts from the draft with positions 1 and 5 re-masked, fills 1 with " dog" (edited from
    the draft) and 5 with " mat" again (kept); each frame's letters from app/engine/draft.py letters."""
    canvases = [["The", "", " sat", " on", " the", "", "."],
                ["The", " dog", " sat", " on", " the", "", "."],
                ["The", " dog", " sat", " on", " the", " mat", "."]]
    out = []
    for k, tokens in enumerate(canvases):
        masked = [t == "" for t in tokens]
        out.append(Frame(t=0.1 * (k + 1), step=k, tokens=tokens, masked=masked, nfe=k + 1, final=k == 2,
                         revision=letters(DRAFT, RENOISED, tokens, masked)))
    return out


def prefix_frames() -> list[Frame]:
    """An autoregressive side that keeps the draft's first token and writes the rest again."""
    words = ["The", " dog", " ran", "."]
    return [Frame(t=0.1 * (k + 1), step=k, tokens=words[:k + 1], nfe=k + 1, final=k == 3,
                  revision=letters(DRAFT, RENOISED, words[:k + 1], [False] * (k + 1))) for k in range(4)]


PREFIX_NOTE = "Kept the draft's first token as its prompt's continuation and wrote the rest again."


def revising_race(tmp_path: Path, name: str = "revise.jsonl") -> Path:
    """A schema 2 recording of a race from a draft, written as docs/recording.md says: the header's `draft`, each
    side's plan in its source entry, and `revision` letters on every frame."""
    masked_plan = Plan(tokens=tuple(range(len(DRAFT))), renoised=RENOISED).to_json(DRAFT)
    ar_plan = Plan(tokens=tuple(range(len(DRAFT))), renoised=RENOISED, mode="prefix", kept_prefix=PREFIX,
                   note=PREFIX_NOTE).to_json(DRAFT)
    header = make_header("A pet", {"left": {"name": "local-diffusion", "settings": {}, "draft": masked_plan},
                                   "right": {"name": "local-ar", "settings": {}, "draft": ar_plan}})
    header["draft"] = Revision("".join(DRAFT), share=2 / 7, where="random", seed=3).to_json()
    rec = Recording(header=header, frames={"left": masked_frames(), "right": prefix_frames()},
                    ends={"left": {"status": "done"}, "right": {"status": "done"}}, warnings=[])
    return write_recording(rec, tmp_path / name)


def plain_race(tmp_path: Path) -> Path:
    """The same race without a draft: no letters, no plans (every recording before issue 53)."""
    def bare(frames: list[Frame]) -> list[Frame]:
        for f in frames:
            f.revision = None
        return frames
    rec = Recording(header=make_header("A pet", {"left": {"name": "local-diffusion", "settings": {}},
                                                 "right": {"name": "local-ar", "settings": {}}}),
                    frames={"left": bare(masked_frames()), "right": bare(prefix_frames())},
                    ends={"left": {"status": "done"}, "right": {"status": "done"}}, warnings=[])
    return write_recording(rec, tmp_path / "plain.jsonl")


def test_a_frames_revision_letters_are_read_and_checked() -> None:
    frame = Frame.from_json({"t": 0.1, "step": 0, "tokens": ["a", "b", "c"], "revision": "ke."})
    assert frame.revision == "ke."
    for bad in ("kx.", "ke", 3):
        with pytest.raises(ValueError, match="revision"):
            Frame.from_json({"t": 0.1, "step": 0, "tokens": ["a", "b", "c"], "revision": bad})
    assert Frame.from_json({"t": 0.1, "step": 0, "tokens": ["a"]}).revision is None


def test_each_revision_letter_has_its_own_cell_style(tmp_path: Path) -> None:
    rows = recorded_sides(load(revising_race(tmp_path)))["left"].rows
    assert rows[0]["rv"] == "krkkkrk"
    # the first frame is the draft: its kept tokens stood before the run, so they are kept, not new
    assert cell_styles(rows[0], False) == [KEPT, REOPENED, KEPT, KEPT, KEPT, REOPENED, KEPT]
    assert cell_styles(rows[1], False)[1] == NEW and cell_styles(rows[1], False)[5] == REOPENED
    last = cell_styles(rows[2], True)
    assert last[1] == REVISED and last[5] == NEW and last[0] == KEPT
    plain = recorded_sides(load(plain_race(tmp_path)))["left"].rows
    assert "rv" not in plain[0] and cell_styles(plain[0], False)[:2] == [NEW, MASKED]
    assert cell_styles(plain[2], True)[1] == UNCHANGED


def test_the_metrics_count_what_each_side_kept_from_the_draft_and_edited(tmp_path: Path) -> None:
    sides = recorded_sides(load(revising_race(tmp_path)))
    left, right = sides["left"].done["metrics"], sides["right"].done["metrics"]
    assert (left["draft_kept"], left["draft_edited"], left["draft_positions"]) == (6, 1, 7)
    assert (right["draft_kept"], right["draft_edited"], right["draft_positions"]) == (1, 3, 4)
    plain = recorded_sides(load(plain_race(tmp_path)))["left"].done["metrics"]
    assert "draft_kept" not in plain and "draft_edited" not in plain
    assert metrics(masked_frames())["draft_kept"] == 6


def test_the_payload_carries_the_letters_and_each_sides_draft(tmp_path: Path) -> None:
    payload = recording_payload(load(revising_race(tmp_path)), run="t")
    left, right = payload["sides"]["left"], payload["sides"]["right"]
    assert [row["rv"] for row in left["rows"]] == ["krkkkrk", "kekkkrk", "kekkkkk"]
    assert left["draft"]["mode"] == "revise" and left["draft"]["tokens"] == DRAFT
    assert left["draft"]["renoised"] == [1, 5]
    assert left["draft"]["line"] == ("Started from the draft: 2 of its 7 tokens re-noised, the rest kept as written "
                                     "until the model revises them.")
    assert right["draft"]["mode"] == "prefix" and right["draft"]["line"] == PREFIX_NOTE
    plain = json.dumps(recording_payload(load(plain_race(tmp_path)), run="t"))
    assert '"rv"' not in plain and '"draft"' not in plain


def test_a_side_that_cannot_revise_or_keeps_a_prefix_without_a_note_says_so(tmp_path: Path) -> None:
    path = revising_race(tmp_path)
    rec = load(path)
    rec.header["sources"]["right"]["draft"] = {"mode": "prefix", "renoised": [1, 5], "length": 7, "kept_prefix": 1}
    assert recorded_sides(rec)["right"].draft["line"] == (  # type: ignore[index]
        "Kept the draft's first 1 token and wrote the rest again: an autoregressive model cannot revise in place.")
    note = "Mercury cannot start from a draft: it writes from the prompt alone."
    rec.header["sources"]["right"]["draft"] = {"mode": "cannot", "renoised": [], "length": 7, "note": note}
    assert recorded_sides(rec)["right"].draft["line"] == note  # type: ignore[index]
    rec.header["sources"]["right"]["draft"] = {"mode": "sideways"}  # a damaged plan draws nothing
    assert recorded_sides(rec)["right"].draft is None


def test_the_html_export_holds_the_revision(tmp_path: Path) -> None:
    text = export_html(revising_race(tmp_path), tmp_path / "revise.html").read_text(encoding="utf-8")
    assert '"rv":"krkkkrk"' in text and ".cv-tok.cv-k" in text and PREFIX_NOTE in text


def test_the_video_heatmap_gives_a_token_edited_from_the_draft_its_own_cell(tmp_path: Path) -> None:
    rows = recorded_sides(load(revising_race(tmp_path)))["left"].rows
    strip = HeatStrip(7, 3, 7, 3, frozenset())
    for row in rows:
        strip.add(row)
    assert strip.cells[2, 1] == H_REVISED and strip.cells[0, 1] != H_REVISED
    assert tuple(strip.pixels[2, 1]) == hex_rgb(THEME["heat"]["revised"]) and tuple(HEAT[H_REVISED]) != tuple(
        HEAT[strip.cells[2, 0]])


def text_box(scene: Scene, side: int) -> tuple[slice, slice]:
    x0, y0, w, _ = scene.panels[side]
    return (slice(y0 + scene.grid_y, y0 + scene.grid_y + 2 * scene.glyphs.ch),
            slice(x0 + scene.grid_x, x0 + scene.grid_x + w - 2 * scene.grid_x))


def count(picture: np.ndarray, colour: tuple[int, int, int], within: int = 0) -> int:
    return int((np.abs(picture.astype(np.int16) - np.array(colour)).max(axis=-1) <= within).sum())


def test_video_frames_draw_the_draft_states_and_list_them_in_the_legend(tmp_path: Path) -> None:
    scene = Scene(load(revising_race(tmp_path)), (1280, 720))
    assert {"kept", "revised", "reopened"} <= set(scene.legend_names)
    rows, cols = text_box(scene, 0)
    scene.draw(0.1)  # the draft, " cat" and " mat" re-noised: dashed underlines, no edit yet
    assert count(scene.canvas[rows, cols], REOPENED_MARK) > 0 and count(scene.canvas[rows, cols], REVISED_MARK) == 0
    scene.draw(0.35)  # the end: " dog" is edited from the draft, nothing is open
    assert count(scene.canvas[rows, cols], REVISED_MARK) > 0 and count(scene.canvas[rows, cols], REOPENED_MARK) == 0
    plain = Scene(load(plain_race(tmp_path)), (1280, 720))
    assert not {"kept", "revised", "reopened"} & set(plain.legend_names)


def test_the_video_writes_each_sides_draft_line_under_its_title(tmp_path: Path) -> None:
    def strip(path: Path) -> int:
        scene = Scene(load(path), (1280, 720))
        scene.draw(0.35)
        x0, y0, _, _ = scene.panels[1]  # the prefix side: its note
        box = scene.canvas[y0 + scene.msg_y:y0 + scene.msg_y + scene.msg_h, x0 + scene.inner_x:x0 + scene.inner_x
                           + scene.inner_w]
        return int((box.min(axis=-1) < 128).sum())  # ink on the white strip
    assert strip(revising_race(tmp_path)) > 0 and strip(plain_race(tmp_path)) == 0


def test_a_gif_holds_the_draft_states_colours(tmp_path: Path) -> None:
    path = revising_race(tmp_path)
    out = export_video(path, tmp_path / "revise.gif", fmt="gif", fps=10, size=(640, 360))
    rows, cols = text_box(Scene(load(path), (640, 360)), 0)
    with Image.open(out) as im:
        im.seek(im.n_frames - 1)
        last = np.asarray(im.convert("RGB"))[rows, cols]
    assert count(last, REVISED_MARK, within=12) > 0


def mp4_pictures(path: Path, tmp_path: Path, size: tuple[int, int]) -> list[np.ndarray]:
    imageio_ffmpeg = pytest.importorskip("imageio_ffmpeg")
    out = export_video(path, tmp_path / (path.stem + ".mp4"), fmt="mp4", fps=10, size=size)
    rows, cols = text_box(Scene(load(path), size), 0)
    return [np.frombuffer(raw, np.uint8).reshape(size[1], size[0], 3)[rows, cols]
            for raw in list(imageio_ffmpeg.read_frames(str(out)))[1:]]


def orange(picture: np.ndarray) -> int:
    """Pixels of the reopened mark's hue after the MP4's colour subsampling: red well above blue."""
    q = picture.astype(np.int16)
    return int((q[..., 0] - q[..., 2] > 60).sum())


def green(picture: np.ndarray) -> int:
    """Pixels of the revised mark's hue after the MP4's colour subsampling: green above red and blue."""
    q = picture.astype(np.int16)
    return int(((q[..., 1] - q[..., 0] > 30) & (q[..., 1] - q[..., 2] > 10)).sum())


def test_an_mp4_draws_the_reopened_and_revised_marks_where_a_plain_race_has_none(tmp_path: Path) -> None:
    assert REOPENED_MARK[0] - REOPENED_MARK[2] > 60 and REVISED_MARK[1] - REVISED_MARK[0] > 30  # the hues sought
    size = (1280, 720)
    revised = mp4_pictures(revising_race(tmp_path), tmp_path, size)  # one picture at 0, 0.1, 0.2 and 0.3 s
    plain = mp4_pictures(plain_race(tmp_path), tmp_path, size)
    assert [orange(p) > 0 for p in revised] == [False, True, True, False]  # " cat" or " mat" open at 0.1 and 0.2 s
    assert green(revised[-1]) > 0 and not any(orange(p) or green(p) for p in plain)


def shown(tab: Any) -> dict[str, Any]:
    return tab.evaluate("""() => {
        const root = document.querySelector('#converge');
        const runs = (side) => [...root.querySelectorAll(`.cv-side[data-side=${side}] .cv-text .cv-tok`)]
            .map((n) => [n.className, n.textContent]);
        const visible = (sel, key) => [...root.querySelectorAll(sel)].filter((n) => !n.hidden)
            .map((n) => n.dataset[key]);
        const note = (side) => root.querySelector(`.cv-side[data-side=${side}] .cv-draft-note`);
        const metric = (key) => {
            const row = root.querySelector(`tr[data-metric=${key}]`);
            return row.hidden ? null : [...row.querySelectorAll('td')].map((n) => n.textContent);
        };
        return {left: runs('left'), right: runs('right'), legend: visible('.cv-legend [data-style]', 'style'),
                heat: visible('.cv-legend [data-heat]', 'heat'),
                notes: ['left', 'right'].map((s) => note(s).hidden ? null : note(s).textContent),
                kept: metric('draft_kept'), edited: metric('draft_edited'),
                chart: root.querySelector('.cv-chart').dataset.draftLeft,
                chartNote: root.querySelector('.cv-chart-note').textContent};
    }""")


@pytest.mark.browser
def test_the_player_draws_the_draft_states_legend_notes_metrics_and_history(browser: Any, tmp_path: Path) -> None:
    out = export_html(revising_race(tmp_path), tmp_path / "revise.html")
    with browser_tab(browser, out.as_uri()) as tab:
        tab.wait_for_selector(f"{ROOT}[data-status=done][data-mode=replay]")
        step_to(tab, 3, 2)  # the last key: both sides finished
        end = shown(tab)
        assert ["cv-tok cv-v", " dog"] in end["left"]  # edited from the draft
        assert ["cv-tok cv-k", "The"] in end["left"]  # kept from the draft
        assert {"kept", "revised", "reopened"} <= set(end["legend"]) and "revised" in end["heat"]
        assert "noise" not in end["legend"] and "pinned" not in end["legend"]
        assert end["notes"][1] == PREFIX_NOTE and end["notes"][0].startswith("Started from the draft: 2 of its 7")
        assert end["kept"] == ["6 of 7", "1 of 4"] and end["edited"] == ["1", "3"]
        assert end["chart"] == f"{6 / 7:.3f}" and "kept from the draft" in end["chartNote"]
        step_to(tab, 0, 0)  # the first frame: the draft, " cat" and " mat" re-noised
        first = shown(tab)["left"]
        assert ["cv-tok cv-m cv-o", THEME["mask"]] in first  # " cat" re-noised, still open
        assert all(c in ("cv-tok cv-k", "cv-tok cv-m cv-o") for c, _ in first)
        tab.locator(f"{ROOT} .cv-insp-pos").fill("1")
        tab.wait_for_selector(f"{ROOT} .cv-inspector[data-pos='1']")
        events = tab.evaluate(f"[...document.querySelectorAll('{ROOT} .cv-insp-event')].map((n) => n.textContent)")
        assert events[0] == "before the run the draft's \u201c\u2423cat\u201d, re-noised at the start"
        assert THEME["styles"]["reopened"]["label"] in tab.text_content(f"{ROOT} .cv-insp-now")
        step_to(tab, 3, 2)
        now = tab.text_content(f"{ROOT} .cv-insp-now")
        assert THEME["styles"]["revised"]["label"] in now and "the draft had \u201c\u2423cat\u201d" in now


@pytest.mark.browser
def test_a_race_without_a_draft_shows_none_of_the_draft_parts(browser: Any, tmp_path: Path) -> None:
    out = export_html(plain_race(tmp_path), tmp_path / "plain.html")
    with browser_tab(browser, out.as_uri()) as tab:
        tab.wait_for_selector(f"{ROOT}[data-status=done][data-mode=replay]")
        end = shown(tab)
        assert not {"kept", "revised", "reopened"} & set(end["legend"]) and "revised" not in end["heat"]
        assert end["notes"] == [None, None] and end["kept"] is None and end["edited"] is None
        assert not any("cv-k" in c.split() or "cv-v" in c.split() for c, _ in end["left"])
        assert not end["chart"] and "draft" not in end["chartNote"]
