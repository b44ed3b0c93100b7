"""The docs' generated parts (tools/gendocs.py) are what the code writes now: layout.md's rooms and files, every
command's --help in cli.md, the settings tables and the suite's counts. A doc edited by hand, or code changed without
`python -m tools.gendocs`, fails here."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tools import gendocs


def test_every_generated_part_of_the_docs_is_what_the_code_writes_now() -> None:
    differ = gendocs.stale()
    assert differ == {}, f"run `python -m tools.gendocs`: {', '.join(f'docs/{d}' for d in differ)} differ"


def test_a_hand_edit_or_a_lost_marker_in_a_generated_part_is_caught(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    docs = tmp_path / "docs"
    shutil.copytree(gendocs.DOCS, docs)
    monkeypatch.setattr(gendocs, "DOCS", docs)
    cli = docs / "cli.md"
    cli.write_text(cli.read_text().replace("usage: python -m app record", "usage: python -m app race", 1))
    assert list(gendocs.stale()) == ["cli.md"]
    assert gendocs.main(["--check"]) == 1 and gendocs.main([]) == 0 and gendocs.stale() == {}
    cli.write_text(cli.read_text().replace("<!-- end generated: commands -->", ""))
    with pytest.raises(ValueError, match="generated: commands"):
        gendocs.stale()


def test_the_file_table_quotes_each_files_own_first_sentence_and_refuses_a_silent_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert gendocs.first_sentence("What it holds, e.g. this. And more.\n\nDetails.") == "What it holds, e.g. this."
    monkeypatch.setattr(gendocs, "ROOT", tmp_path)
    script = tmp_path / "part.js"
    script.write_text("/* Draws the chart. Called each frame.\n * More. */\nexport var x = 1;\n")
    assert gendocs.described(script) == "Draws the chart."
    silent = tmp_path / "silent.py"
    silent.write_text("x = 1\n")
    with pytest.raises(ValueError, match="silent.py says nothing about itself"):
        gendocs.described(silent)
