"""docs/layout.md names every module under app/ (each .py but the package files, and the player's, the page's and the
site's .js and .css) in its room's entry of the tree, so the page that says where things live cannot fall behind a
move (issue 43: rooms by job, docs true)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LAYOUT = ROOT / "docs" / "layout.md"
KINDS = (".py", ".js", ".css")


def tree_entries(text: str) -> dict[str, str]:
    """The layout tree's entries by folder (`app/`, `app/engine/`, ...): each entry's first line and the indented lines
    after it, joined."""
    entries: dict[str, str] = {}
    current = None
    for line in text.splitlines():
        if match := re.match(r"(app/\S*)\s", line):
            current = match.group(1)
            entries[current] = line[len(current):]
        elif current and line.startswith(" "):
            entries[current] += " " + line.strip()
        else:
            current = None
    return entries


def missing_from_layout(app_dir: Path, text: str) -> list[str]:
    """Every module under `app_dir` whose file name its room's entry in `text` does not name (a module flat in
    app/ belongs to the `app/` entry; one in a subfolder of a room, such as app/view/player/, to the room's)."""
    entries = tree_entries(text)
    missing = []
    for path in sorted(app_dir.rglob("*")):
        if path.suffix not in KINDS or (path.name == "__init__.py" and path.parent != app_dir) \
                or "node_modules" in path.parts:
            continue
        parts = path.relative_to(app_dir).parts
        entry = entries.get(f"{app_dir.name}/{parts[0]}/" if len(parts) > 1 else f"{app_dir.name}/", "")
        if not re.search(rf"(?<![\w.-]){re.escape(path.name)}(?![\w-])", entry):
            missing.append(str(path.relative_to(app_dir.parent)))
    return missing


def test_the_reader_finds_a_module_missing_from_its_rooms_entry(tmp_path: Path) -> None:
    app = tmp_path / "app"
    (app / "engine").mkdir(parents=True)
    (app / "view" / "player").mkdir(parents=True)
    for name in ("__init__.py", "errors.py", "engine/__init__.py", "engine/model.py", "engine/pins.py",
                 "view/player/dom.js"):
        (app / name).write_text("")
    text = ("```\napp/            __init__.py, errors.py\napp/engine/     model.py (numpy),\n"
            "                pins.py\napp/view/       player/ (dom.js)\n```\n")
    assert missing_from_layout(app, text) == []
    (app / "engine" / "stutter.py").write_text("")
    (app / "view" / "pins.py").write_text("")  # named in the engine's entry, not the view's
    assert missing_from_layout(app, text) == ["app/engine/stutter.py", "app/view/pins.py"]


def test_docs_layout_names_every_module_under_app() -> None:
    assert missing_from_layout(ROOT / "app", LAYOUT.read_text(encoding="utf-8")) == []
