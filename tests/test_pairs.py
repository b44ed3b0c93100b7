"""Pairs of real models to race: what each costs, the device it suits, and one sentence before any download when
this machine cannot hold it; `record --pair` runs a pair."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.errors import SourceError
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
            assert p.left_settings["trust_remote_code"] is True  # LLaDA and Dream ship their own code
            assert p.download_gb == round(2 * sum(p.params_b), 1) > 10
            assert p.memory_gb() > p.download_gb and p.memory_gb("CPU") == pytest.approx(2 * p.memory_gb(), abs=0.1)
    assert PAIRS["dream-7b"].left_settings["schedule"] == "dream" and PAIRS["llada-8b"].left_settings["schedule"] == "even"


def test_settings_of_each_pair_are_valid_for_its_sources() -> None:
    from app.engine.diffusion import DiffusionSettings
    from app.sources.local import coerce

    for p in PAIRS.values():
        if p.left.startswith("hf-diffusion:"):
            settings = {k: v for k, v in p.left_settings.items() if k != "trust_remote_code"}
            coerce(DiffusionSettings, settings, p.left).validate()


def test_a_machine_without_the_memory_is_told_before_any_download() -> None:
    dream = pair("dream-7b")
    with pytest.raises(SourceError, match=r"needs a GPU with about 33.5 GB free, and this machine has no CUDA GPU"):
        check_memory(dream, free=(None, "no CUDA GPU"))
    with pytest.raises(SourceError, match=r"needs about 33.5 GB of GPU memory and NVIDIA L4 has 22.0 GB free"):
        check_memory(dream, free=(22.0, "NVIDIA L4"))
    check_memory(dream, free=(80.0, "NVIDIA H100"))
    check_memory(pair("llada2-sglang"), free=(None, "no CUDA GPU"))  # an API pair needs no local memory
    with pytest.raises(SourceError, match="There is no pair 'gpt-5'.*twins"):
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
    from app.trace import read_recording

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
