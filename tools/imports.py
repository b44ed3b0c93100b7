"""The app's import graph, read with ast (no module is imported): what tests/test_layers.py holds to the rooms' rules
and what tools/gendocs.py writes into docs/layout.md. Every import counts, including one inside a function."""

from __future__ import annotations

import ast
from pathlib import Path

APP = Path(__file__).resolve().parent.parent / "app"


def module_names(app_dir: Path = APP) -> dict[str, Path]:
    """Every module under `app_dir` by dotted name; a package goes by its own name, for its __init__.py."""
    modules = {}
    for path in sorted(app_dir.rglob("*.py")):
        parts = list(path.relative_to(app_dir.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def _known(name: str, modules: dict[str, Path]) -> str | None:
    """The deepest module of ours that `name` names or lies in (`app.trace.frames.Frame` -> `app.trace.frames`); None
    outside."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def imports_of(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The modules of ours that one module imports, anywhere in its body (`from app import x` names module x when
    there is one, else the package)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            targets += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            targets += [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names]
    found = {_known(target, modules) for target in targets}
    return {module for module in found if module is not None and module != name}


def import_graph(app_dir: Path = APP) -> dict[str, set[str]]:
    """module -> the modules of ours it imports, for every module under `app_dir`."""
    modules = module_names(app_dir)
    return {name: imports_of(name, path, modules) for name, path in modules.items()}


def in_room(module: str, room: str) -> bool:
    """Whether `module` is the room itself or lies under it (app.bench.race is in app.bench; app.benchmark is not)."""
    return module == room or module.startswith(room + ".")
