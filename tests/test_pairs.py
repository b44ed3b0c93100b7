"""Pairs of real models to race: what each costs, the device it suits, and one sentence before any download when
this machine cannot hold it; `record --pair` runs a pair."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.errors import UserError
from app.sources.base import REGISTRY, load_plugins
from app.sources.pairs import PAIRS, check_memory, pair


def test_every_pair_names_registered_sources_and_says_its_cost_and_device() -> None:
    load_plugins()
    for p in PAIRS.values():
        assert p.device in ("CPU", "GPU", "API")
        for spec in (p.left, p.right):
            assert spec.split(":")[0] in REGISTRY, spec
        if p.device == "GPU":
            assert p.left.startswith("hf-diffusion:") and p.right.startswith("hf-ar:")
            # LLaDA, Dream and LLaDA2 ship their own code; DiffusionGemma is transformers' own
            assert bool(p.left_settings.get("trust_remote_code")) is not p.name.startswith("diffusiongemma")
            assert p.download_gb == round(2 * sum(p.params_b), 1) > 10
            assert p.memory_gb() > p.download_gb and p.memory_gb("CPU") == pytest.approx(2 * p.memory_gb(), abs=0.1)
    assert (PAIRS["dream-7b"].left_settings["schedule"] == "dream"
            and PAIRS["llada-8b"].left_settings["schedule"] == "even")


def test_settings_of_each_pair_are_valid_for_its_sources(monkeypatch: pytest.MonkeyPatch) -> None:
    from app.engine.diffusion import DiffusionSettings
    from app.engine.options import coerce, declared
    from app.hf.config import model_type
    from app.hf.diffusion_gemma import GemmaSettings
    from app.hf.llada2 import PipelineSettings
    from app.sources import hf
    from app.sources.hf import GEMMA, LLADA2, LOAD_OPTIONS, MASKED

    # "known before a download": a config.json is read from a local folder or the Hugging Face cache, never fetched
    # (unpatched, each of the seven pairs without a declared type waited ~23 s on the Hub where there is no network)
    monkeypatch.setattr(hf, "model_type", lambda name: model_type(name, fetch=False))
    for p in PAIRS.values():
        if p.left.startswith("hf-diffusion:"):  # each honoured by the backend its model runs on
            backend = LLADA2 if p.name.startswith("llada2") else GEMMA if p.name.startswith("diffusiongemma") \
                else MASKED
            assert REGISTRY["hf-diffusion"].backend(p.left.partition(":")[2]) is backend  # known before a download
            backend.refuse(p.left_settings, p.left)
            settings = {k: v for k, v in p.left_settings.items() if k not in LOAD_OPTIONS}
            if backend is GEMMA:
                coerce(GemmaSettings, settings, p.left).validate()
                continue
            edits = {k: settings.pop(k) for k in declared(PipelineSettings) if k in settings}
            coerce(DiffusionSettings, settings, p.left).validate()
            coerce(PipelineSettings, edits, p.left).validate()
    assert PAIRS["llada2.1-mini"].left_settings["editing_threshold"] == 0.9  # LLaDA2.1 edits


@pytest.mark.parametrize("name", ["diffusiongemma-26b", "llada2.1-mini"])
def test_a_pairs_settings_are_accepted_when_the_hub_is_unreachable(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    import gradio as gr

    from app.serving.policy import LOCAL
    from app.sources import hf
    from app.sources.base import honoured
    from app.ui.sources_ui import SideControls

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(hf, "model_type", lambda *_: None)  # no config.json can be read: offline, nothing cached
    load_plugins()
    p = PAIRS[name]
    assert honoured(p.left, dict(p.left_settings)) == p.left_settings
    kind, _, arg = p.left.partition(":")
    with gr.Blocks():
        side = SideControls("left", gr.Dropdown(), gr.Dropdown(), gr.Textbox(), LOCAL)
    assert set(p.left_settings) <= set(side.honours(kind, arg))  # the page shows and sends them
    assert REGISTRY[kind].backend("no-such-org/no-such-model").key == "masked"  # an unknown id: as before


def test_a_machine_without_the_memory_is_told_before_any_download() -> None:
    dream = pair("dream-7b")
    with pytest.raises(UserError, match=r"needs a GPU with about 33.5 GB free, and this machine has no CUDA GPU"):
        check_memory(dream, free=(None, "no CUDA GPU"))
    with pytest.raises(UserError, match=r"needs about 33.5 GB of GPU memory and NVIDIA L4 has 22.0 GB free"):
        check_memory(dream, free=(22.0, "NVIDIA L4"))
    check_memory(dream, free=(80.0, "NVIDIA H100"))
    check_memory(pair("llada2-sglang"), free=(None, "no CUDA GPU"))  # an API pair needs no local memory
    with pytest.raises(UserError, match="There is no pair 'gpt-5'.*twins"):
        pair("gpt-5")


def test_record_with_a_pair_that_does_not_fit_stops_before_loading(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from app import __main__ as cli
    from app.sources import pairs

    monkeypatch.setattr(pairs, "available_gb", lambda device: (None, "no CUDA GPU"))
    out = tmp_path / "run.jsonl"
    assert cli.main(["record", "--pair", "llada-8b", "--prompt", "hi", "--out", str(out)]) == 2
    assert "needs a GPU" in capsys.readouterr().err and not out.exists()


def test_record_runs_the_twins_pair_and_pairs_lists_every_pair(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    from app import __main__ as cli
    from app.trace.reading import read_recording

    out = tmp_path / "twins.jsonl"
    assert cli.main(["record", "--pair", "twins", "--prompt", "Once upon a time", "--out", str(out),
                     "--right-settings", '{"gen_length": 16}', "--left-settings", '{"gen_length": 16}']) == 0
    sources = read_recording(out).header["sources"]
    assert (sources["left"]["name"], sources["right"]["name"]) == ("local-diffusion", "local-ar")
    capsys.readouterr()
    assert cli.main(["pairs", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["name"] for r in rows] == list(PAIRS)
    assert next(r for r in rows if r["name"] == "twins")["fits_here"] is True


def _controls(policy):
    import gradio as gr

    from app.ui.sources_ui import side_controls

    with gr.Blocks():
        return {side: side_controls(side, default, policy) for side, default in
                (("left", "local-diffusion"), ("right", "local-ar"))}


def _set(updates: list, controls: dict) -> dict[tuple[str, str], object]:
    """The values apply_pair gives each control, by (side, widget) with widget 'kind', 'arg' or 'PREFIX.SETTING'."""
    names = []
    for side, c in controls.items():
        names += [(side, "kind"), (side, "arg"), *((side, f"{p}.{n}") for p, n, _, _ in c.settings)]
    return {name: u["value"] for name, u in zip(names, updates) if isinstance(u, dict) and "value" in u}


def test_the_page_box_sets_both_sides_to_a_pair_with_its_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    from app.serving.policy import LOCAL
    from app.sources import pairs
    from app.ui.pairs_ui import apply_pair

    monkeypatch.setattr(pairs, "available_gb", lambda device: (80.0, "NVIDIA H100"))
    controls = _controls(LOCAL)
    about, *updates = apply_pair("dream-7b", controls, LOCAL)
    got = _set(updates, controls)
    assert got[("left", "kind")] == "hf-diffusion" and got[("left", "arg")] == "Dream-org/Dream-v0-Instruct-7B"
    assert got[("right", "kind")] == "hf-ar" and got[("right", "arg")] == "Qwen/Qwen2.5-7B-Instruct"
    assert got[("left", "hf-diffusion.trust_remote_code")] is True and got[("left", "hf-diffusion.schedule")] == "dream"
    assert got[("left", "hf-diffusion.threshold")] == 0.0  # off, as the page's widget says it
    assert "30.5 GB to download" in about["value"] and "Set on both sides" in about["value"]


def test_the_page_box_refuses_a_pair_this_machine_cannot_hold_and_touches_nothing(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from app.serving.policy import LOCAL
    from app.sources import pairs
    from app.ui.pairs_ui import apply_pair

    monkeypatch.setattr(pairs, "available_gb", lambda device: (None, "no CUDA GPU"))
    controls = _controls(LOCAL)
    about, *updates = apply_pair("llada-8b", controls, LOCAL)
    assert "Not on this machine" in about["value"] and "no CUDA GPU" in about["value"]
    assert _set(updates, controls) == {}


def test_a_served_page_offers_only_the_pairs_its_host_allows() -> None:
    from app.serving.policy import from_launch
    from app.ui.layout import build
    from app.ui.pairs_ui import apply_pair, offered

    strict = from_launch("0.0.0.0", False, env={})
    assert [p.name for p in PAIRS.values() if offered(p, strict)] == ["twins", "llada2-sglang", "mercury"]
    listed = from_launch("0.0.0.0", False, env={}, allow=["remote-code"],
                         hf_models=["Dream-org/Dream-v0-Instruct-7B", "Qwen/Qwen2.5-7B-Instruct"])
    assert "dream-7b" in [p.name for p in PAIRS.values() if offered(p, listed)]
    assert "llada-8b" not in [p.name for p in PAIRS.values() if offered(p, listed)]
    about, *updates = apply_pair("llada-8b", _controls(strict), strict)  # the queue API can still call it
    assert about["value"] == "This pair is not offered on this page." and _set(updates, _controls(strict)) == {}
    from app.ui.pairs_ui import describe

    assert describe("x" * 5_000_000, strict) == describe(["dream-7b"], strict) == describe("dream-7b", strict) \
        == "This pair is not offered on this page."
    assert "**Dream-v0-Instruct-7B vs Qwen2.5-7B-Instruct** (GPU: 30.5 GB" in describe("dream-7b", listed)
    pick = next(b for b in build(strict).blocks.values() if b.elem_id == "pair-pick")
    assert [value for _, value in pick.choices] == ["twins", "llada2-sglang", "mercury"]


def test_dllms_pairs_run_on_a_laptop_cpu_and_the_page_sets_block_attention_for_bd3lm(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from app.serving.policy import LOCAL
    from app.sources import pairs
    from app.ui.pairs_ui import apply_pair

    for name in ("a2d-mdlm-0.6b", "a2d-bd3lm-0.6b", "modernbert-large-chat", "modernbert-base-chat"):
        p = pair(name)
        assert p.device == "CPU" and p.left_settings["schedule"] == "dllm" and p.memory_gb() < 6
        check_memory(p, free=(8.0, "RAM"))
    assert pair("a2d-mdlm-0.6b").right == pair("a2d-bd3lm-0.6b").right == "hf-ar:Qwen/Qwen3-0.6B"
    with pytest.raises(UserError, match=r"needs about 5.3 GB of CPU memory and RAM has 4.0 GB free"):
        check_memory(pair("a2d-bd3lm-0.6b"), free=(4.0, "RAM"))
    monkeypatch.setattr(pairs, "available_gb", lambda device: (16.0, "RAM"))
    controls = _controls(LOCAL)
    about, *updates = apply_pair("a2d-bd3lm-0.6b", controls, LOCAL)
    got = _set(updates, controls)
    assert got[("left", "arg")] == "dllm-hub/Qwen3-0.6B-diffusion-bd3lm-v0.1"
    assert got[("left", "hf-diffusion.block_attention")] is True and got[("left", "hf-diffusion.block_length")] == 32
    assert got[("left", "hf-diffusion.schedule")] == "dllm" and got[("right", "arg")] == "Qwen/Qwen3-0.6B"


@pytest.mark.parametrize(("absent", "name", "sentence"), [
    ({"torch"}, "a2d-mdlm-0.6b", "torch is not installed here: pip install torch transformers"),
    ({"torch", "transformers"}, "modernbert-base-chat",
     "torch and transformers are not installed here: pip install torch transformers"),
    ({"diffusers"}, "llada2.1-mini", "diffusers is not installed here: pip install torch transformers diffusers"),
])
def test_the_box_says_what_is_missing_first_and_sets_nothing(monkeypatch: pytest.MonkeyPatch, absent: set[str],
                                                             name: str, sentence: str) -> None:
    from app.serving.policy import LOCAL
    from app.sources import pairs
    from app.ui.pairs_ui import apply_pair, describe

    monkeypatch.setattr(pairs, "installed", lambda package: package not in absent)
    monkeypatch.setattr(pairs, "available_gb", lambda device: (80.0, "RAM"))
    controls = _controls(LOCAL)
    about, *updates = apply_pair(name, controls, LOCAL)
    assert about["value"].startswith(f"**Not on this machine:** {sentence}")
    assert "press Run" not in about["value"] and _set(updates, controls) == {}
    assert describe(name, LOCAL).startswith(f"**Not on this machine:** {sentence}")  # on picking it, before Use
    monkeypatch.setattr(pairs, "installed", lambda package: True)
    about, *updates = apply_pair(name, controls, LOCAL)
    assert "Not on this machine" not in about["value"] and about["value"].endswith("then press Run.")
    assert describe(name, LOCAL) == pairs_markdown(name)


def pairs_markdown(name: str) -> str:
    from app.ui.pairs_ui import pair_markdown

    return pair_markdown(PAIRS[name])


def test_the_twins_and_api_pairs_need_no_package(monkeypatch: pytest.MonkeyPatch) -> None:
    from app.sources import pairs

    monkeypatch.setattr(pairs, "installed", lambda package: False)
    for name in ("twins", "mercury", "llada2-sglang"):
        pairs.check_machine(PAIRS[name])  # raises nothing
    with pytest.raises(UserError, match="torch and transformers are not installed"):
        pairs.check_machine(PAIRS["dream-7b"], free=(80.0, "GPU"))
