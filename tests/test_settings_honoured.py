"""Every source kind honours every setting it offers, and offers no other (issue 39, item 3): for each kind, and for
each way hf-diffusion runs a model (Converge's masked sampler, LLaDA2.x through diffusers' LLaDA2Pipeline,
DiffusionGemma through its own generate()), a setting its backend does not declare is refused by `generate` and
`record` in one sentence naming the source and the setting, is neither shown nor sent by the page, and is absent from
the recording, which keeps what the source applied."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from app.errors import UserError
from app.sources.base import REGISTRY, load_plugins, make_source
from app.trace.reading import read_recording
from tests.fixtures import needs_twins

torch = pytest.importorskip("torch", reason="torch is not installed")
pytest.importorskip("transformers", reason="transformers is not installed")
pytest.importorskip("diffusers", reason="diffusers is not installed (requirements-test.txt)")

from tests.hf_families import build_diffusion_gemma, build_llada2  # noqa: E402  (needs torch and transformers)
from tests.test_hf import build_tiny_models  # noqa: E402

load_plugins()
REPLAY = "replay:example/01-confidence-blocks.jsonl"
# kind -> (its source name, with {model} for a tiny Hugging Face model; a setting it does not honour; a value the CLI
# could give that setting; whether the page offers its side pins)
CASES = {
    "local-diffusion": ("local-diffusion", "top_p", "0.5", True),
    "local-uniform": ("local-uniform", "scoring", "margin", False),
    "local-ar": ("local-ar", "scoring", "margin", False),
    "mercury": ("mercury", "seed", "3", False),
    "openai": ("openai:mercury-2", "diffusing", "false", False),
    "hf-diffusion masked": ("hf-diffusion:{bert}", "editing_threshold", "0.9", True),
    "hf-diffusion LLaDA2": ("hf-diffusion:{llada2}", "scoring", "margin", False),
    "hf-diffusion DiffusionGemma": ("hf-diffusion:{gemma}", "scoring", "margin", False),
    "hf-ar": ("hf-ar:{gpt2}", "shift", "shifted", False),
    "replay": (REPLAY, "temperature", "0.5", False),
}
# what LLaDA2Pipeline has no parameter for, each refused (the issue: shown and recorded, never passed on)
NOT_FOR_LLADA2 = ("scoring", "schedule", "factor", "filter", "remask", "eos_discount", "no_repeat", "no_repeat_ngram",
                  "min_gap", "min_length", "prefix_cache", "dual_cache", "lookahead", "pins", "shift",
                  "block_attention")
RECORDED_BESIDE = {"model", "original"}  # what a header names beside the settings: the model, a replay's original


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("honoured")
    tiny = build_tiny_models(root / "tiny")
    return {"bert": tiny["bert"], "gpt2": tiny["gpt2"], "llada2": build_llada2(root / "llada2"),
            "gemma": build_diffusion_gemma(root / "gemma")}


def spec_of(case: str, models: dict[str, Path]) -> str:
    return CASES[case][0].format(**{k: str(v) for k, v in models.items()})


def flag_of(name: str) -> str:
    from app.cli.generate import parser

    return next(a.option_strings[-1] for a in parser()._actions if a.dest == name)


def says_source_and_setting(text: str, spec: str, name: str) -> None:
    """One sentence (one line, one full stop at its end) naming the source and the setting."""
    line = text.strip()
    assert "\n" not in line and spec in line and repr(name) in line and line.endswith("."), line


@pytest.mark.parametrize("case", CASES)
def test_generate_refuses_a_setting_the_source_does_not_honour(case: str, models: dict[str, Path], capsys) -> None:
    from app.cli.generate import main

    spec, name, value, _ = CASES[case]
    spec = spec_of(case, models)
    assert main(["--source", spec, "--prompt", "Once upon a time", flag_of(name), value]) == 2
    says_source_and_setting(capsys.readouterr().err, spec, name)


@pytest.mark.parametrize("case", CASES)
def test_record_refuses_a_setting_the_source_does_not_honour_before_writing(case: str, models: dict[str, Path],
                                                                            tmp_path: Path, capsys) -> None:
    from app.cli.record import main as record

    spec, name, value, _ = CASES[case]
    spec, out = spec_of(case, models), tmp_path / "race.jsonl"
    argv = ["--left", spec, "--right", "local-ar", "--prompt", "Hi", "--out", str(out),
            "--left-settings", json.dumps({name: value})]
    assert record(argv) == 2 and not out.exists()
    says_source_and_setting(capsys.readouterr().err, spec, name)


@pytest.mark.parametrize("name", NOT_FOR_LLADA2)
def test_llada2_refuses_every_setting_its_pipeline_has_no_parameter_for(name: str, models: dict[str, Path]) -> None:
    from app.sources.hf import LLADA2

    spec = f"hf-diffusion:{models['llada2']}"
    value = ["3:cat"] if name == "pins" else 1
    with pytest.raises(UserError) as e:
        make_source(spec, **{name: value})
    if name == "pins":
        assert str(e.value) == LLADA2.why_not["pins"]
    else:
        says_source_and_setting(str(e.value), spec, name)


def side(case: str, models: dict[str, Path]) -> tuple[Any, str, str]:
    """The page's left side controls, and the kind and model picked for the case."""
    import gradio as gr

    from app.ui.sources_ui import side_controls

    with gr.Blocks():
        controls = side_controls("left", "local-diffusion")
    prefix, _, arg = spec_of(case, models).partition(":")
    return controls, prefix, arg


