"""Recordings within every size cap that cost far more to analyse than they weigh (issue 38, item 4): many tiny frames
and one huge one, one giant token, many frames of long text. Each is either refused when read, with one sentence, or
uploaded, loaded, replayed and exported in work that grows with its size. Work is counted (tokens of the final frame
touched), never timed; the recordings are real JSON Lines written by the project's own writer."""

from __future__ import annotations

import asyncio
import inspect
import random
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from app.analysis import changes
from app.analysis.changes import Reference, align, settled_fraction_series, text_tokens
from app.analysis.tables import frames_table, write_frames_csv
from app.export.html import export_html
from app.trace import library
from app.trace.frames import MAX_CELLS, MAX_TOKENS, Frame, RecordingWriter, make_header
from app.trace.reading import RecordingError, read_recording
from app.view.payload import load_payload
from tests.fixtures import run_async


def write_side(path: Path, frames: list[Frame], side: str = "right", name: str = "mercury") -> Path:
    """A recording of one side's frames (a text source by default), ended as done."""
    writer = RecordingWriter(path, make_header("costly", {side: {"name": name, "settings": {}}}))
    for frame in frames:
        writer.frame(side, frame)
    writer.end(side, "done")
    writer.close()
    return path


def tiny_then_huge(path: Path, tiny: int, huge: int) -> Path:
    """`tiny` one-token text frames, then one final text frame of `huge` tokens (words and spaces)."""
    frames = [Frame(t=0.001 * i, step=i, text="w") for i in range(tiny)]
    frames.append(Frame(t=0.001 * tiny, step=tiny, text="w " * (huge // 2), final=True))
    return write_side(path, frames)


def giant_token(path: Path, chars: int, frames: int = 4) -> Path:
    """Text frames that each hold one word of `chars` characters, its last letter changing, then a short tail."""
    word = "a" * (chars - 1)
    return write_side(path, [Frame(t=0.1 * i, step=i, text=word + "bcde"[i % 4] + " end" * (i == frames - 1),
                                   final=i == frames - 1) for i in range(frames)])


def long_texts(path: Path, frames: int, tokens: int, seed: int = 0) -> Path:
    """A Mercury-like side: `frames` drafts of about `tokens` tokens each, noise settling towards the last one."""
    rng = random.Random(seed)
    final = [rng.choice(["the", "cat", "sat", "on", "a", "mat", "and", "slept"]) for _ in range(tokens // 2)]
    drafts = []
    for i in range(frames):
        noise = 1 - (i + 1) / frames
        words = [w if rng.random() >= noise else rng.choice(["x%q", "zz", "#", "qq"]) for w in final]
        drafts.append(Frame(t=0.05 * i, step=i, text=" ".join(words), final=i == frames - 1))
    return write_side(path, drafts)


class Counted(list):
    """A display-token list that counts every element handed out by iteration, slicing or indexing: the work done
    on it, in tokens."""

    touched = 0

    def __iter__(self) -> Any:
        Counted.touched += len(self)
        return super().__iter__()

    def __getitem__(self, key: Any) -> Any:
        got = super().__getitem__(key)
        Counted.touched += len(got) if isinstance(key, slice) else 1
        return list(got) if isinstance(key, slice) else got


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> type[Counted]:
    """Analysis with every text frame's display tokens counted."""
    monkeypatch.setattr(changes, "text_tokens", lambda text: Counted(text_tokens(text)))
    Counted.touched = 0
    return Counted


def test_the_issues_recording_is_refused_with_one_sentence_when_read(tmp_path: Path) -> None:
    path = tiny_then_huge(tmp_path / "bomb.jsonl", 49_990, 1_900_000)  # under MAX_FRAMES, MAX_TOKENS and 64 MB
    with pytest.raises(RecordingError) as refused:
        read_recording(path)
    message = str(refused.value)
    assert f"costs more than {MAX_CELLS:,} cells" in message and message.count(". ") == 0, message
    assert "line 49992" in message  # the cost is known, and refused, at the huge frame's own line
    with pytest.raises(Exception, match="cells to analyse and replay"):
        library.save_upload(path, "bomb.jsonl", "owner-a")
    assert load_payload(path)["mode"] == "message"


def test_a_few_frames_before_a_huge_one_pass_the_cell_budget_only_while_under_it(tmp_path: Path) -> None:
    huge = MAX_TOKENS - 100_000
    accepted = tiny_then_huge(tmp_path / "ok.jsonl", MAX_CELLS // huge - 1, huge)  # frames x longest just under it
    assert len(read_recording(accepted).frames["right"]) == MAX_CELLS // huge
    with pytest.raises(RecordingError, match="cells to analyse and replay"):
        read_recording(tiny_then_huge(tmp_path / "over.jsonl", MAX_CELLS // huge, huge))


def test_settled_series_touches_each_frame_once_where_aligning_each_against_the_final_touched_it_all(
        tmp_path: Path, counted: type[Counted]) -> None:
    tiny, huge = 300, 20_000  # frames x final = 6 million, under MAX_CELLS: accepted, so it must be cheap
    frames = read_recording(tiny_then_huge(tmp_path / "a.jsonl", tiny, huge)).frames["right"]
    size = tiny + huge
    series = settled_fraction_series(frames)
    new_work, counted.touched = counted.touched, 0
    final = changes.display_tokens(frames[-1])
    old = [align(final, changes.display_tokens(f)) for f in frames]  # what the series did per frame before
    old_work = counted.touched
    assert old_work >= tiny * huge  # every frame touched the whole final one: frames x final length
    assert new_work <= 10 * size, (new_work, size)  # now a few passes over the final frame and each frame once
    reference = Reference(list(final))
    assert old == [reference.align(changes.display_tokens(f)) for f in frames]
    assert series[-1] == (frames[-1].t, 1.0) and series[0][1] == 1 / (huge // 2)


def test_reference_alignment_is_align_on_random_text_states() -> None:
    rng = random.Random(38)
    words = ["a", "bb", " ", "  ", "ccc", ".", "\n", "dd", "<|im_end|>"]
    for _ in range(2000):
        final = text_tokens("".join(rng.choice(words) for _ in range(rng.randint(0, 30))))
        reference = Reference(final)
        for _ in range(3):
            other = list(final)
            for _ in range(rng.randint(0, 5)):
                k = rng.randrange(len(other) + 1)
                if rng.random() < 0.5 or not other:
                    other.insert(k, rng.choice(words))
                else:
                    other.pop(min(k, len(other) - 1))
            assert reference.align(other) == align(final, other)
    assert Reference(["a", "", "b"]).align(["", "b"]) == align(["a", "", "b"], ["", "b"])  # empty tokens: align's


SHAPES = {"tiny_then_huge": lambda p, k: tiny_then_huge(p, 150 * k, 10_000 * k),  # frames x final: 1.5M, 6M cells
          "giant_token": lambda p, k: giant_token(p, 500_000 * k, 2 * k),
          "long_texts": lambda p, k: long_texts(p, 100 * k, 2_000)}


def every_use(path: Path, out: Path, counted: type[Counted]) -> int:
    """Uploads, loads (the replay's payload), exports HTML and CSV and tabulates one recording; returns the display
    tokens the analysis touched."""
    counted.touched = 0
    rec = read_recording(path)
    assert library.save_upload(path, path.name, "owner-a").startswith("user/")
    payload = load_payload(path, cursor="start")
    assert payload["mode"] == "replay" and len(payload["sides"]["right"]["rows"]) == len(rec.frames["right"])
    html = export_html(path, out.with_suffix(".html"))
    write_frames_csv(path, out.with_suffix(".csv"))
    assert len(frames_table(path)) == len(rec.frames["right"])
    tokens = sum(len(text_tokens(f.text or "")) for f in rec.frames["right"])
    assert html.stat().st_size < 1_000_000 + 2 * path.stat().st_size + 20 * tokens  # the player, then the rows
    return counted.touched


@pytest.mark.parametrize("shape", SHAPES)
def test_each_costly_shape_uploads_loads_replays_and_exports_in_work_linear_in_its_size(
        shape: str, tmp_path: Path, counted: type[Counted]) -> None:
    once = every_use(SHAPES[shape](tmp_path / "once.jsonl", 1), tmp_path / "once", counted)
    twice = every_use(SHAPES[shape](tmp_path / "twice.jsonl", 2), tmp_path / "twice", counted)
    assert twice <= 2.2 * once, (once, twice)  # twice the size, twice the work (frames x final length: four times)


def test_the_video_of_a_small_costly_recording_draws_the_heatmap_in_its_rows_own_length(tmp_path: Path) -> None:
    from app.export.video import export_video
    from app.export.video.track import HeatStrip

    path = tiny_then_huge(tmp_path / "small.jsonl", 30, 2_000)
    out = export_video(path, tmp_path / "small.gif", fmt="gif", fps=5, size=(480, 270))
    assert out.read_bytes()[:6] == b"GIF89a"
    rng = np.random.default_rng(4)
    for positions, width in ((2_000, 97), (40, 97), (1, 5)):
        strip = HeatStrip(positions, 8, width, 16, frozenset({0, 3}))
        for _ in range(8):
            n = int(rng.integers(0, positions + 1))
            row = {"ch": rng.integers(0, 4, n).tolist(), "m": rng.integers(0, 2, n).astype(bool).tolist()}
            before = strip.cells.copy()
            strip.add(row)
            assert (strip.cells == np.maximum(before, old_heat_row(strip, row, positions))).all()


def old_heat_row(strip: Any, row: dict[str, Any], positions: int) -> np.ndarray:
    """The heatmap row the video drew before: the row's codes padded to the widest frame, reduced per column."""
    from app.export.video.palette import CODE_HEAT, H_GIVEN, H_MASKED, H_UNCHANGED

    codes = np.zeros(positions, np.uint8)
    ch = np.asarray(row["ch"], np.uint8)
    if len(ch):
        codes[:len(ch)] = np.where(ch == 0, np.where(np.asarray(row["m"], bool), H_MASKED, H_UNCHANGED), CODE_HEAT[ch])
        codes[strip.pinned[strip.pinned < len(ch)]] = H_GIVEN
    r0, r1 = strip.span(strip.count - 1)
    out = strip.cells.copy()
    out[r0:r1] = np.maximum.reduceat(codes, strip.starts)[None, :]
    return out


def test_closing_an_export_returns_at_once_without_waiting_for_its_work(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from app.ui import export_job
    from app.ui.export_ui import export_current

    gate, begun = threading.Event(), threading.Event()
    made: list[Path] = []

    def stuck(source: Path, out: Path, fmt: str, clock: str, tick: Any, video: Any) -> None:  # cannot stop
        out.write_text("half")
        made.append(out)
        begun.set()
        gate.wait()

    monkeypatch.setattr(export_job, "_make", stuck)
    assert inspect.isasyncgenfunction(export_current("html"))
    path = long_texts(tmp_path / "race.jsonl", 3, 20)

    async def start_then_close() -> bool:
        export = export_current("html")(str(path))
        await anext(export)
        await asyncio.to_thread(begun.wait)
        others = asyncio.create_task(asyncio.sleep(0, "served"))  # another visitor's work on the same loop
        await export.aclose()  # Cancel export: returns while the work is still stuck
        return not gate.is_set() and await others == "served"

    assert run_async(start_then_close())
    assert made[0].exists()  # still at work: nothing waited for it
    gate.set()
    assert export_job.wait_idle(30)
    assert not made[0].exists()  # its end removed the half-made file


def test_a_list_of_more_positions_than_its_frames_have_is_refused_with_one_sentence(tmp_path: Path) -> None:
    start = Frame(t=0, step=0, tokens=["a", "b", "c"], states="aaa")
    fine = [start, Frame(t=1, step=1, tokens=["x", "a", "b"], states="aaa", inserted=[0], deleted=[2])]
    assert len(read_recording(write_side(tmp_path / "ok.jsonl", fine, "left", "uniform")).frames["left"]) == 2
    bombs = {"inserted": Frame(t=1, step=1, tokens=["a"], states="a", inserted=[0] * 2),
             "deleted": Frame(t=1, step=1, tokens=["a"], states="a", deleted=list(range(4)))}
    for key, frame in bombs.items():
        with pytest.raises(RecordingError) as refused:
            read_recording(write_side(tmp_path / f"{key}.jsonl", [start, frame], "left", "uniform"))
        message = str(refused.value)
        assert f"lists more {key} positions" in message and "(line 3)" in message and message.count(". ") == 0
    first = Frame(t=0, step=0, tokens=["a"], states="a", deleted=[0])  # a side's first frame has none to delete
    with pytest.raises(RecordingError, match="than the frame before it had"):
        read_recording(write_side(tmp_path / "first.jsonl", [first], "left", "uniform"))


def test_each_crafted_shapes_work_grows_at_most_five_times_from_n_to_4n_tokens() -> None:
    from app.bench.costly import SCHEMA2, TEXT, growth

    grown = growth(n=4000, timed=False)  # the caps bench's figures, counted in Python lines run (not timed)
    assert set(grown) == {*TEXT, *SCHEMA2} >= {"deletion_bomb", "insert_bomb", "insert_between", "long_states"}
    for name, g in grown.items():
        assert 0 < g["work"][1] <= 5 * g["work"][0], (name, g)


def test_the_growth_count_catches_the_deletion_bombs_old_scan(monkeypatch: pytest.MonkeyPatch) -> None:
    from app.analysis import states
    from app.bench.costly import growth
    from tests.test_states import old_dropped

    monkeypatch.setattr(states, "dropped", old_dropped)  # each deleted position scanned to the end of the frame
    assert growth(n=4000, timed=False, names=["deletion_bomb"])["deletion_bomb"]["ratio"] > 10


def test_an_upload_that_could_not_be_shown_is_refused_before_it_is_stored(recordings: Path, tmp_path: Path) -> None:
    from app.ui.library_ui import upload_entry
    from app.ui.visitor import Visitor

    start = Frame(t=0, step=0, tokens=["a", "b"], states="aa")
    bomb = write_side(tmp_path / "bomb.jsonl", [start, Frame(t=1, step=1, tokens=["a"], states="a",
                                                              deleted=list(range(3)))], "left", "uniform")
    said = upload_entry(Visitor(), str(bomb))
    assert "lists more deleted positions" in said[5] and not list(recordings.glob("*.jsonl"))
    fine = write_side(tmp_path / "fine.jsonl", [start, Frame(t=1, step=1, tokens=["a"], states="a", deleted=[1])],
                      "left", "uniform")
    said = upload_entry(Visitor(), str(fine))
    assert said[5].startswith("Added fine.jsonl") and [p.name for p in recordings.glob("*.jsonl")] == ["fine.jsonl"]
    assert '"recording":"fine.jsonl"' in said[3]["payload"]  # the player names the stored copy



def old_strip_add(strip: Any, row: dict[str, Any]) -> None:
    """HeatStrip.add as it was before issue 49 for a side whose positions keep columns: each row placed among every
    column the side ever made, then reduced per display column (frames x columns in all)."""
    from app.export.video.palette import CODE_HEAT, H_DELETED, H_DRAFTED, H_MASKED, H_NOISE, H_UNCHANGED, HEAT

    ch = np.asarray(row["ch"], np.uint8)
    quiet = np.where(np.asarray(row["m"], bool) if row["m"] is not None else np.zeros(len(ch), bool), H_MASKED,
                     H_UNCHANGED)
    states = np.frombuffer(row["st"].encode("ascii"), np.uint8)
    quiet = np.where(states == ord("n"), H_NOISE, np.where(states == ord("d"), H_DRAFTED, quiet))
    cols, gone, _ = strip.columns
    out = np.zeros(strip.positions, np.uint8)
    out[np.asarray(cols[strip.count], np.int64)] = np.where(ch == 0, quiet, CODE_HEAT[ch])
    out[np.asarray(gone[strip.count], np.int64)] = H_DELETED
    r0, r1 = strip.span(strip.count)
    strip.cells[r0:r1] = np.maximum(strip.cells[r0:r1], np.maximum.reduceat(out, strip.starts)[None, :])
    strip.pixels[r0:r1] = HEAT[strip.cells[r0:r1]]
    strip.count += 1


def test_the_videos_aligned_heatmap_places_each_row_in_its_own_length_as_it_did_among_all_columns(
        tmp_path: Path) -> None:
    from app.bench.costly import insert_between, insert_bomb, write_token_side
    from app.export.video.track import HeatStrip
    from app.view.side import heat_columns, recorded_side
    from tests.test_states import uniform_frames

    for k, frames in enumerate([uniform_frames(), insert_bomb(3000, 16), insert_between(400)]):
        path = tmp_path / f"side{k}.jsonl"
        write_token_side(path, frames)
        rows = recorded_side(read_recording(path), "left").rows
        columns = heat_columns(rows)
        assert columns is not None
        for width in (3, 97, 400):  # fewer display columns than the side's columns, and more
            for height in (len(rows) // 3 + 1, 2 * len(rows)):
                new, old = (HeatStrip(1, len(rows), width, height, frozenset(), columns) for _ in range(2))
                for row in rows:
                    new.add(row)
                    old_strip_add(old, row)
                assert (new.cells == old.cells).all() and (new.pixels == old.pixels).all(), (k, width, height)
