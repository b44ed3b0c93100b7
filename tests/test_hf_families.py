"""Real diffusion-model families (their own published code, tiny random weights) load under the pinned transformers
and decode as their authors' reference samplers do, token for token at temperature 0."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

from app.errors import UserError
from app.sources.base import make_source

torch = pytest.importorskip("torch", reason="torch is not installed")
transformers = pytest.importorskip("transformers", reason="transformers is not installed")

from tests.hf_families import (  # noqa: E402  (needs torch and transformers)
    build_dream,
    build_llada,
    counted_run,
    drawn,
    no_cache_offered,
    past_the_tokenizer,
    vendored,
)

PROMPT = "the cat had a red ball"


@pytest.fixture(scope="module")
def dream(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_dream(tmp_path_factory.mktemp("dream"))


@pytest.fixture(scope="module")
def llada(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_llada(tmp_path_factory.mktemp("llada"))


def test_llada_remote_code_alone_does_not_load_under_transformers_5(llada: Path) -> None:
    """The break the project mends: LLaDA's own class, loaded as its model card says, fails in transformers 5."""
    with pytest.raises(AttributeError, match="all_tied_weights_keys"):
        transformers.AutoModel.from_pretrained(llada, trust_remote_code=True)


def test_llada_loads_with_its_saved_weights_mask_id_and_end_of_text(llada: Path) -> None:
    from safetensors.torch import load_file

    from app.hf.models import load_masked

    model, tok = load_masked(str(llada), trust_remote_code=True, device="cpu")
    assert type(model.model).__name__ == "LLaDAModelLM"
    assert model.mask_id == tok.mask_id == 126336 == model.model.config.mask_token_id
    assert tok.tok.mask_token_id is None  # the id comes from the model's config, not a guess
    assert model.eos_id == 126081 == tok.tok.convert_tokens_to_ids("<|endoftext|>")
    assert not model.shifted and model.model.config.use_cache is False
    saved = load_file(str(llada / "model.safetensors"))
    state = model.model.state_dict()
    assert set(saved) == set(state)
    for key, value in saved.items():  # post_init() run by the mend did not re-initialise anything
        assert torch.equal(state[key], value), key
    ids = np.array(tok.prompt_ids(PROMPT, chat=True) + [model.mask_id] * 8)
    assert ids[0] == 126080 and 126346 in ids  # LLaDA's own chat template: BOS, then header tokens
    with torch.inference_mode():
        raw = model.model(input_ids=torch.as_tensor(ids)[None]).logits[0].numpy()
    allowed = [i for i in range(model.vocab_size) if i not in model.banned]
    np.testing.assert_array_equal(model.logits(ids)[:, allowed], raw[:, allowed])


def test_llada_decodes_as_its_reference_generate_at_temperature_0(llada: Path) -> None:
    from app.engine import diffusion

    reference = vendored("llada", "generate.py")
    src = make_source(f"hf-diffusion:{llada}", trust_remote_code=True, device="cpu", gen_length=32, steps=8,
                      block_length=16, temperature=0.0, threshold=None, stop_at_eos=False)
    prompt = src.encode(PROMPT)
    ours = list(diffusion.generate(src.model, prompt, src.opts))
    theirs = reference.generate(src.model.model, torch.tensor([prompt]), steps=8, gen_length=32, block_length=16,
                                temperature=0.0, mask_id=126336)[0, len(prompt):].tolist()
    assert ours[-1].ids.tolist() == theirs and ours[-1].nfe == 8  # 8 steps, each one call of the network
    assert len(set(theirs)) > 4  # a real answer, not one token repeated
    frames = list(src.stream(PROMPT, threading.Event()))
    assert frames[-1].final and frames[-1].text == src.tok.decode(theirs)


def test_llada_without_trust_remote_code_says_so(llada: Path) -> None:
    with pytest.raises(UserError, match="ships its own model code.*trust_remote_code"):
        make_source(f"hf-diffusion:{llada}")


