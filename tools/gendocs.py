"""The docs' generated parts, written from the code so they cannot drift: layout.md's file table and room arrows,
every command's --help (cli.md), the settings tables (settings.md) and the suite's counts (figures.md).

Each part sits in its doc between `<!-- generated: NAME -->` and `<!-- end generated: NAME -->`; the prose around it
is the docs' own. `python -m tools.gendocs` rewrites the parts, `python -m tools.gendocs --check` says which differ
(tests/test_docs_generated.py fails on the same).
"""

from __future__ import annotations

import argparse
import ast
import functools
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Callable

from tools.imports import APP, import_graph

ROOT = APP.parent
DOCS = ROOT / "docs"
SHOWN = (".py", ".js", ".css", ".json", ".html")  # the files of app/ the file table lists
# files that cannot carry a comment saying what they are
NAMED = {"package.json": "the site's one npm dependency, onnxruntime-web, pinned (node_modules/ is not committed)",
         "package-lock.json": "npm's lock of onnxruntime-web and what it pulls in, for `npm ci`",
         "index.html": "the static site's page, which loads page.js and the player"}
HELP_COLUMNS = "100"  # the width --help is wrapped to in cli.md, whatever the terminal that runs the generator


def first_sentence(text: str) -> str:
    """The first sentence of a docstring or comment, on one line (a full stop followed by a space and a capital, or
    the end of the first paragraph)."""
    para = " ".join(text.strip().split("\n\n")[0].split())
    match = re.search(r"(?<!e\.g)(?<!i\.e)\.(?= [A-Z`(])", para)
    return para[: match.end()] if match else para


def described(path: Path) -> str:
    """What a file of app/ holds, from its own words: a module's docstring, a script's or stylesheet's opening
    comment, a JSON file's "about"; a file that cannot say (or a JSON file without "about") is named in NAMED.
    Raises when a file says nothing."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".py":
        words = ast.get_docstring(ast.parse(text)) or ""
    elif path.suffix in (".js", ".css"):
        words = text[2: text.index("*/")] if text.startswith("/*") else ""
        words = "\n".join(line.strip().lstrip("*").strip() for line in words.splitlines())
    elif path.suffix == ".json" and text.lstrip().startswith("{") and json.loads(text).get("about"):
        words = json.loads(text)["about"]
    elif path.name in NAMED:
        words = NAMED[path.name]
    else:
        words = ""
    if not words.strip():
        raise ValueError(f"{path.relative_to(ROOT)} says nothing about itself: give it a docstring or opening comment")
    return first_sentence(words).replace("|", "\\|")


def app_files() -> list[Path]:
    """The files the file table lists: app/'s code, styles and data as git sees them (committed or new, never what
    git ignores: installed packages, caches, a build's outputs)."""
    listed = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others", "--exclude-standard",
                             "app"], capture_output=True, check=True).stdout.decode().split("\0")
    return sorted({ROOT / name for name in listed if name and Path(name).suffix in SHOWN and (ROOT / name).is_file()})


def modules_table() -> str:
    """layout.md's file table: every file of app/, room by room, with what it holds in its own first sentence."""
    rows = ["| file | what it holds |", "| --- | --- |"]
    rows += [f"| `{p.relative_to(ROOT)}` | {described(p)} |" for p in app_files()]
    return "\n".join(rows)


def room_of(module: str) -> str:
    """The room a module lies in (`app.trace.frames` -> `app.trace`); a module beside the rooms is its own."""
    parts = module.split(".")
    return ".".join(parts[:2])


def rooms_table() -> str:
    """layout.md's room arrows: each room and the rooms its modules import, read from the import graph."""
    arrows: dict[str, set[str]] = {}
    for module, targets in import_graph().items():
        room = room_of(module)
        arrows.setdefault(room, set()).update(room_of(t) for t in targets if room_of(t) != room)
    rows = ["| room | imports |", "| --- | --- |"]
    rows += [f"| `{room}` | {', '.join(f'`{r}`' for r in sorted(out)) or 'nothing of the app'} |"
             for room, out in sorted(arrows.items())]
    return "\n".join(rows)


