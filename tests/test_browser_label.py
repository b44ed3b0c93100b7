"""A race saved from a visitor's browser (app/ui/browser_race.py `keep`) is labelled as the visitor's word wherever a
run is shown: the library's table and picker, the presenter's picker, the player (on the page, in Chromium), and every
export (the HTML file's data and note, the line the GIF and the MP4 draw under the prompt, the CSV's source column).
The label's words come from one place (app/trace/frames.py `RAN_ELSEWHERE`, `RAN_ELSEWHERE_MEANS`); a race run on the
server carries none of them."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from app.analysis.tables import write_frames_csv
from app.export.html import export_html
from app.export.video import export_video
from app.export.video.scene import Scene
from app.export.video.track import load
from app.serving.policy import LOCAL
from app.sources.local import make_local_ar, make_local_diffusion
from app.trace.frames import RAN_ELSEWHERE, RAN_ELSEWHERE_MEANS, write_recording
from app.trace.reading import read_recording
from app.ui.browser_race import keep
from app.ui.library_ui import library_view, picker_entries
from app.ui.visitor import Visitor
from app.view.payload import load_payload
from tests.fixtures import needs_twins
from tests.test_browser_keep import PROMPT, packed, side
from tests.test_ui import LIB_ROWS, ROOT, examples, open_tab, wait_rows  # noqa: F401 (page fixtures)

pytestmark = needs_twins
SIZE = (480, 270)


@pytest.fixture(scope="module")
def race() -> dict[str, Any]:
    return {"prompt": PROMPT, "sides": {"left": side(make_local_diffusion), "right": side(make_local_ar)}}


@pytest.fixture
def kept(race: dict[str, Any], recordings: Path) -> Path:
    """The race saved as the page saves a browser race, in the local page's library (the recordings folder)."""
    *_, current, said = keep(Visitor(LOCAL), packed(race))
    assert said.startswith("Saved the race run in your browser")
    return Path(current)


@pytest.fixture
def server_run(kept: Path, tmp_path: Path) -> Path:
    """The same race as if this server had run it: the header without `ran_in`."""
    rec = read_recording(kept)
    rec.header.pop("ran_in")
    return write_recording(rec, tmp_path / "server-run.jsonl")


def test_the_library_and_the_presenter_picker_say_it_ran_in_a_visitors_browser(kept: Path, server_run: Path,
                                                                              recordings: Path) -> None:
    table, pick, ids = library_view(Visitor(LOCAL))
    rows = {row[0]: row for row in table["value"]}
    assert rows[kept.name][3] == f"local-diffusion vs local-ar ({RAN_ELSEWHERE})"  # the Sources column
    choices = dict((value, text) for text, value in pick["choices"])
    assert RAN_ELSEWHERE in choices[f"user/{kept.name}"]
    entries = {e["id"]: e for e in json.loads(picker_entries(Visitor(LOCAL), ids))}
    assert RAN_ELSEWHERE in entries[f"user/{kept.name}"]["sources"]
    assert entries[f"user/{kept.name}"]["name"].endswith(f" ({RAN_ELSEWHERE})")
    (recordings / server_run.name).write_bytes(server_run.read_bytes())  # a run of the server's: no label
    table, _, _ = library_view(Visitor(LOCAL))
    assert [row[3] for row in table["value"] if row[0] == server_run.name] == ["local-diffusion vs local-ar"]


def test_the_players_payload_and_the_html_export_say_what_the_frames_are(kept: Path, server_run: Path,
                                                                         tmp_path: Path) -> None:
    assert load_payload(kept)["origin"] == RAN_ELSEWHERE_MEANS
    assert "origin" not in load_payload(server_run)
    page = export_html(kept, tmp_path / "kept.html").read_text(encoding="utf-8")
    data = json.loads(page.split('id="converge-data">', 1)[1].split("</script>", 1)[0])
    assert data["origin"] == RAN_ELSEWHERE_MEANS  # the player in the file draws it
    note = page.split('<p class="cv-export-note">', 1)[1].split("</p>", 1)[0]
    assert "Ran in a visitor&#x27;s browser: its frames are as that browser sent them" in note  # shown without script
    plain = export_html(server_run, tmp_path / "server.html").read_text(encoding="utf-8")
    assert "visitor" not in plain.split('<p class="cv-export-note">', 1)[1].split("</p>", 1)[0]


