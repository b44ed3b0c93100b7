"""The rooms of app/ point one way: its import graph, read with ast (no module is imported), has no cycles,
nothing outside the bench room imports the benchmarks, and only the page and the command line import the page (and the
bench its live.py, to read a race as the page does). Each
room does one job (issue 43), and ROOM_RULES says what that allows: the engine (the numpy model and its samplers)
imports only itself and app.errors; the Hugging Face room builds on the engine, never on training; the training room
is imported by nothing the page or a race runs, only by the bench and the command line; live measurement (app/measure)
imports the engine and the sources, and nothing below it imports it; analysis reads the trace alone; the view only
draws (issue 50: its "why" line once loaded the twin and timed passes to render a recording; issue 52), so it imports
the trace, analysis and the error alone: a running race is read by the page's live.py, and each source's setting
defaults come in as data. The board (issue 54) races sources and scores answers with the referee, so it builds on the
race, the trace, analysis, live measurement, the sources and the engine, and only the page, the site (the browser's
board says what the page's says), the bench and the command line import it. Each rule is also shown failing once, on
a small app written in tmp_path with the import it forbids.
No module reads another room's files by a path built from its own location (the page once read the player's scripts
that way); a room's files are read through that room's functions. Beside the rooms, app/ holds only its package file,
the command line and the one user error (issue 26).

Every import counts, including one inside a function: a lazy import is an arrow too, only a later one.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Callable

import pytest

from tools.imports import APP, import_graph, in_room, module_names

ENTRY = "app.__main__"  # dispatches to the command line's room, and imports nothing else of ours
COMMANDS_ROOM = "app.cli"  # one module a command, the page's launch among them: it may import the page and the bench
BESIDE_ROOMS = ("__init__.py", "__main__.py", "errors.py")  # errors.py: the user error, which any room may import


def outside_rooms(app_dir: Path = APP) -> list[str]:
    """The modules that lie flat in `app_dir` rather than in a room, leaving out those BESIDE_ROOMS."""
    return sorted(path.name for path in app_dir.glob("*.py") if path.name not in BESIDE_ROOMS)


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as a path that ends where it starts, or None when the graph has none (depth-first search)."""
    state: dict[str, int] = {}  # 1: on the current path, 2: finished
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (cycle := visit(start)):
            return cycle
    return None


def arrows(graph: dict[str, set[str]], source: str, target: str, allowed: tuple[str, ...] = ()) -> list[str]:
    """Every 'a -> b' with a in room `source` and b in room `target`, leaving out the modules `allowed` to import."""
    return sorted(f"{a} -> {b}" for a, out in graph.items() if in_room(a, source) and a not in allowed
                  for b in out if in_room(b, target))


def imports_beyond(graph: dict[str, set[str]], room: str, allowed: tuple[str, ...]) -> list[str]:
    """Every 'a -> b' with a in `room` and b in neither `room` nor one of the rooms `allowed`."""
    return sorted(f"{a} -> {b}" for a, out in graph.items() if in_room(a, room)
                  for b in out if not any(in_room(b, r) for r in (room, *allowed)))


def imported_from_elsewhere(graph: dict[str, set[str]], room: str, allowed: tuple[str, ...]) -> list[str]:
    """Every 'a -> b' with b in `room` and a in neither `room` nor one of the rooms `allowed` to import it."""
    return sorted(f"{a} -> {b}" for a, out in graph.items() if not any(in_room(a, r) for r in (room, *allowed))
                  for b in out if in_room(b, room))


VIEW_RULE = ("the view only draws: it imports the trace, analysis and the error, never the race, the sources, live "
             "measurement, the engine, the Hugging Face room or training (what it shows comes in as data)")
# the page's reader of a running race (app/ui/live.py), which the bench reads races through as the page does
BENCH_READS_PAGE = ("app.ui.live",)
# the board (issue 54) races sources and scores their answers with the referee: it builds on the race, the trace,
# analysis, live measurement, the sources and the engine, and only the page, the site (its board's openings and
# columns), the bench and the command line import it
BOARD_IMPORTS = ("app.race", "app.trace", "app.analysis", "app.measure", "app.sources", "app.engine", "app.errors")
BOARD_RULE = ("the board imports only the race, the trace, analysis, live measurement, the sources, the engine, the "
              "error and itself")
