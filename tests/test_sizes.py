"""Modules and functions under app/ stay a size a reader can hold (issue 26): no file over 500 lines and no function
over 60, unless a comment that starts with `# long:` says why, in the comment block right above the `def` (or its
decorators) or, for a file, among its first lines. Read with ast; nothing is imported."""

from __future__ import annotations

import ast
from pathlib import Path

APP = Path(__file__).resolve().parent.parent / "app"
MAX_FILE_LINES = 500
MAX_FUNCTION_LINES = 60
MARK = "# long:"
HEAD_LINES = 30  # where a file's own `# long:` comment must sit


def explained(lines: list[str], first: int) -> bool:
    """Whether the comment block right above line `first` (1-based) has a line that starts with `# long:`."""
    row = first - 2
    while row >= 0 and lines[row].strip().startswith("#"):
        if lines[row].strip().startswith(MARK):
            return True
        row -= 1
    return False


def oversized(path: Path, root: Path = APP) -> list[str]:
    """Each file over MAX_FILE_LINES and each function over MAX_FUNCTION_LINES in `path` that no `# long:` comment
    explains, as 'file' or 'file:line name (N lines)'."""
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    name = str(path.relative_to(root.parent))
    found = []
    if len(lines) > MAX_FILE_LINES and not any(line.startswith(MARK) for line in lines[:HEAD_LINES]):
        found.append(f"{name} ({len(lines)} lines)")
    for node in ast.walk(ast.parse(text, name)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            if length > MAX_FUNCTION_LINES and not explained(lines, first):
                found.append(f"{name}:{node.lineno} {node.name} ({length} lines)")
    return found


def test_the_size_reader_finds_a_long_function_and_a_long_file_unless_a_comment_says_why(tmp_path: Path) -> None:
    room = tmp_path / "app"
    room.mkdir()
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_FUNCTION_LINES))
    (room / "a.py").write_text(f"def short():\n    return 1\n\n\n@staticmethod\ndef long():\n{body}")
    assert oversized(room / "a.py", room) == [f"app/a.py:6 long ({MAX_FUNCTION_LINES + 1} lines)"]
    (room / "a.py").write_text(f"# long: one table,\n# kept whole\n@staticmethod\ndef long():\n{body}")
    assert oversized(room / "a.py", room) == []
    (room / "a.py").write_text(f"# long: a comment further up\n\n# another\ndef long():\n{body}")
    assert oversized(room / "a.py", room) == [f"app/a.py:4 long ({MAX_FUNCTION_LINES + 1} lines)"]
    (room / "a.py").write_text(f"# long: one table, kept whole\n@staticmethod\ndef long():\n{body}")
    assert oversized(room / "a.py", room) == []
    (room / "b.py").write_text("x = 1\n" * (MAX_FILE_LINES + 1))
    assert oversized(room / "b.py", room) == [f"app/b.py ({MAX_FILE_LINES + 1} lines)"]
    (room / "b.py").write_text(f"{MARK} generated\n" + "x = 1\n" * MAX_FILE_LINES)
    assert oversized(room / "b.py", room) == []


def test_no_file_or_function_under_app_is_over_its_limit_without_saying_why() -> None:
    assert [hit for path in sorted(APP.rglob("*.py")) for hit in oversized(path)] == []
