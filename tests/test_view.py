"""One view of a side: the live race, a loaded recording and the video draw the same rows, styles and words."""

from __future__ import annotations

from pathlib import Path

from app.analysis.changes import SideAnalyzer
from app.export.video.track import Track
from app.trace.frames import SIDES, Frame, RecordingWriter, make_header
from app.trace.reading import read_recording
from app.view.payload import recording_payload
from app.view.side import (
    CELLS,
    CHANGED,
    DRAFT,
    MASKED,
    NEW,
    PINNED,
    REMASKED,
    UNCHANGED,
    cell_styles,
    pinned_positions,
    recorded_sides,
    status_sentence,
)
from app.view.theme import THEME
from tests.wire import expand_rows


def test_cell_styles_are_the_themes_and_a_change_wins_over_a_mask() -> None:
    assert set(CELLS) <= set(THEME["styles"])
    analyzer = SideAnalyzer()
    analyzer.add(Frame(t=0.0, step=0, tokens=["a", "", "c", "d"], masked=[False, True, False, False]))
    row = analyzer.add(Frame(t=0.1, step=1, tokens=["a", "b", "", "e"], masked=[False, False, True, False]))
    assert cell_styles(row, settled_all=False) == [UNCHANGED, NEW, REMASKED, CHANGED]
    typed = SideAnalyzer()
    typed.add(Frame(t=0.0, step=0, text="one"))
    row = typed.add(Frame(t=0.1, step=1, text="one two"))
    styles = cell_styles(row, settled_all=False)
    assert NEW in styles and all(s in (DRAFT, NEW, UNCHANGED) for s in styles)
    assert DRAFT not in cell_styles(row, settled_all=True)
    assert MASKED == CELLS.index("masked")


def test_a_pinned_position_is_styled_as_given_from_the_first_row_whatever_its_change() -> None:
    analyzer = SideAnalyzer()
    first = analyzer.add(Frame(t=0.0, step=0, tokens=["", "the", "end"], masked=[True, False, False], pinned=[1, 2]))
    later = analyzer.add(Frame(t=0.1, step=1, tokens=["a", "the", "end"], masked=[False] * 3))
    pinned = pinned_positions([first, later])
    assert pinned == {1, 2} and pinned_positions([later]) == frozenset() and pinned_positions([]) == frozenset()
    assert cell_styles(first, False, pinned) == [MASKED, PINNED, PINNED]  # given, not new, at the first frame
    assert cell_styles(later, False, pinned) == [NEW, PINNED, PINNED]
    assert cell_styles(later, False) == [NEW, UNCHANGED, UNCHANGED]


def test_the_status_line_says_racing_until_every_side_ended() -> None:
    say = THEME["sentences"]
    assert status_sentence(["running", "done"]) == say["racing"]
    assert status_sentence(["stopped", "done"]) == say["stopped"]
    assert status_sentence(["done", "idle"]) == say["finished"]
    # a failed side is said, as the player says it: never "Finished." alone
    assert status_sentence(["error", "done"], ["mercury", "local-ar"]) == \
        "Finished, but mercury failed: see its message."
    assert status_sentence(["error", "error"]) == say["failed"]


def test_a_recording_gives_the_page_and_the_video_the_same_sides(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    w = RecordingWriter(path, make_header("p", {"left": {"name": "local-diffusion", "settings": {}},
                                                "right": {"name": "local-ar", "settings": {}}}))
    w.frame("left", Frame(t=0.1, step=0, tokens=["", "x"], masked=[True, False], nfe=1))
    w.frame("left", Frame(t=0.2, step=1, tokens=["y", "x"], masked=[False, False], nfe=2, final=True))
    w.end("left", "done")
    w.frame("right", Frame(t=0.1, step=0, text="hi"))
    w.close()
    rec = read_recording(path)
    sides = recorded_sides(rec)
    payload = recording_payload(rec, "r.jsonl")
    assert payload["sides"]["right"]["status"] == "stopped" and payload["sides"]["right"]["message"] == \
        THEME["sentences"]["unended"]
    for key in SIDES:
        track = Track(key, rec)
        rows = expand_rows(payload["sides"][key]["rows"])
        assert [r["tok"] for r in rows] == [r["tok"] for r in track.rows] == [r["tok"] for r in sides[key].rows]
        assert payload["sides"][key]["metrics"] == sides[key].done["metrics"]
        assert (track.end_status, track.message or None) == (sides[key].status, sides[key].message)