BELOW_MEASURE = ("app.analysis", "app.trace", "app.race", "app.sources", "app.engine", "app.hf")
Graph = dict[str, set[str]]
# each room's one job, as the imports it may make or receive; each rule returns the arrows that break it
ROOM_RULES: dict[str, Callable[[Graph], list[str]]] = {
    "the engine imports only itself and the error": lambda g: imports_beyond(g, "app.engine", ("app.errors",)),
    "the Hugging Face room imports only the engine, the error and itself":
        lambda g: imports_beyond(g, "app.hf", ("app.engine", "app.errors")),
    "only the bench and the command line import training":
        lambda g: imported_from_elsewhere(g, "app.training", ("app.bench", COMMANDS_ROOM, ENTRY)),
    "live measurement imports only the engine, the sources, the error and itself":
        lambda g: imports_beyond(g, "app.measure", ("app.engine", "app.sources", "app.errors")),
    "no room below live measurement imports it":
        lambda g: [arrow for low in BELOW_MEASURE for arrow in arrows(g, low, "app.measure")],
    "analysis imports only the trace, the error and itself":
        lambda g: imports_beyond(g, "app.analysis", ("app.trace", "app.errors")),
    VIEW_RULE: lambda g: imports_beyond(g, "app.view", ("app.trace", "app.analysis", "app.errors")),
    BOARD_RULE: lambda g: imports_beyond(g, "app.board", BOARD_IMPORTS),
    "only the page, the site, the bench and the command line import the board":
        lambda g: imported_from_elsewhere(g, "app.board", ("app.ui", "app.site", "app.bench", COMMANDS_ROOM, ENTRY)),
}


def _located(node: ast.AST, here: Path, names: dict[str, Path]) -> Path | None:
    """The path an expression builds from `Path(__file__)` (.resolve(), .parent, .parents[n], / "name", a module-level
    name bound to one), read statically; None for anything else. A join with a computed name stops at its folder."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Path" \
            and len(node.args) == 1 and isinstance(node.args[0], ast.Name) and node.args[0].id == "__file__":
        return here
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "resolve":
        return _located(node.func.value, here, names)
    if isinstance(node, ast.Attribute) and node.attr == "parent":
        base = _located(node.value, here, names)
        return base.parent if base is not None else None
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and node.value.attr == "parents" \
            and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, int):
        base = _located(node.value.value, here, names)
        return base.parents[node.slice.value] if base is not None else None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
        base = _located(node.left, here, names)
        if base is not None and isinstance(node.right, ast.Constant) and isinstance(node.right.value, str):
            return base / node.right.value
        return base
    if isinstance(node, ast.Name):
        return names.get(node.id)
    return None


def room_of(path: Path, app_dir: Path = APP) -> str | None:
    """The room a file or folder under `app_dir` lies in (app/view/player/x.js -> app.view, app/errors.py ->
    app.errors); None for `app_dir` itself and anything outside it."""
    try:
        parts = path.relative_to(app_dir).parts
    except ValueError:
        return None
    return f"{app_dir.name}.{Path(parts[0]).stem}" if parts else None


def paths_read(path: Path) -> list[Path]:
    """Every path that a module builds in code from its own location (see `_located`), a join's folder included."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    names: dict[str, Path] = {}
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            found = _located(node.value, path, names) if node.value is not None else None
            names.update({t.id: found for t in targets if isinstance(t, ast.Name) and found is not None})
    return [found for node in ast.walk(tree) if (found := _located(node, path, names)) is not None]


def reads_across_rooms(app_dir: Path = APP) -> list[str]:
    """Every 'module reads path' where a module builds a path into another room of `app_dir` than its own."""
    return sorted({f"{name} reads {target.relative_to(app_dir.parent)}" for name, path in module_names(app_dir).items()
                  for target in paths_read(path)
                  if room_of(target, app_dir) not in (None, room_of(path, app_dir))})


def test_the_reader_sees_package_lazy_and_from_package_imports() -> None:
    graph = import_graph()
    assert "app.sources.base" in graph["app.race.run"]  # a plain from-import
    assert "app.sources.local" in graph["app.bench.pass_cost"]  # a module of a package
    assert "app.trace.library" in graph["app.ui.library_ui"]  # `from app.trace import library` names the module
    assert "app.export.html" in graph["app.ui.export_job"]  # an import inside a function
    assert "app.bench" in graph["app.cli.bench"] and "app.ui.layout" in graph["app.cli.launch"]


def command_line(graph: dict[str, set[str]]) -> tuple[str, ...]:
    """The modules of the command line: app/cli/ and the entry that dispatches to it."""
    return tuple(name for name in graph if in_room(name, COMMANDS_ROOM)) + (ENTRY,)