def shown(controls: Any, prefix: str, arg: str) -> set[str]:
    """The settings whose controls the side shows once `prefix` and model `arg` are picked."""
    switched = dict(zip(map(id, controls.switched()), controls.show(prefix, arg)))
    return {name for p, name, _, c in controls.settings
            if p == prefix and switched.get(id(c), {"visible": c.visible})["visible"]}


@pytest.mark.parametrize("case", CASES)
def test_the_page_neither_shows_nor_sends_a_setting_the_source_does_not_honour(case: str,
                                                                               models: dict[str, Path]) -> None:
    controls, prefix, arg = side(case, models)
    name = CASES[case][1]
    defaults = [spec["default"] for _, _, spec, _ in controls.settings]
    _, sent, _ = controls.read([prefix, arg, ""] + defaults)
    assert name not in shown(controls, prefix, arg) and name not in sent
    assert set(sent) == shown(controls, prefix, arg)  # what a side shows is what it sends


def test_the_page_shows_llada2_its_pipelines_settings_and_a_masked_model_its_samplers(models: dict[str, Path]) -> None:
    controls, _, llada2 = side("hf-diffusion LLaDA2", models)
    _, _, bert = side("hf-diffusion masked", models)
    pipeline = shown(controls, "hf-diffusion", llada2)
    sampler = shown(controls, "hf-diffusion", bert)
    assert {"editing_threshold", "max_post_steps", "top_p", "steps", "threshold"} <= pipeline
    assert not pipeline & set(NOT_FOR_LLADA2)
    assert {"scoring", "shift", "lookahead"} <= sampler
    assert not sampler & {"editing_threshold", "top_p", "filter", "prefix_cache", "dual_cache"}


@pytest.mark.parametrize("case", CASES)
def test_pins_go_only_to_a_side_whose_source_writes_around_them(case: str, models: dict[str, Path]) -> None:
    from app.ui.race_ui import pin

    settings: dict[str, Any] = {}
    takes = CASES[case][3]
    assert pin("3:cat", [(spec_of(case, models), settings)]) is takes
    assert ("pins" in settings) is takes


def recorded(case: str, models: dict[str, Path], given: dict[str, Any], out: Path) -> tuple[dict[str, Any], Any]:
    """The left side's header entry, and its end, of a race where the case's source runs with `given`."""
    from app.cli.record import record

    record("Once upon a time", spec_of(case, models), "local-ar", out,
           settings={"left": given, "right": {"gen_length": 4}})
    rec = read_recording(out)
    return rec.header["sources"]["left"], rec.ends["left"]


@needs_twins
@pytest.mark.parametrize("case", CASES)
def test_the_recording_keeps_the_settings_applied_and_never_one_refused(case: str, models: dict[str, Path],
                                                                        fast_env: str, tmp_path: Path) -> None:
    """Run with every control its page side sends, a source records only settings it honours; given one it does not,
    the side fails naming it and the header records no setting for it."""
    controls, prefix, arg = side(case, models)
    _, sent, _ = controls.read([prefix, arg, ""] + [spec["default"] for _, _, spec, _ in controls.settings])
    quick = {k: v for k, v in {"gen_length": 8, "steps": 8, "block_length": 8, "speed": 4.0, "max_tokens": 8,
                               "max_new_tokens": 8, "max_denoising_steps": 4, "device": "cpu",
                               "trust_remote_code": True}.items() if k in sent}
    entry, end = recorded(case, models, {**sent, **quick}, tmp_path / "ran.jsonl")
    honours = set(REGISTRY[prefix].backend(arg).names)
    name, value = CASES[case][1:3]
    assert end["status"] == "done", end
    assert name not in entry["settings"] and set(entry["settings"]) <= honours | RECORDED_BESIDE
    assert set(sent) - {"trust_remote_code"} <= set(entry["settings"])  # every setting it ran with is kept
    entry, end = recorded(case, models, {name: value}, tmp_path / "refused.jsonl")
    assert entry["settings"] == {} and end["status"] == "error" and repr(name) in end["message"]


