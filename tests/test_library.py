"""The recording library on real files: listing, rename, delete, upload, download, and names that try to escape."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from app.errors import UserError
from app.trace import library, store
from app.trace.frames import MAX_RECORDING_BYTES, Frame, RecordingWriter, make_header
from app.trace.reading import read_recording
from app.ui import library_ui
from app.view.payload import load_payload

ESCAPES = ["../x.jsonl", "..", "/etc/passwd", "a/b.jsonl", "a\\b.jsonl", ".hidden.jsonl", "x\x00.jsonl",
           "..\\x.jsonl", "sub/../x.jsonl", "C:\\x.jsonl", " x.jsonl", "x.txt", ""]


@pytest.fixture
def examples(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "examples"
    folder.mkdir()
    monkeypatch.setenv("CONVERGE_EXAMPLES", str(folder))
    return folder


def make(path: Path, prompt: str = "Once upon a time", caption: str | None = None, last_t: float = 1.5) -> Path:
    """A small race: a masked-diffusion left side and a typing right side ending at `last_t`."""
    header = make_header(prompt, {"left": {"name": "local-diffusion", "settings": {}},
                                  "right": {"name": "local-ar", "settings": {}}})
    if caption:
        header["caption"] = caption
    w = RecordingWriter(path, header)
    for i in range(4):
        w.frame("left", Frame(t=0.1 * (i + 1), step=i, tokens=["a", "b", "c", "d"],
                              masked=[j >= i + 1 for j in range(4)]))
    for i in range(3):
        w.frame("right", Frame(t=last_t * (i + 1) / 3, step=i, tokens=["a", "b", "c"][: i + 1], final=i == 2))
    w.end("left", "done")
    w.end("right", "done")
    w.close()
    return path


@pytest.mark.parametrize("name", ESCAPES)
def test_names_that_could_escape_the_folder_are_refused(name: str, recordings: Path) -> None:
    with pytest.raises(UserError):
        store.check_name(name)
    with pytest.raises(UserError):
        store.locate(f"user/{name}")


def test_ids_name_a_kind_and_a_plain_name(recordings: Path) -> None:
    make(recordings / "race 1.jsonl")
    assert store.locate("user/race 1.jsonl") == recordings / "race 1.jsonl"
    for bad in ("race 1.jsonl", "other/race 1.jsonl", "user/", "/user/race 1.jsonl", "user//race 1.jsonl", None):
        with pytest.raises(UserError):
            store.locate(bad)  # type: ignore[arg-type]


def test_a_symlink_out_of_the_folder_is_not_listed_loaded_renamed_or_deleted(recordings: Path, tmp_path: Path,
                                                                              examples: Path) -> None:
    outside = make(tmp_path / "outside.jsonl")
    (recordings / "link.jsonl").symlink_to(outside)
    make(recordings / "inside.jsonl")
    assert [e["name"] for e in library.list_recordings()] == ["inside.jsonl"]
    for action in (lambda: store.locate("user/link.jsonl"), lambda: library.delete("user/link.jsonl"),
                   lambda: library.rename("user/link.jsonl", "moved"),
                   lambda: library_ui.download_copy("user/link.jsonl"),
                   lambda: library.rename("user/inside.jsonl", "link.jsonl")):
        with pytest.raises(UserError):
            action()
    assert outside.is_file() and (recordings / "inside.jsonl").is_file()


def test_the_list_shows_user_runs_then_examples_with_prompt_sources_date_and_duration(
        recordings: Path, examples: Path) -> None:
    make(recordings / "mine.jsonl", prompt="My own prompt", last_t=2.0)
    make(examples / "b.jsonl", caption="Random order against the AR twin")
    make(examples / "a.jsonl", caption="Confidence order")
    (recordings / "notes.txt").write_text("not listed")
    (recordings / ".upload.part").write_text("not listed")
    (recordings / "junk.jsonl").write_text("hello\n")
    entries = library.list_recordings()
    assert [e["id"] for e in entries][-2:] == ["example/a.jsonl", "example/b.jsonl"]
    mine = next(e for e in entries if e["name"] == "mine.jsonl")
    assert mine["kind"] == "user" and mine["prompt"] == "My own prompt" and mine["duration"] == 2.0
    assert mine["sources"] == "local-diffusion vs local-ar" and mine["created"] == read_recording(
        recordings / "mine.jsonl").header["created"]
    assert mine["frames"] == 7 and mine["problem"] is None
    assert next(e for e in entries if e["name"] == "a.jsonl")["caption"] == "Confidence order"
    junk = next(e for e in entries if e["name"] == "junk.jsonl")
    assert "not a Converge recording" in junk["problem"] and junk["frames"] == 0
    assert "not a Converge recording" in library_ui.label(junk)
    assert library_ui.duration_text(2.0) == "2.0 s" and \
        library_ui.date_text("2026-01-02T03:04:05Z") == "2026-01-02 03:04 UTC"


def test_rename_moves_only_user_recordings_and_never_overwrites(recordings: Path, examples: Path) -> None:
    make(recordings / "one.jsonl")
    make(recordings / "two.jsonl")
    make(examples / "ex.jsonl")
    assert library.rename("user/one.jsonl", "talk") == "user/talk.jsonl"
    assert (recordings / "talk.jsonl").is_file() and not (recordings / "one.jsonl").exists()
    with pytest.raises(UserError, match="already a recording"):
        library.rename("user/talk.jsonl", "two.jsonl")
    for bad in ("../escaped", "/tmp/escaped.jsonl", "a/b", ".hidden"):
        with pytest.raises(UserError):
            library.rename("user/talk.jsonl", bad)
    with pytest.raises(UserError, match="cannot be renamed"):
        library.rename("example/ex.jsonl", "mine")
    assert sorted(p.name for p in recordings.iterdir()) == ["talk.jsonl", "two.jsonl"]
    assert sorted(p.name for p in examples.iterdir()) == ["ex.jsonl"]
    assert not (recordings.parent / "escaped.jsonl").exists()


def test_delete_removes_only_user_recordings(recordings: Path, examples: Path) -> None:
    make(recordings / "old.jsonl")
    make(examples / "ex.jsonl")
    assert library.delete("user/old.jsonl") == "old.jsonl" and not (recordings / "old.jsonl").exists()
    with pytest.raises(UserError, match="cannot be renamed or deleted"):
        library.delete("example/ex.jsonl")
    with pytest.raises(UserError, match="any more"):
        library.delete("user/old.jsonl")
    with pytest.raises(UserError):
        library.delete("user/../examples/ex.jsonl")
    assert (examples / "ex.jsonl").is_file()


def test_an_upload_is_checked_then_copied_in_under_a_safe_unique_name(recordings: Path, tmp_path: Path) -> None:
    src = make(tmp_path / "upload" / "My talk!.jsonl")
    first = library.save_upload(src, "../../My talk!.jsonl")
    second = library.save_upload(src, "My talk!.jsonl")
    assert first == "user/My talk.jsonl" and second == "user/My talk-1.jsonl"
    assert (recordings / "My talk.jsonl").read_bytes() == src.read_bytes()
    assert library.safe_upload_name("/etc/passwd") == "passwd.jsonl"
    assert library.safe_upload_name("..") == "upload.jsonl"
    assert library.safe_upload_name("C:\\Users\\x\\race.JSONL") == "race.jsonl"


@pytest.mark.parametrize("content, message", [
    ("hello world\n", "not a Converge recording"),
    ('{"type": "header", "schema": 99, "prompt": "", "sources": {}}\n', "schema 99"),
    ("", "empty"),
    ('[1, 2, 3]\n', "not a header"),
])
def test_an_upload_that_is_not_a_recording_is_refused_and_nothing_is_saved(
        content: str, message: str, recordings: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(content)
    with pytest.raises(UserError, match=message):
        library.save_upload(bad, "bad.jsonl")
    assert list(recordings.iterdir()) == []


def test_an_upload_over_the_size_limit_is_refused_before_it_is_read(recordings: Path, tmp_path: Path) -> None:
    big = make(tmp_path / "big.jsonl")
    with open(big, "r+b") as f:
        f.truncate(MAX_RECORDING_BYTES + 1)  # sparse: no 64 MB written
    with pytest.raises(UserError, match="refused"):
        library.save_upload(big, "big.jsonl")
    assert list(recordings.iterdir()) == []


def test_a_truncated_upload_is_kept_and_loads_to_its_last_good_frame_naming_the_line(
        recordings: Path, tmp_path: Path) -> None:
    src = make(tmp_path / "cut.jsonl")
    lines = src.read_text().splitlines(keepends=True)
    src.write_text("".join(lines[:4]) + lines[4][: len(lines[4]) // 2])  # line 5 cut in half
    entry = library.save_upload(src, "cut.jsonl")
    payload = load_payload(store.locate(entry))
    assert payload["mode"] == "replay"
    assert len(payload["sides"]["left"]["rows"]) == 3
    assert payload["warnings"] and "Line 5" in payload["warnings"][0]
    listed = next(e for e in library.list_recordings() if e["id"] == entry)
    assert "Line 5" in listed["problem"] and listed["frames"] == 3


def test_a_download_is_a_copy_outside_the_recordings_folder(recordings: Path) -> None:
    make(recordings / "keep.jsonl")
    copy = library_ui.download_copy("user/keep.jsonl")
    assert copy.name == "keep.jsonl" and copy.read_bytes() == (recordings / "keep.jsonl").read_bytes()
    assert not copy.resolve().is_relative_to(recordings.resolve())
    copy.unlink()
    assert (recordings / "keep.jsonl").is_file()


EXAMPLES = sorted(store.EXAMPLES_DIR.glob("*.jsonl"))


@pytest.mark.skipif(not EXAMPLES,
                    reason="recordings/examples/ is empty (run scripts/make_examples.py once the twins exist)")
def test_the_bundled_examples_are_captioned_offline_races_that_read_cleanly() -> None:
    """Twin races, plus the synthetic Mercury-format stream from the test server, which its caption says it is."""
    assert len(EXAMPLES) >= 3
    settings = set()
    for path in EXAMPLES:
        rec = read_recording(path)
        assert rec.warnings == [], path.name
        assert isinstance(rec.header.get("caption"), str) and rec.header["caption"].strip(), path.name
        names = [rec.header["sources"][s]["name"] for s in ("left", "right")]
        if names[0].startswith("mercury"):
            assert rec.header["caption"].startswith("Synthetic") and names[1].startswith("local-"), path.name
            assert rec.header["sources"]["left"]["settings"]["base_url"].startswith("http://127.0.0.1:")
        else:
            assert names == ["local-diffusion", "local-ar"], path.name
        assert all(rec.frames[s] and rec.frames[s][-1].final for s in ("left", "right")), path.name
        assert all(rec.ends[s]["status"] == "done" for s in ("left", "right")), path.name
        settings.add(json.dumps(rec.header["sources"]["left"]["settings"], sort_keys=True))
        assert "key" not in json.dumps(rec.header).lower()
    assert len(settings) == len(EXAMPLES)  # each example shows different sampler settings
    assert os.path.getsize(EXAMPLES[0]) < 5_000_000
