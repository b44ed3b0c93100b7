"""The suite's hooks and its per-test recordings folder; twins, servers and browsers come from tests/fixtures.py,
loaded here as a plugin, so every test module sees them."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any, Iterator

import pytest

pytest_plugins = ["tests.fixtures", "tests.parallel"]


@pytest.fixture(autouse=True)
def recordings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test saves its runs in its own folder, never in the repo's recordings/."""
    folder = tmp_path / "recordings"
    folder.mkdir()
    monkeypatch.setenv("CONVERGE_RECORDINGS", str(folder))
    return folder


_gradio_dir: list[str] = []  # the folder pytest_configure made for this run, removed when it ends
_tree: list[dict[str, str]] = []  # the repository's changed and untracked files when the run began
ROOT = Path(__file__).resolve().parent.parent
_leaks: list[str] = []  # keys found in pages and test output, reported when the session ends


def pytest_configure(config: pytest.Config) -> None:
    """Gradio's upload and cache folder for this run, created before any test imports gradio, so it can be searched;
    each worker of a parallel run gets its own (they inherit the main process's environment), since one worker's
    served page may clear Gradio's folder while another's upload is moving a file through it."""
    import tempfile

    if "GRADIO_TEMP_DIR" not in os.environ or hasattr(config, "workerinput"):
        os.environ["GRADIO_TEMP_DIR"] = tempfile.mkdtemp(prefix="converge-test-gradio-")
        _gradio_dir.append(os.environ["GRADIO_TEMP_DIR"])