@functools.cache
def command_help(name: str) -> str:
    """What `python -m app NAME --help` prints ("launch" for `python -m app --help`), run in a fresh process so that
    no state an earlier caller set in this one (a test's configured limits) shows as a default; asked once a process
    (the code does not change while one runs, and tests/test_docs_generated.py asks for the docs five times)."""
    argv = [sys.executable, "-m", "app", *([] if name == "launch" else [name]), "--help"]
    # as on a fresh install: no Space (whose default host differs), none of the app's own settings from the environment
    env = {k: v for k, v in os.environ.items() if k != "SPACE_ID" and not k.startswith("CONVERGE_")}
    env["COLUMNS"] = HELP_COLUMNS
    done = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, env=env, check=True)
    return done.stdout.rstrip()


def commands_help() -> str:
    """cli.md's reference: every command's --help, the page's first."""
    from app.cli import COMMANDS

    parts = []
    for name in ("launch", *COMMANDS):
        title = "python -m app" if name == "launch" else f"python -m app {name}"
        parts.append(f"### `{title}`\n\n```text\n{command_help(name)}\n```")
    return "\n\n".join(parts)


def settings_tables() -> str:
    """settings.md's tables: every source kind's settings as declared (app/engine/options.py), with each default."""
    from app.cli.generate import DEFAULTS, SETTINGS, describe, shown
    from app.engine.options import declared

    parts = []
    for kind, cls in SETTINGS.items():
        starts = [(source, s) for source, s in DEFAULTS if type(s) is cls] or [(kind, cls())]
        who = ", ".join(source for source, _ in starts)
        rows = [f"### {kind}", "", f"Used by {who}.", "", "| setting | flag | default | what it is |",
                "| --- | --- | --- | --- |"]
        for name, (_, o) in declared(cls).items():
            flag = "--" + (o.cli or name).replace("_", "-")
            what = describe(cls, name).replace("|", "\\|") + ("" if o.shown else " (not on the page)")
            values = {source: shown(getattr(s, name), o) for source, s in starts}
            first = next(iter(values.values()))
            others = "; ".join(f"{source}: {v}" for source, v in values.items() if v != first)
            rows.append(f"| `{name}` | `{flag}` | {first}{f' ({others})' if others else ''} | {what} |")
        parts.append("\n".join(rows))
    return "\n\n".join(parts)


def suite_counts() -> str:
    """figures.md's count of the suite: its test modules and test functions, read from tests/ with ast."""
    modules = sorted((ROOT / "tests").glob("test_*.py"))
    functions = sum(isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test_")
                    for path in modules for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))))
    return f"The suite has {len(modules)} test modules and {functions} test functions (`tests/test_*.py`)."


# each part: the doc it lives in and what writes it
PARTS: dict[str, tuple[str, Callable[[], str]]] = {
    "rooms": ("layout.md", rooms_table),
    "files": ("layout.md", modules_table),
    "commands": ("cli.md", commands_help),
    "settings": ("settings.md", settings_tables),
    "suite": ("figures.md", suite_counts),
}


def span(name: str) -> re.Pattern[str]:
    """The markers around a part, and what lies between them."""
    return re.compile(rf"(<!-- generated: {name} -->\n)(.*?)(<!-- end generated: {name} -->)", re.S)


def rewritten(doc: str, name: str, body: str) -> str:
    """The doc with part `name` replaced by `body`; raises when the doc has no place for it."""
    if not span(name).search(doc):
        raise ValueError(f"docs has no <!-- generated: {name} --> ... <!-- end generated: {name} --> markers")
    return span(name).sub(lambda m: m.group(1) + body + "\n" + m.group(3), doc, count=1)


def stale() -> dict[str, str]:
    """Each doc whose generated parts differ from what the code writes now: file name -> its text as it should be."""
    docs: dict[str, str] = {}
    for name, (doc, write) in PARTS.items():
        text = docs.get(doc) or (DOCS / doc).read_text(encoding="utf-8")
        docs[doc] = rewritten(text, name, write())
    return {doc: text for doc, text in docs.items() if text != (DOCS / doc).read_text(encoding="utf-8")}


def main(argv: list[str] | None = None) -> int:
    """Rewrites the docs' generated parts, or with --check lists the docs that differ (exit 1)."""
    parser = argparse.ArgumentParser(prog="python -m tools.gendocs", description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 when a doc differs")
    args = parser.parse_args(argv)
    differ = stale()
    if args.check:
        for doc in differ:
            print(f"docs/{doc} differs from what the code writes: python -m tools.gendocs", file=sys.stderr)
        return 1 if differ else 0
    for doc, text in differ.items():
        (DOCS / doc).write_text(text, encoding="utf-8")
        print(f"wrote docs/{doc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