def test_the_csv_names_each_rows_source_as_run_in_a_visitors_browser(kept: Path, tmp_path: Path) -> None:
    with open(write_frames_csv(kept, tmp_path / "frames.csv"), newline="", encoding="utf-8") as f:
        sources = {row["source"] for row in csv.DictReader(f)}
    assert sources == {f"local-diffusion ({RAN_ELSEWHERE})", f"local-ar ({RAN_ELSEWHERE})"}


def band(picture: np.ndarray, scene: Scene) -> np.ndarray:
    """The line under the prompt where a run that ran elsewhere is labelled."""
    return picture[scene.origin_y:scene.origin_y + scene.row_h, scene.pad:scene.W - scene.pad].astype(np.int16)


@pytest.mark.parametrize("fmt", ["gif", "mp4"])
def test_the_gif_and_the_mp4_draw_the_label_under_the_prompt(kept: Path, server_run: Path, tmp_path: Path,
                                                             fmt: str) -> None:
    scene = Scene(load(kept), SIZE)
    assert scene.origin == RAN_ELSEWHERE_MEANS  # the drawn line's text
    scene.draw(0.0)
    drawn = band(scene.canvas, scene)
    assert (drawn < 100).all(axis=2).any()  # ink: the line is drawn
    plain = Scene(load(server_run), SIZE)
    assert plain.origin == "" and plain.status_y == plain.origin_y  # a server's run: no such line
    out = export_video(kept, tmp_path / f"kept.{fmt}", fmt=fmt, fps=10, size=SIZE)
    if fmt == "gif":
        with Image.open(out) as im:
            first = np.asarray(im.convert("RGB"))
        assert (np.abs(band(first, scene) - drawn).max(axis=2) > 60).sum() == 0  # the GIF's first frame has it
    else:
        imageio_ffmpeg = pytest.importorskip("imageio_ffmpeg")
        reader = imageio_ffmpeg.read_frames(str(out))
        next(reader)  # the stream's description
        first = np.frombuffer(next(reader), np.uint8).reshape(SIZE[1], SIZE[0], 3)
        assert np.abs(band(first, scene) - drawn).mean() < 6.0  # the MP4's first frame has it (within encoding)


@pytest.mark.browser
def test_the_page_shows_the_label_in_the_library_the_player_and_the_presenters_picker(
        kept: Path, open_tab: Any) -> None:
    page = open_tab()
    wait_rows(page, 1)
    row = page.locator(LIB_ROWS, has_text=kept.name).inner_text()
    assert RAN_ELSEWHERE in row
    page.click("#library-load")  # the picker holds the only recording
    page.wait_for_selector(f"{ROOT} .cv-origin-line:not([hidden])")
    assert page.text_content(f"{ROOT} .cv-origin-line") == RAN_ELSEWHERE_MEANS
    presenter = open_tab("?presenter=1")
    presenter.wait_for_selector(f"{ROOT}[data-presenter='true']")
    presenter.wait_for_function("n => (document.querySelector('#presenter-list textarea')?.value || '').includes(n)",
                                arg=kept.name)  # the page's list of recordings has arrived
    presenter.keyboard.press("o")
    presenter.wait_for_selector(f"{ROOT}[data-picker='open'] .cv-picker-item")
    named = presenter.text_content(f"{ROOT} .cv-picker-item[data-id='user/{kept.name}'] .cv-picker-name")
    assert named is not None and RAN_ELSEWHERE in named  # what the entry is: its sources, and where they ran
