"""docs/layout.md names every module under app/ (each .py, and the player's, the page's and the site's .js and .css)
in its file table, so the page that says where things live cannot fall behind a move (issue 43: rooms by job, docs
true). The table is written by tools/gendocs.py (tests/test_docs_generated.py holds it to the code); this reads what
the committed page says."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LAYOUT = ROOT / "docs" / "layout.md"
KINDS = (".py", ".js", ".css")


def table_entries(text: str) -> set[str]:
    """The paths the file table's rows name (`| `app/engine/model.py` | ... |`)."""
    return set(re.findall(r"^\| `(app/[^`]+)` \|", text, re.M))


def missing_from_layout(app_dir: Path, text: str) -> list[str]:
    """Every module under `app_dir` that no row of the file table in `text` names."""
    named = table_entries(text)
    return [str(path.relative_to(app_dir.parent)) for path in sorted(app_dir.rglob("*"))
            if path.suffix in KINDS and "node_modules" not in path.parts
            and str(path.relative_to(app_dir.parent)) not in named]


def test_the_reader_finds_a_module_missing_from_the_file_table(tmp_path: Path) -> None:
    app = tmp_path / "app"
    (app / "engine").mkdir(parents=True)
    (app / "view" / "player").mkdir(parents=True)
    for name in ("__init__.py", "engine/model.py", "view/player/dom.js"):
        (app / name).write_text("")
    text = ("| file | what it holds |\n| --- | --- |\n| `app/__init__.py` | The app. |\n"
            "| `app/engine/model.py` | The model. |\n| `app/view/player/dom.js` | The DOM. |\n")
    assert missing_from_layout(app, text) == []
    (app / "engine" / "stutter.py").write_text("")
    (app / "view" / "model.py").write_text("")  # the engine's model.py is named, not the view's
    assert missing_from_layout(app, text) == ["app/engine/stutter.py", "app/view/model.py"]


def test_docs_layout_names_every_module_under_app() -> None:
    assert missing_from_layout(ROOT / "app", LAYOUT.read_text(encoding="utf-8")) == []