def test_every_command_lives_in_app_cli_and_the_entry_only_dispatches() -> None:
    from app.cli import COMMANDS

    assert import_graph()[ENTRY] == {COMMANDS_ROOM}
    for name in ("launch", *COMMANDS):
        assert (APP / "cli" / f"{name}.py").is_file(), f"the {name} command is not in app/cli/{name}.py"
        tree = ast.parse((APP / "cli" / f"{name}.py").read_text(encoding="utf-8"))
        assert "main" in {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}, name
    # training's tools run as `python -m app.training.MODULE`, never as `python -m app COMMAND`
    parsers = [p for p in APP.rglob("*.py") if "argparse" in p.read_text(encoding="utf-8")]
    outside = sorted(str(p.relative_to(APP)) for p in parsers if p.parent.name not in ("cli", "training"))
    assert outside == [], "a command's parser outside app/cli/"


def test_the_reader_finds_a_cycle_made_by_a_lazy_import(tmp_path: Path) -> None:
    room = tmp_path / "app"
    (room / "rooms").mkdir(parents=True)
    (room / "__init__.py").write_text("")
    (room / "rooms" / "__init__.py").write_text("")
    (room / "rooms" / "a.py").write_text("from app.rooms.b import thing\n")
    (room / "rooms" / "b.py").write_text("def thing():\n    from . import c\n")
    (room / "rooms" / "c.py").write_text("import app.rooms.a\n")
    assert find_cycle(import_graph(room)) == ["app.rooms.a", "app.rooms.b", "app.rooms.c", "app.rooms.a"]
    (room / "rooms" / "c.py").write_text("import json\n")
    assert find_cycle(import_graph(room)) is None


def test_no_module_of_app_imports_itself_back_through_others() -> None:
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_only_the_bench_room_and_the_command_line_import_the_benchmarks() -> None:
    graph = import_graph()
    bench = tuple(name for name in graph if in_room(name, "app.bench")) + command_line(graph)
    assert arrows(graph, "app", "app.bench", allowed=bench) == []


def test_only_the_command_line_and_the_bench_import_the_site_builder() -> None:
    graph = import_graph()
    allowed = tuple(name for name in graph if in_room(name, "app.site") or in_room(name, "app.bench")) + \
        command_line(graph)
    assert arrows(graph, "app", "app.site", allowed=allowed) == []


def test_only_the_page_and_the_command_line_import_the_page() -> None:
    graph = import_graph()
    page = tuple(name for name in graph if in_room(name, "app.ui")) + command_line(graph)
    assert arrows(graph, "app", "app.ui", allowed=page) == [f"{a} -> {b}" for a, out in sorted(graph.items())
                                                           if in_room(a, "app.bench") for b in sorted(out)
                                                           if b in BENCH_READS_PAGE]


def test_the_view_imports_neither_the_page_nor_the_exports_that_draw_with_it() -> None:
    graph = import_graph()
    assert arrows(graph, "app.view", "app.ui") + arrows(graph, "app.view", "app.export") == []


def test_the_race_and_the_trace_import_neither_the_analysis_nor_the_view_built_on_them() -> None:
    graph = import_graph()
    found = [arrow for low in ("app.race", "app.trace", "app.sources")
             for high in ("app.analysis", "app.view") for arrow in arrows(graph, low, high)]
    assert found == []


def test_the_path_reader_finds_a_read_into_another_room_through_a_name(tmp_path: Path) -> None:
    room = tmp_path / "app"
    for folder in ("view", "ui/player"):
        (room / folder).mkdir(parents=True)
    (room / "view" / "payload.py").write_text(
        "from pathlib import Path\nUI_DIR = Path(__file__).resolve().parent.parent / 'ui'\n"
        "def script(name):\n    return (UI_DIR / 'player' / name).read_text()\n")
    (room / "view" / "theme.py").write_text("from pathlib import Path\nTHEME = Path(__file__).parent / 'theme.json'\n")
    (room / "store.py").write_text("from pathlib import Path\nDIR = Path(__file__).resolve().parents[1] / 'data'\n")
    assert reads_across_rooms(room) == ["app.view.payload reads app/ui", "app.view.payload reads app/ui/player"]
    (room / "view" / "payload.py").write_text("from pathlib import Path\nDIR = Path(__file__).parent / 'player'\n")
    assert reads_across_rooms(room) == []


def test_no_module_reads_another_rooms_files_by_path() -> None:
    assert reads_across_rooms() == []


def test_the_room_reader_finds_a_module_left_flat_beside_the_rooms(tmp_path: Path) -> None:
    room = tmp_path / "app"
    (room / "race").mkdir(parents=True)
    for name in (*BESIDE_ROOMS, "race/__init__.py", "race/run.py"):
        (room / name).write_text("")
    assert outside_rooms(room) == []
    (room / "compute.py").write_text("")
    assert outside_rooms(room) == ["compute.py"]


def test_app_holds_rooms_and_beside_them_only_the_package_the_command_line_and_the_error() -> None:
    assert outside_rooms() == []