def pytest_sessionstart(session: pytest.Session) -> None:
    """Reads the repository's tree before any test runs (in the main process only: workers share its tree)."""
    from tests.clean_tree import snapshot

    if not hasattr(session.config, "workerinput") and (ROOT / ".git").exists():
        _tree.append(snapshot(ROOT))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Fails the run when it left the repository other than it found it: a file written, changed or removed. A
    worker of a parallel run hands its reliability tally to the main process instead (pytest_testnodedown)."""
    from tests import reliability
    from tests.clean_tree import changed, snapshot

    if hasattr(session.config, "workerinput"):
        session.config.workeroutput["reliability"] = dict(reliability.COUNTS)  # type: ignore[attr-defined]
        return
    if not _tree:
        return
    left = changed(_tree[0], snapshot(ROOT))
    if left:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.ensure_newline()
            reporter.write_sep("=", "the run left the repository changed", red=True)
            for path in left:
                reporter.write_line(f"  {path}")


# what a test needs, read from the fixtures it uses (transitively) and the libraries its module imports, as marks: the
# fast lane for the edit loop is `-m "not browser and not server and not torch"` (README)
SERVER_FIXTURES = {"server_url", "wire_server", "fast_server", "served", "served_app", "run_on_url", "app_url",
                   "sweeps_url", "launched", "server_run", "server", "url", "page"}
# a server started in the test's own body or in a fixture it uses (tests/served.py `served_process`: a served page in
# its own process)
SERVER_CALLS = ("serve_page(", "serve(", "Popen(", "launch(", "served_process(")
# the benches that start a served page and drive Chromium themselves (app/bench/served.py, app/bench/browser.py)
BROWSER_BENCHES = ("app.bench.served", "app.bench.browser")
SITE_FIXTURES = {"site", "single"}
TORCH_IMPORTS = ("import torch", "from transformers", "import transformers", "import diffusers", "from diffusers",
                 'importorskip("torch"', 'importorskip("transformers"', "tests.hf_families", "from tests import hf_")


_sources: dict[Any, str] = {}  # each function's source, read once (a fixture is used by many tests)


def _source(func: Any) -> str:
    """The source of a function ("" where it cannot be read)."""
    import inspect

    if func not in _sources:
        try:
            _sources[func] = inspect.getsource(func)
        except (AttributeError, OSError, TypeError):
            _sources[func] = ""
    return _sources[func]


def _body(item: pytest.Item) -> str:
    """The source of a test function and of the suite's own fixtures it uses, at any depth, but `browser` (its
    Chromium launch is the browser mark's) ("" where none can be read)."""
    info = getattr(item, "_fixtureinfo", None)
    defs = getattr(info, "name2fixturedefs", {}) or {}
    fixtures = [d.func for name, fixturedefs in defs.items() for d in fixturedefs
                if name != "browser" and getattr(d.func, "__module__", "").startswith("tests")]
    return "\n".join(_source(f) for f in [getattr(item, "function", None), *fixtures])


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Marks each test `browser`, `server`, `site` or `torch` from what it uses, so no mark is forgotten by hand."""
    sources: dict[Path, str] = {}
    for item in items:
        used = set(getattr(item, "fixturenames", ()))
        if "browser" in used:
            item.add_marker("browser")
        body = _body(item)
        if used & SERVER_FIXTURES or any(call in body for call in SERVER_CALLS):
            item.add_marker("server")
        if any(bench in body for bench in BROWSER_BENCHES):
            item.add_marker("browser")
            item.add_marker("server")
        if used & SITE_FIXTURES:
            item.add_marker("site")
        path = Path(str(item.fspath))
        if path not in sources:
            sources[path] = path.read_text(encoding="utf-8") if path.suffix == ".py" else ""
        if any(text in sources[path] for text in TORCH_IMPORTS):
            item.add_marker("torch")


def pytest_unconfigure(config: pytest.Config) -> None:
    for folder in _gradio_dir:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session", autouse=True)
def sentinel_keys(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """The whole suite runs with sentinel API keys (sources default to an unreachable loopback URL, so none leaves the
    machine); at the end every file it wrote, every captured output and log, and every page it opened must be free of
    them."""
    import logging
    import tempfile

    from tests import sentinels
    from tests.reliability import tally

    base = tmp_path_factory.getbasetemp()
    records: list[str] = []
    handler = logging.Handler(logging.DEBUG)
    handler.emit = lambda record: records.append(handler.format(record))  # type: ignore[method-assign]
    handler.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))
    logging.getLogger().addHandler(handler)
    with pytest.MonkeyPatch.context() as mp:
        for name, value in sentinels.ENV.items():
            mp.setenv(name, value)
        for name in ("INCEPTION_BASE_URL", "OPENAI_BASE_URL"):
            mp.setenv(name, sentinels.UNREACHABLE)
        scratch = base / "tempfile"
        scratch.mkdir(exist_ok=True)
        mp.setattr(tempfile, "tempdir", str(scratch))  # exports and downloads made with mkdtemp land here
        yield dict(sentinels.ENV)
    logging.getLogger().removeHandler(handler)
    folders = [base, Path(os.environ.get("GRADIO_TEMP_DIR", base))]
    files, leaks = sentinels.scan_files(folders)
    leaks += [f"log: {r[:200]}" for r in records if sentinels.found_in(r)] + _leaks
    tally("sentinel_keys", len(sentinels.ALL))
    tally("secret_scans", files + len(records))
    tally("leaks", len(leaks))
    assert not leaks, "sentinel API keys leaked:\n" + "\n".join(leaks)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """After each test body, while its pages are still open, searches their text for sentinel keys."""
    try:
        return (yield)
    finally:
        from tests import sentinels
        from tests.pages import OPEN_TABS
        from tests.reliability import tally

        for tab in list(OPEN_TABS):
            OPEN_TABS.remove(tab)
            try:
                if tab.is_closed():
                    continue
                keys = sentinels.found_in(sentinels.page_text(tab))
            except Exception:  # a tab the test left broken: nothing to read
                continue
            tally("secret_scans")
            _leaks.extend(f"page of {item.nodeid}: {k}" for k in keys)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[pytest.TestReport]:
    """Searches each test's captured stdout, stderr and log, and its failure report, for sentinel keys."""
    report = yield
    from tests import sentinels
    from tests.reliability import tally

    text = "\n".join(content for _, content in report.sections) + "\n" + (report.longreprtext or "")
    tally("secret_scans")
    _leaks.extend(f"output of {item.nodeid} ({report.when}): {k}" for k in sentinels.found_in(text))
    return report


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """A parallel run's worker is done: its reliability tally joins the main process's (pytest-xdist)."""
    from tests import reliability

    reliability.merge(getattr(node, "workeroutput", {}).get("reliability", {}))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Prints the reliability table (tests/reliability.py) and writes it where CONVERGE_RELIABILITY_OUT says."""
    from tests import reliability

    if not any(k in reliability.COUNTS for k in ("hostile_inputs", "fuzz_stream_cases", "fuzz_recording_cases",
                                                   "faults_injected", "concurrent_sessions", "security_attacks",
                                                   "input_attacks",
                                                   "shared_attacks", "bounded_races", "parser_crashes",
                                                   "route_attacks")):
        return
    terminalreporter.write_sep("=", "reliability")
    terminalreporter.write_line(reliability.table())
    out = os.environ.get("CONVERGE_RELIABILITY_OUT")
    if out:
        reliability.write(out)
