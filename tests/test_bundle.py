"""The player's bundler (app/view/bundle.py): parts in the order of their imports, every imported name exported by
the part it names, and a clear error for a missing part, an unknown name, a cycle, a name two parts declare or
module syntax it does not read."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.view.bundle import BundleError, bundle, order
from app.view.payload import PLAYER_DIR, PLAYER_ENTRY


def parts(folder: Path, **texts: str) -> Path:
    for name, text in texts.items():
        (folder / f"{name}.js").write_text(text, encoding="utf-8")
    return folder


def test_parts_come_after_what_they_import_with_the_module_syntax_gone(tmp_path: Path) -> None:
    parts(tmp_path, a='import { B } from "./b.js";\nimport { c } from "./c.js";\nvar x = B + c();\n',
          b='import { c } from "./c.js";\nexport var B = c();\n', c="export function c() { return 1; }\n")
    assert order(tmp_path, "a.js") == ["c.js", "b.js", "a.js"]
    assert bundle(tmp_path, "a.js") == "function c() { return 1; }\n\nvar B = c();\n\nvar x = B + c();\n"


@pytest.mark.parametrize(("texts", "said"), [
    ({"a": 'import { y } from "./b.js";\n', "b": "export var x = 1;\n"}, "a.js imports y from b.js"),
    ({"a": 'import { y } from "./gone.js";\n'}, "a.js imports gone.js, which is not in"),
    ({"a": 'import { b } from "./b.js";\nexport var a = 1;\n', "b": 'import { a } from "./a.js";\nexport var b = 1;\n'},
     "import cycle: a.js -> b.js -> a.js"),
    ({"a": 'import { b } from "./b.js";\nvar name = b;\n', "b": "export var b = 1;\nfor (var name in {}) b++;\n"},
     "b.js and a.js both declare name"),
    ({"a": "export default 1;\n"}, "module syntax the bundler does not read"),
])
def test_a_part_that_does_not_bundle_is_refused_with_the_reason(tmp_path: Path, texts: dict[str, str],
                                                                 said: str) -> None:
    parts(tmp_path, **texts)
    with pytest.raises(BundleError, match=said):
        bundle(tmp_path, "a.js")


def test_the_player_bundles_every_part_from_its_entry_which_comes_last() -> None:
    found = order(PLAYER_DIR, PLAYER_ENTRY)
    assert set(found) == {p.name for p in PLAYER_DIR.glob("*.js")} and found[-1] == PLAYER_ENTRY


def test_an_async_function_is_exported_and_declared_once(tmp_path: Path) -> None:
    parts(tmp_path, a='import { b } from "./b.js";\nb();\n', b="export async function b() { return 1; }\n")
    assert bundle(tmp_path, "a.js") == "async function b() { return 1; }\n\nb();\n"
    parts(tmp_path, a='import { b } from "./b.js";\nasync function b() {}\n')
    with pytest.raises(BundleError, match="b.js and a.js both declare b"):
        bundle(tmp_path, "a.js")


def test_the_browser_race_bundles_every_module_of_app_site_js_from_its_entry() -> None:
    """app/site/js/ is one module system: every module is reached from race.js (none loads on its own), and the
    site's race.js is their bundle inside one function, which hands the window only converge and ConvergeRows."""
    import re

    from app.site.build import RACE_DIR, RACE_ENTRY, race_script

    found = order(RACE_DIR, RACE_ENTRY)
    assert set(found) == {p.name for p in RACE_DIR.glob("*.js")} and found[-1] == RACE_ENTRY
    script = race_script()
    assert script.startswith("(function () {\n\"use strict\";\n") and script.endswith("})();\n")
    assert sorted(set(re.findall(r"globalThis\.(\w+) =", script))) == ["ConvergeRows", "converge"]