@pytest.mark.parametrize("rule", ROOM_RULES)
def test_each_room_keeps_to_its_job(rule: str) -> None:
    assert ROOM_RULES[rule](import_graph()) == []


# a small app whose every room keeps its rule: each import here is one a rule allows
ALLOWED_APP = {
    "errors.py": "",
    "__main__.py": "from app.training import train\n",
    "engine/model.py": "from app.errors import UserError\n",
    "hf/models.py": "from app.engine.model import load_twin\nfrom app.errors import UserError\n",
    "training/stories.py": "",
    "training/train.py": "from app.training.stories import read\nfrom app.measure.quality import quality\n",
    "measure/quality.py": "from app.engine import model\n",
    "measure/sweeps.py": "from app.sources.local import twin\nfrom app.measure import quality\n",
    "sources/local.py": "from app.engine.model import load_twin\n",
    "trace/frames.py": "",
    "analysis/changes.py": "from app.trace.frames import Frame\nfrom app.errors import UserError\n",
    "race/run.py": "",
    "sources/base.py": "",
    "view/why.py": "from app.trace.frames import Frame\nfrom app.analysis.changes import metrics\n",
    "ui/live.py": "from app.race.run import Race\nfrom app.view.why import line\n",
    "view/side.py": "from app.analysis.changes import metrics\n",
    "bench/twins.py": "def openings():\n    from app.training.stories import read\n",
    "cli/stats.py": "from app.analysis.changes import metrics\n",
    "ui/layout.py": "from app.view.why import line\n",
    "board/run.py": "from app.race.run import Race\nfrom app.measure.quality import nll\n",
    "cli/board.py": "from app.board.run import Board\n",
}
# for each rule, one module rewritten with an import the rule forbids, and the arrow it must then report
FORBIDDEN = {
    "the engine imports only itself and the error":
        ("engine/model.py", "from app.hf.models import load\n", "app.engine.model -> app.hf.models"),
    "the Hugging Face room imports only the engine, the error and itself":
        ("hf/models.py", "def fit():\n    from app.training import train\n", "app.hf.models -> app.training.train"),
    "only the bench and the command line import training":
        ("ui/layout.py", "from app.training.stories import read\n", "app.ui.layout -> app.training.stories"),
    "live measurement imports only the engine, the sources, the error and itself":
        ("measure/sweeps.py", "from app.view.why import line\n", "app.measure.sweeps -> app.view.why"),
    "no room below live measurement imports it":
        ("analysis/changes.py", "from app.measure import sweeps\n", "app.analysis.changes -> app.measure.sweeps"),
    "analysis imports only the trace, the error and itself":
        ("analysis/changes.py", "from app.cli import stats\n", "app.analysis.changes -> app.cli.stats"),
    VIEW_RULE:
        ("view/why.py", "def cost():\n    from app.measure.sweeps import run\n", "app.view.why -> app.measure.sweeps"),
    BOARD_RULE: ("board/run.py", "from app.view.why import line\n", "app.board.run -> app.view.why"),
    "only the page, the site, the bench and the command line import the board":
        ("view/side.py", "from app.board.run import Board\n", "app.view.side -> app.board.run"),
}


def write_app(root: Path, files: dict[str, str]) -> Path:
    """Writes `files` (paths under app/ -> source) into `root`/app with a package file in every folder; returns app/."""
    app = root / "app"
    for name, text in files.items():
        path = app / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        for folder in (path.parent, *path.parent.parents):
            if folder == root:
                break
            (folder / "__init__.py").touch()
    return app


def test_every_room_rule_has_a_case_that_breaks_it() -> None:
    assert set(FORBIDDEN) == set(ROOM_RULES)


@pytest.mark.parametrize("rule", ROOM_RULES)
def test_a_room_rule_catches_the_import_it_forbids(tmp_path: Path, rule: str) -> None:
    app = write_app(tmp_path, ALLOWED_APP)
    assert {name: ROOM_RULES[name](import_graph(app)) for name in ROOM_RULES} == {name: [] for name in ROOM_RULES}
    module, text, arrow = FORBIDDEN[rule]
    (app / module).write_text(text)
    assert ROOM_RULES[rule](import_graph(app)) == [arrow]


def test_the_view_rule_names_each_import_of_a_model_room_the_race_or_the_sources(tmp_path: Path) -> None:
    app = write_app(tmp_path, ALLOWED_APP)
    (app / "view" / "why.py").write_text("from app.engine.model import load_twin\nfrom app.race.run import Race\n"
                                         "from app.sources.base import REGISTRY\n")
    assert ROOM_RULES[VIEW_RULE](import_graph(app)) == [
        "app.view.why -> app.engine.model", "app.view.why -> app.race.run", "app.view.why -> app.sources.base"]
