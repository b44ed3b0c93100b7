"""Modules and functions under app/ stay a size a reader can hold (issue 26): no file over 500 lines and no function
over 60, unless a comment that starts with `# long:` says why, in the comment block right above the `def` (or its
decorators) or, for a file, among its first lines. Python is read with ast; nothing is imported.

JavaScript (app/**/*.js, issue 43) keeps the same limits, with `long:` opening a comment line (`// long:`,
`/* long:` or ` * long:` inside a block comment) as the mark. Its functions are found by a small tokenizer
(js_functions): it steps over comments, strings, template literals and regular expression literals (a `/` where a
value cannot end), and takes each `function` keyword and each `=>` followed by a `{` as a function whose body runs to
the matching brace, nested ones included; a function's lines run from its first to that brace. A classic script's
wrapper, `(function (...) {` on a line of its own that closes on the file's last line, is its module scope and is
measured as the file, not as a function."""

from __future__ import annotations

import ast
import re
from pathlib import Path

APP = Path(__file__).resolve().parent.parent / "app"
MAX_FILE_LINES = 500
MAX_FUNCTION_LINES = 60
MARK = "# long:"
JS_MARK = re.compile(r"\s*(?://|/?\*)\s*long:")
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


def js_functions(text: str) -> list[tuple[str, int, int]]:
    """(name, first line, last line) of each function in JavaScript `text`, nested ones included."""
    found, opens, stack = [], [], []  # opens: pending functions (name, line) waiting for their body's brace
    i, line, prev = 0, 1, ""  # prev: the last significant character, to tell a regular expression from a division
    while i < len(text):
        ch = text[i]
        if text.startswith("//", i) or text.startswith("/*", i):
            end = text.find("\n" if ch + text[i + 1] == "//" else "*/", i + 2)
            end = len(text) if end < 0 else end + (0 if text[i + 1] == "/" else 2)
            line += text.count("\n", i, end)
            i = end
            continue
        if ch in "'\"`" or (ch == "/" and (prev == "" or prev in "(,=:[!&|?{};+-*%<>~^")):
            j, in_class = i + 1, False
            while j < len(text) and (text[j] != ch or in_class):
                if ch == "/" and text[j] in "[]":
                    in_class = text[j] == "["
                j += 2 if text[j] == "\\" else 1
            line += text.count("\n", i, j)
            i, prev = j + 1, "a"
            continue
        word = re.match(r"[A-Za-z_$][\w$]*", text[i:])
        if word and (i == 0 or not re.match(r"[\w$.]", text[i - 1])):
            if word.group() == "function":
                named = re.match(r"\s*\*?\s*([A-Za-z_$][\w$]*)", text[i + 8:])
                before = re.search(r"([A-Za-z_$][\w$]*)\s*[:=]\s*$", text[max(0, i - 80):i])
                opens.append((named.group(1) if named else before.group(1) if before else "(anonymous)", line))
            i, prev = i + len(word.group()), "a"
            continue
        if text.startswith("=>", i) and re.match(r"\s*\{", text[i + 2:]):
            opens.append(("(arrow)", line))
        if ch == "{":
            stack.append(opens.pop() if opens and opens[-1][1] <= line and _body_next(text, i) else None)
        elif ch == "}" and stack:
            fn = stack.pop()
            if fn:
                found.append((fn[0], fn[1], line))
        line += ch == "\n"
        if not ch.isspace():
            prev = ch
        i += 1
    return found


def _body_next(text: str, brace: int) -> bool:
    """Whether the `{` at `brace` opens a pending function's body: it follows `)` (the parameters) or `=>`."""
    before = text[:brace].rstrip()
    return before.endswith(")") or before.endswith("=>")


def js_explained(lines: list[str], first: int) -> bool:
    """Whether the comment lines right above line `first` (1-based) hold a JS_MARK line."""
    row = first - 2
    while row >= 0 and lines[row].strip().startswith(("//", "/*", "*")):
        if JS_MARK.match(lines[row]):
            return True
        row -= 1
    return False


def js_oversized(path: Path, root: Path = APP) -> list[str]:
    """What `oversized` says of a Python file, for a JavaScript one (the mark: JS_MARK)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    name = str(path.relative_to(root.parent))
    found = []
    if len(lines) > MAX_FILE_LINES and not any(JS_MARK.match(line) for line in lines[:HEAD_LINES]):
        found.append(f"{name} ({len(lines)} lines)")
    for fn, first, last in js_functions("\n".join(lines)):
        if lines[first - 1].startswith("(function") and last == len(lines):
            continue  # the file's wrapper
        if last - first + 1 > MAX_FUNCTION_LINES and not js_explained(lines, first):
            found.append(f"{name}:{first} {fn} ({last - first + 1} lines)")
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


def test_the_javascript_reader_finds_nested_and_arrow_functions_past_strings_comments_and_regexes() -> None:
    text = ("function outer(a) {\n  var s = \"}{\", r = /[}{\\/]/g; // }\n  /* { */\n"
            "  var f = function () { return `}`; };\n  list.map((x) => {\n    return x / 2;\n  });\n}\n")
    assert sorted(js_functions(text)) == [("(arrow)", 5, 7), ("f", 4, 4), ("outer", 1, 8)]


def test_the_javascript_size_reader_takes_a_long_comment_right_above(tmp_path: Path) -> None:
    room = tmp_path / "app"
    room.mkdir()
    body = "".join(f"  x{i}();\n" for i in range(MAX_FUNCTION_LINES))
    (room / "a.js").write_text(f"function short() {{ return 1; }}\nfunction long() {{\n{body}}}\n")
    assert js_oversized(room / "a.js", room) == [f"app/a.js:2 long ({MAX_FUNCTION_LINES + 2} lines)"]
    (room / "a.js").write_text(f"// long: one table,\n// kept whole\nfunction long() {{\n{body}}}\n")
    assert js_oversized(room / "a.js", room) == []
    (room / "b.js").write_text("x();\n" * (MAX_FILE_LINES + 1))
    assert js_oversized(room / "b.js", room) == [f"app/b.js ({MAX_FILE_LINES + 1} lines)"]
    (room / "b.js").write_text("/* generated:\n * long: one table\n */\n" + "x();\n" * MAX_FILE_LINES)
    assert js_oversized(room / "b.js", room) == []
    (room / "c.js").write_text(f"/* a script */\n(function (global) {{\n{body}}})(window);\n")
    assert js_oversized(room / "c.js", room) == []


def test_no_javascript_file_or_function_under_app_is_over_its_limit_without_saying_why() -> None:
    paths = sorted(p for p in APP.rglob("*.js") if "node_modules" not in p.parts)
    assert [hit for path in paths for hit in js_oversized(path)] == []