def test_llada_code_that_breaks_under_this_transformers_names_the_version_and_the_fix(
        llada: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the mend (app/hf/compat.py), LLaDA's own code fails in transformers 5: the sentence says it
    is a library version mismatch and how to run it, not that the files are broken."""
    from app.hf import compat as hf_compat
    from app.hf import models as hf

    monkeypatch.setattr(hf_compat, "compatible", lambda cls: cls)
    with pytest.raises(UserError) as err:
        hf.load_masked(str(llada), trust_remote_code=True, device="cpu")
    text = str(err.value)
    assert f"own model code does not run under transformers {transformers.__version__}" in text
    assert "AttributeError" in text and "all_tied_weights_keys" in text
    assert 'it was written for transformers 4.46.3: run it with pip install "transformers==4.46.3"' in text
    assert "download" not in text and "\n" not in text


def _rope(theta: float, head_dim: int) -> "torch.Tensor":
    """Plain RoPE inverse frequencies, written out here so the check does not lean on the code under test."""
    return 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))


def test_dream_loads_off_the_meta_device_with_its_rotary_buffer_set(dream: Path) -> None:
    from safetensors.torch import load_file

    from app.hf.models import load_masked

    model, tok = load_masked(str(dream), trust_remote_code=True, device="cpu")
    assert type(model.model).__name__ == "DreamModel" and model.shifted
    assert model.mask_id == tok.tok.mask_token_id == 151666 == model.model.config.mask_token_id
    assert model.eos_id == 151643 and type(tok.tok).__name__ == "DreamTokenizer"  # Dream's own tokenizer code
    assert not any(t.is_meta for t in [*model.model.parameters(), *model.model.buffers()])
    want = _rope(1e6, 8)
    rotaries = [m for m in model.model.modules() if hasattr(m, "inv_freq")]
    assert len(rotaries) == 3  # the base model's and one per layer
    for m in rotaries:
        torch.testing.assert_close(m.inv_freq, want, rtol=0, atol=0)
    saved = load_file(str(dream / "model.safetensors"))
    state = model.model.state_dict()
    for key, value in saved.items():
        assert torch.equal(state[key], value), key
    ids = np.array(tok.prompt_ids(PROMPT, chat=True) + [model.mask_id] * 8)
    assert ids[0] == 151644 and 151645 in ids  # Dream's own chat template: <|im_start|>system ... <|im_end|>
    with torch.inference_mode():
        raw = model.model(input_ids=torch.as_tensor(ids)[None]).logits[0].numpy()
    allowed = [i for i in range(model.vocab_size) if i not in model.banned]
    np.testing.assert_array_equal(model.logits(ids)[1:, allowed], raw[:-1, allowed])  # output i predicts token i+1


def test_dream_without_the_rotary_fix_would_run_with_a_garbage_buffer(dream: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Why the load path recomputes the buffer: transformers 5 leaves it as whatever memory held."""
    from app.hf import compat as hf_compat
    from app.hf import models as hf

    monkeypatch.setattr(hf_compat, "fix_rotary_buffers", lambda model: 0)
    model, _ = hf.load_masked(str(dream), trust_remote_code=True, device="cpu")
    assert not torch.equal(model.model.model.rotary_emb.inv_freq, _rope(1e6, 8))


@pytest.mark.parametrize(("alg", "scoring"), [("maskgit_plus", "confidence"), ("entropy", "entropy"),
                                              ("topk_margin", "margin")])
def test_dream_decodes_as_its_diffusion_generate_at_temperature_0(dream: Path, alg: str, scoring: str) -> None:
    """Dream's own sampler is called with the generation config its files give (its kwargs-only path needs
    transformers 4's GenerationConfig.from_model_config, which also adds top_k=50: tests/test_hf_reference_env.py
    runs that path under transformers 4.46), carrying the mask id from_model_config would have copied."""
    import copy

    from app.engine import diffusion

    src = make_source(f"hf-diffusion:{dream}", trust_remote_code=True, device="cpu", gen_length=16, steps=8,
                      block_length=16, temperature=0.0, threshold=None, stop_at_eos=False, scoring=scoring,
                      schedule="dream")
    prompt = src.encode(PROMPT)
    ours = list(diffusion.generate(src.model, prompt, src.opts))
    theirs = src.model.model.diffusion_generate(
        torch.tensor([prompt]), generation_config=copy.deepcopy(src.model.model.generation_config),
        mask_token_id=151666, max_new_tokens=16, steps=8, temperature=0.0, alg=alg, alg_temp=None,
        return_dict_in_generate=False)[0, len(prompt):].tolist()
    assert ours[-1].ids.tolist() == theirs and ours[-1].nfe == 8  # 8 steps, each one call of the network
    assert len(set(theirs)) > 4


def test_dream_schedule_counts_as_dreams_linspace() -> None:
    from app.engine.diffusion import dream_count

    for steps in (1, 2, 7, 8, 64, 255):
        t = torch.linspace(1, 1e-3, steps + 1)
        for masked in (0, 1, 16, 31, 128):
            want = [int(torch.tensor(float(masked)) * (1 - t[i + 1] / t[i])) for i in range(steps - 1)] + [masked]
            assert [dream_count(masked, i, steps) for i in range(steps)] == want


def test_top_k_scores_among_the_k_likeliest_only(llada: Path) -> None:
    """top_k=1 leaves one token a position, so every score ties at certainty (1) and the stable order commits left to
    right; without it the model's confidences order the commits."""
    from app.engine import diffusion

    runs = {}
    for k in (0, 1):
        src = make_source(f"hf-diffusion:{llada}", trust_remote_code=True, device="cpu", gen_length=16, steps=16,
                          block_length=16, temperature=0.0, threshold=None, stop_at_eos=False, top_k=k)
        runs[k] = list(diffusion.generate(src.model, src.encode(PROMPT), src.opts))[1:]
    assert np.all(runs[1][-1].confidence == 1.0) and [s.committed for s in runs[1]] == [[i] for i in range(16)]
    assert not np.all(runs[0][-1].confidence == 1.0) and [s.committed for s in runs[0]] != [[i] for i in range(16)]


@pytest.mark.parametrize("family, length", [("llada", 32), ("dream", 16)])
def test_llada_and_dream_count_each_call_of_their_network_as_one_pass_and_record_no_cache(
        request: pytest.FixtureRequest, family: str, length: int) -> None:
    """LLaDA's and Dream's code keep no keys/values between passes, so no cache is offered, run, counted or recorded:
    in blocks of 16 over 16 steps they make 16 calls of the network and nfe 16 (LLaDA's 32 tokens counted 18)."""
    spec = f"hf-diffusion:{request.getfixturevalue(family)}"
    calls, last, settings = counted_run(spec, PROMPT, trust_remote_code=True, gen_length=length, steps=16,
                                        block_length=16, threshold=None, stop_at_eos=False)
    assert calls == last.nfe == 16 and last.refreshes == 0
    assert not {"prefix_cache", "dual_cache"} & set(settings)
    no_cache_offered(spec, trust_remote_code=True)


def test_an_id_past_dreams_tokenizer_is_drawn_as_its_placeholder_in_the_panel_inspector_and_export(
        dream: Path, tmp_path: Path) -> None:
    """Dream's output layer has 152064 rows and its tokenizer 151667 entries (as the real checkpoint's); an id
    between, once written, is drawn as `<id N>` where Dream's own decoding would raise a TypeError."""
    import json
    import re

    from app.export.html import export_html
    from app.trace.frames import RecordingWriter, make_header

    frames = past_the_tokenizer(f"hf-diffusion:{dream}", 151700, PROMPT, trust_remote_code=True, gen_length=8,
                                steps=8, block_length=8, stop_at_eos=False)
    assert drawn(frames, 151700)
    writer = RecordingWriter(tmp_path / "race.jsonl", make_header(PROMPT, {"left": {"name": "dream", "settings": {}}}))
    for frame in frames:
        writer.frame("left", frame)
    writer.end("left", "done")
    writer.close()
    page = export_html(tmp_path / "race.jsonl", tmp_path / "race.html").read_text(encoding="utf-8")
    data = re.search(r'<script type="application/json" id="converge-data">(.*?)</script>', page, re.S).group(1)
    assert "<id 151700>" in json.dumps(json.loads(data), ensure_ascii=False)