def test_the_served_page_config_shows_the_masked_samplers_settings_until_a_model_is_named() -> None:
    """The config JSON the page serves: hf-diffusion's controls start as its masked sampler's (no model is named
    yet), LLaDA2's own hidden; the pins box shows, as the default left side (the diffusion twin) takes pins."""
    from app.ui.layout import build

    props = {c["props"].get("elem_id"): c["props"] for c in build().get_config_file()["components"]}
    visible = {name: props[f"left-hf-diffusion-{name}"]["visible"]
               for name in ("scoring", "editing_threshold", "top_p", "steps")}
    assert visible == {"scoring": True, "editing_threshold": False, "top_p": False, "steps": True}
    assert not {"left-hf-diffusion-prefix_cache", "left-hf-diffusion-dual_cache"} & set(props)  # offered to neither
    assert props["pins-box"]["visible"] is True


def test_a_served_page_reads_the_config_only_of_a_model_its_host_named(models: dict[str, Path]) -> None:
    """Which settings show must not tell a visitor what lies on the server's disk: a model the host did not name
    shows the masked sampler's settings whatever its config says."""
    from app.serving.policy import Policy
    from app.ui.sources_ui import shown_backend

    llada2 = str(models["llada2"])
    assert shown_backend(Policy(served=True), "hf-diffusion", llada2).key == "masked"
    assert shown_backend(Policy(served=True, hf_models=(llada2,)), "hf-diffusion", llada2).key == "llada2"


def test_be_the_sampler_sends_only_what_the_model_takes_and_refuses_llada2(models: dict[str, Path]) -> None:
    from app.lessons.by_hand import UNSTEPPABLE
    from app.ui.sampler_ui import hand_settings
    from app.ui.visitor import Visitor

    box = {"gen_length": 16, "block_length": 8, "scoring": "margin", "filter": 0.0, "pins": ""}
    assert "filter" in hand_settings(Visitor(), "local-diffusion", box)  # the twin ships its learned filter
    assert set(hand_settings(Visitor(), f"hf-diffusion:{models['bert']}", box)) == set(box) - {"filter"}
    spec = f"hf-diffusion:{models['llada2']}"
    with pytest.raises(UserError) as e:
        hand_settings(Visitor(), spec, box)
    assert str(e.value) == UNSTEPPABLE.format(repr(spec)[:80])


# DiffusionGemma: each setting of its generate() (app/hf/diffusion_gemma.py), moved from a quick base, changes the
# run, and the answer stays what generate() returns given that setting at the seed. name -> (what else the base
# sets so the setting can act, the value it is moved to): the stopping criteria act only on a confident canvas, so
# one is tried with confidence always reached and the other with stability not asked.
GEMMA_BASE = {"max_new_tokens": 8, "max_denoising_steps": 4}
GEMMA_CHANGES = {"max_new_tokens": ({}, 16), "max_denoising_steps": ({}, 2), "entropy_bound": ({}, 5.0),
                 "stability_threshold": ({"confidence_threshold": 100.0}, 0),
                 "confidence_threshold": ({"stability_threshold": 0}, 100.0), "t_min": ({}, 0.05),
                 "t_max": ({}, 5.0), "seed": ({}, 1)}


def gemma_run(spec: str, settings: dict[str, Any]) -> tuple[Any, str]:
    """(what the run showed: every frame's tokens and states, and its passes; the answer generate() returns with
    those settings at their seed, as text up to end-of-text)."""
    import threading

    from transformers import EntropyBoundSamplerConfig

    from tests.hf_families import GEMMA_EOS

    src = make_source(spec, device="cpu", **settings)
    frames = list(src.stream("once upon a time", threading.Event()))
    s, ids = src.opts, src.encode("once upon a time")
    torch.manual_seed(s.seed)
    out = src.model.model.generate(
        torch.tensor([ids]), max_new_tokens=s.max_new_tokens, max_denoising_steps=s.max_denoising_steps,
        sampler_config=EntropyBoundSamplerConfig(entropy_bound=s.entropy_bound), t_min=s.t_min, t_max=s.t_max,
        stability_threshold=s.stability_threshold, confidence_threshold=s.confidence_threshold)
    answer = out.sequences[0, len(ids):].tolist()
    answer = answer[:answer.index(GEMMA_EOS)] if GEMMA_EOS in answer else answer
    shown = ([(f.tokens, f.states) for f in frames], frames[-1].nfe)
    return shown, frames[-1].text == src.tok.decode(answer)


@pytest.mark.parametrize("name", GEMMA_CHANGES)
def test_each_diffusion_gemma_setting_changes_the_run_as_it_changes_generate(name: str,
                                                                            models: dict[str, Path]) -> None:
    spec = spec_of("hf-diffusion DiffusionGemma", models)
    extra, value = GEMMA_CHANGES[name]
    base, same = gemma_run(spec, {**GEMMA_BASE, **extra})
    moved, same_moved = gemma_run(spec, {**GEMMA_BASE, **extra, name: value})
    assert same and same_moved and moved != base
