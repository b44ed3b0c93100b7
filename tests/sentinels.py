"""Sentinel API keys for the whole suite, and the scans that prove none of them leaks.

The suite runs with these values in the environment (conftest plants them for the session) and the wire server's
key is one too; every file the suite writes, every test's captured output and log, every failure report and the text
of every open page are searched for them, and the run fails if one shows up anywhere.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

from tests.wire_server import DEFAULT_KEY

ENV = {"INCEPTION_API_KEY": "sk-inception-SENTINEL-3f9a7c1e5b", "OPENAI_API_KEY": "sk-openai-SENTINEL-8d2b6e40a7"}
TYPED = "sk-typed-SENTINEL-51c0ffee42"  # what tests type into the page's key fields
UNREACHABLE = "http://127.0.0.1:9/v1"  # the base URL sources get unless a test points them at a wire server
ALL = (*ENV.values(), DEFAULT_KEY, TYPED)


def found_in(text: str | bytes) -> list[str]:
    """The sentinel keys that occur in `text`."""
    if isinstance(text, bytes):
        return [k for k in ALL if k.encode() in text]
    return [k for k in ALL if k in text]


def scan_files(folders: Iterable[Path]) -> tuple[int, list[str]]:
    """(files scanned, 'path: keys' for each file under `folders` that holds a sentinel key)."""
    count, leaks = 0, []
    for folder in folders:
        if not folder.is_dir():
            continue
        for path in folder.rglob("*"):
            if path.is_file() and not path.is_symlink():
                count += 1
                try:
                    keys = found_in(path.read_bytes())
                except OSError:
                    continue
                if keys:
                    leaks.append(f"{path}: {', '.join(keys)}")
    return count, leaks


def page_text(tab: Any) -> str:
    """Everything a page shows or holds in its DOM, and the values of its fields except password fields."""
    return tab.content() + "\n" + tab.evaluate(
        "() => [...document.querySelectorAll('input, textarea, select')]"
        ".filter(e => e.type !== 'password').map(e => e.value).join('\\n')")
