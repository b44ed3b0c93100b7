"""The protocols declare every optional part their callers use, with defaults in one base (issue 43): nothing under app/
probes a model or a source for one with getattr or hasattr, and no line silences the type checker that .ci/run runs
on app/ (mypy, pyproject.toml's [tool.mypy]). Read with ast; only the two base modules are imported."""

from __future__ import annotations

import ast
from pathlib import Path

from app.engine.base import MaskedLM, MaskedLMBase
from app.sources.base import Source, SourceBase

APP = Path(__file__).resolve().parent.parent / "app"


def parts(cls: type) -> set[str]:
    """The attributes and methods a class itself names (annotated or assigned), leaving out Python's own."""
    return {n for n in (*vars(cls), *getattr(cls, "__annotations__", {})) if not n.startswith("_")}


OPTIONAL = parts(MaskedLMBase) | parts(SourceBase)


def probes(path: Path) -> list[str]:
    """Each getattr / hasattr call in `path` whose name is one of the optional parts, as 'file:line name'."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr")
                and len(node.args) > 1 and isinstance(node.args[1], ast.Constant) and node.args[1].value in OPTIONAL):
            found.append(f"{path.relative_to(APP.parent)}:{node.lineno} {node.args[1].value}")
    return found


def test_the_bases_default_only_what_the_protocols_declare() -> None:
    assert parts(MaskedLMBase) <= parts(MaskedLM)
    assert parts(SourceBase) <= parts(Source)
    assert {"caches", "exact_prefix", "dual_cache", "fused_refresh", "refresh", "commit_filter", "repeatable",
            "pad_id", "cpu_bound", "defers", "notice"} <= OPTIONAL


def test_no_caller_probes_for_an_optional_part() -> None:
    assert [p for path in sorted(APP.rglob("*.py")) for p in probes(path)] == []


def test_no_line_silences_the_type_checker() -> None:
    marked = [f"{path.relative_to(APP.parent)}:{i}" for path in sorted(APP.rglob("*.py"))
              for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if "type: ignore" in line]
    assert marked == []
