"""ES modules joined into one classic script, in pure Python (no npm to run): the player's (app/view/player/*.js)
and the browser race's (app/site/js/*.js).

Each part names what it uses: `import { a, b } from "./part.js";` at the top, and `export function` /
`export async function` / `export var` / `export const` / `export let` before what it hands on (one name a
statement). `bundle` starts at the entry part, follows the imports depth first (a part comes after every part it
imports, in the order it imports them), checks that each imported name is one the named part exports, raises
BundleError on a missing part, an unknown name or a cycle, and drops the import statements and the `export `
keywords: what is left are the parts' top-level declarations in one shared scope, which the caller wraps
(app/view/payload.py player_script, app/site/build.py race_script). Since a module's names are its own and that
scope is shared, two parts declaring the same top-level name (a `var`, `let`, `const` or `function` at the start
of a line, or a `for (var x` loop there) is a BundleError too. Only this subset of module syntax is read; anything
else that starts a line with `import` or `export` is an error, not passed through.
"""

from __future__ import annotations

import re
from pathlib import Path

IMPORT = re.compile(r'^import\s*\{([^}]*)\}\s*from\s*"\./([\w-]+\.js)";[ \t]*\n?', re.M)
EXPORT = re.compile(r"^export (?=(?:async function|function|var|const|let)\s)", re.M)
EXPORTED = re.compile(r"^export (?:(?:async )?function\s*\*?\s*|var\s+|const\s+|let\s+)([A-Za-z_$][\w$]*)", re.M)
OTHER = re.compile(r"^(?:import|export)\b", re.M)
TOP_LEVEL = re.compile(
    r"^(?:export )?(?:(?:var|let|const|(?:async )?function\s*\*?)\s+|for \((?:var|let) )([A-Za-z_$][\w$]*)", re.M)


class BundleError(ValueError):
    """The parts do not bundle: a missing part, a name a part imports but its source does not export, a cycle, a
    top-level name two parts declare, or module syntax the bundler does not read."""


def imports(text: str) -> list[tuple[str, list[str]]]:
    """(part file name, [imported names]) for each import statement of a part, in order."""
    return [(m.group(2), [n.strip() for n in m.group(1).split(",") if n.strip()]) for m in IMPORT.finditer(text)]


def exports(text: str) -> set[str]:
    """The names a part exports."""
    return set(EXPORTED.findall(text))


def body(text: str) -> str:
    """A part without its import statements and export keywords; BundleError on other module syntax."""
    rest = EXPORT.sub("", IMPORT.sub("", text))
    stray = OTHER.search(rest)
    if stray:
        line = rest[stray.start():].splitlines()[0]
        raise BundleError(f"module syntax the bundler does not read: {line!r}")
    return rest


def order(folder: Path, entry: str) -> list[str]:
    """The parts reachable from `entry` (a file name in `folder`), each after the parts it imports."""
    done: list[str] = []
    texts: dict[str, str] = {}

    def visit(name: str, path: tuple[str, ...]) -> None:
        if name in done:
            return
        if name in path:
            raise BundleError("import cycle: " + " -> ".join((*path[path.index(name):], name)))
        file = folder / name
        if not file.is_file():
            raise BundleError(f"{path[-1] if path else 'the entry'} imports {name}, which is not in {folder}")
        texts[name] = file.read_text(encoding="utf-8")
        for source, names in imports(texts[name]):
            visit(source, (*path, name))
            unknown = sorted(set(names) - exports(texts[source]))
            if unknown:
                raise BundleError(f"{name} imports {', '.join(unknown)} from {source}, which does not export it")
        done.append(name)

    visit(entry, ())
    return done


def bundle(folder: Path, entry: str) -> str:
    """The parts reachable from `entry`, in dependency order, as one text with no module syntax left."""
    texts = {name: (folder / name).read_text(encoding="utf-8") for name in order(folder, entry)}
    owner: dict[str, str] = {}
    for name, text in texts.items():
        for declared in set(TOP_LEVEL.findall(text)):
            if declared in owner:
                raise BundleError(f"{owner[declared]} and {name} both declare {declared} at the top level")
            owner[declared] = name
    return "\n".join(body(text) for text in texts.values())
