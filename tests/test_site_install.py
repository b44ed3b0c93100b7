"""Installing the browser race's runtime (app/site/build.py `runtime_dir`, issue 50 item 8): said before it starts,
done once (a second process waits for the first, then finds it installed and runs no npm), and a failure quotes npm's
error, never its last line (a success line such as "added 18 packages" when npm itself succeeded). Real npm, on a
site folder whose package.json and package-lock.json disagree, so npm refuses at once without asking the registry."""

from __future__ import annotations

import fcntl
import shutil
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from app.errors import UserError
from app.site.build import INSTALL_LOCK, ORT_FILES, runtime_dir

pytestmark = pytest.mark.skipif(shutil.which("npm") is None, reason="npm is not installed")


def out_of_sync(folder: Path) -> Path:
    """A site folder npm ci refuses: a dependency the lock file does not hold."""
    (folder / "package.json").write_text('{"name": "x", "version": "1.0.0", "dependencies": {"left-pad": "1.3.0"}}')
    (folder / "package-lock.json").write_text('{"name": "x", "version": "1.0.0", "lockfileVersion": 3, '
                                              '"requires": true, "packages": {"": {"name": "x", "version": "1.0.0"}}}')
    return folder


def test_a_failed_install_is_said_first_and_quotes_npms_error(tmp_path: Path) -> None:
    said: list[str] = []
    with pytest.raises(UserError) as refused:
        runtime_dir(out_of_sync(tmp_path), said.append)
    assert len(said) == 1 and said[0].startswith("Installing onnxruntime-web") and "npm ci" in said[0]
    assert "package-lock.json" in str(refused.value) and "in sync" in str(refused.value), refused.value
    assert "Missing: left-pad@1.3.0" in str(refused.value) and "complete log" not in str(refused.value)


def test_a_second_process_waits_for_the_first_install_and_runs_no_npm(tmp_path: Path) -> None:
    """While another process holds the install lock, runtime_dir says it waits; once that install has put the
    runtime's files in place and let go, it returns them without running npm (which would fail on this folder)."""
    site = out_of_sync(tmp_path)
    said: list[str] = []
    found: list[Any] = []
    with open(site / INSTALL_LOCK, "w") as other:
        fcntl.flock(other, fcntl.LOCK_EX)  # the first process, installing
        waiter = threading.Thread(target=lambda: found.append(runtime_dir(site, said.append)))
        waiter.start()
        deadline = time.monotonic() + 60
        while not said:  # until the second says it waits for the lock
            assert time.monotonic() < deadline and waiter.is_alive(), found
            time.sleep(0.01)  # polling interval, not synchronisation
        dist = site / "node_modules" / "onnxruntime-web" / "dist"
        dist.mkdir(parents=True)
        for name in ORT_FILES:  # what the first install leaves
            (dist / name).write_text("installed")
        fcntl.flock(other, fcntl.LOCK_UN)
    waiter.join(60)
    assert said == ["Waiting for another process to finish installing onnxruntime-web ..."]
    assert found == [dist]
