"""One policy check, everywhere (issue 21 item 4): read with ast, no module of the page (app/ui) but the policy module
(app/ui/visitor.py) can make a source or load a model any other way than through its `allowed_source`; and a served
page refuses a Hugging Face path through the pass-cost handler, and every other door, with the same sentence whether
the path exists or not."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from app.errors import UserError
from app.serving.policy import from_launch
from app.ui.sweeps_tab import pass_cost_handler
from app.ui.visitor import Visitor, allowed_source

APP = Path(__file__).resolve().parent.parent / "app"
POLICY_MODULE = "visitor.py"
LOADERS = {"make_source", "twin", "load_twin", "SamplerSource", "make_hf_ar", "make_hf_diffusion", "load_model",
           "from_pretrained"}  # what makes a source or loads weights when called
NEEDS = {"Race": ("make", 99), "iter_sweep": ("models", 3), "load_hf": ("make", 2)}  # (keyword, position) of the
# factory or models a call must be handed, since without them these fall back to make_source or load the twins


def _called(node: ast.Call) -> str:
    f = node.func
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""


def bypasses(source: str, name: str = "module") -> list[str]:
    """Every way `source` (a page module's text) could make a source or load a model without the policy function."""
    found = []
    for node in ast.walk(ast.parse(source, name)):
        if isinstance(node, ast.ImportFrom):
            found += [f"{name}:{node.lineno} imports {a.name}" for a in node.names if a.name in LOADERS]
        elif isinstance(node, (ast.Name, ast.Attribute)):
            ident = node.id if isinstance(node, ast.Name) else node.attr
            if ident in LOADERS:
                found.append(f"{name}:{node.lineno} uses {ident}")
        if isinstance(node, ast.Attribute) and node.attr == "load" and isinstance(node.value, ast.Name) \
                and node.value.id == "sweeps":
            found.append(f"{name}:{node.lineno} uses sweeps.load")
        if isinstance(node, ast.Call) and _called(node) in NEEDS:
            keyword, position = NEEDS[_called(node)]
            if not (len(node.args) > position or any(k.arg == keyword for k in node.keywords)):
                found.append(f"{name}:{node.lineno} calls {_called(node)} without {keyword}")
    return sorted(set(found))


def page_modules() -> list[Path]:
    return sorted(p for p in (APP / "ui").rglob("*.py") if p.name != POLICY_MODULE)


def test_no_page_module_makes_a_source_or_loads_a_model_but_through_the_policy_function() -> None:
    found = [hit for path in page_modules() for hit in bypasses(path.read_text(encoding="utf-8"), path.name)]
    assert found == []
    assert len(page_modules()) > 5


def test_the_reader_finds_each_way_around_the_policy() -> None:
    """The pass-cost handler as it was (make_source by way of load_hf, the twin loaded by hand), and other doors."""
    before = ("from app.sources.local import twin\n"
              "def run(hf, device):\n    model, _ = twin('diffusion')\n    return pass_cost.load_hf(hf, device)\n")
    assert bypasses(before) == ["module:1 imports twin", "module:3 uses twin", "module:4 calls load_hf without make"]
    assert bypasses("import app.sources.base as b\nb.make_source('hf-ar:/x')\n") == ["module:2 uses make_source"]
    assert bypasses("race = Race(prompt, 'a', 'b')\n") == ["module:1 calls Race without make"]
    assert bypasses("sweeps.iter_sweep('steps', [8], prompts)\nm = sweeps.load()\n") == [
        "module:1 calls iter_sweep without models", "module:2 uses sweeps.load"]
    assert bypasses("race = Race(prompt, 'a', 'b', make=visitor_source(v))\n"
                    "sweeps.iter_sweep('steps', [8], prompts, twins(policy))\n") == []


@pytest.mark.parametrize("spec", ["hf-ar:{tmp}", "hf-ar:{tmp}/no-such-folder", "hf-diffusion:{tmp}", "hf-ar:gpt2"])
def test_a_served_page_refuses_hugging_face_paths_with_one_sentence_whether_they_exist_or_not(spec: str,
                                                                                            tmp_path: Path) -> None:
    spec = spec.format(tmp=tmp_path)
    (tmp_path / "config.json").write_text("{}")
    served = from_launch("0.0.0.0", env={})
    with pytest.raises(UserError) as refused:
        allowed_source(Visitor(served), spec)
    assert str(refused.value) == "This server runs only the Hugging Face models its host named, and it named none."


def test_the_pass_cost_handler_applies_the_policy(tmp_path: Path) -> None:
    """Issue 21: with hf-models off, `hf-ar:/any/local/folder` loaded and was timed; now it is refused, and the answer
    is the same for a folder that exists and one that does not."""
    (tmp_path / "config.json").write_text("{}")
    served = from_launch("0.0.0.0", env={})
    answers = []
    for folder in (tmp_path, tmp_path / "missing"):
        last = list(pass_cost_handler([1, 2], served)(f"hf-ar:{folder}", "cpu"))[-1]
        answers.append(last[1].rpartition(" The pass-cost sweep ")[2])  # after the twin's timings, which vary
    assert answers[0] == answers[1]
    assert answers[0] == ("could not run: This server runs only the Hugging Face models "
                          "its host named, and it named none.")


def test_a_served_load_failure_reads_the_same_whatever_the_cause(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """With hf-models allowed, a missing folder and a folder that is not a model answer with one sentence."""
    pytest.importorskip("transformers", reason="transformers is not installed")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    (tmp_path / "config.json").write_text("{}")
    served = from_launch("0.0.0.0", allow=["hf-models"], env={})
    said = set()
    for spec in (f"hf-ar:{tmp_path}", f"hf-ar:{tmp_path}/missing", f"hf-diffusion:{tmp_path}"):
        with pytest.raises(UserError) as failed:
            allowed_source(Visitor(served), spec)
        said.add(str(failed.value))
    assert len(said) == 1 and str(tmp_path) not in said.pop()
