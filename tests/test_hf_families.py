"""Real diffusion-model families (their own published code, tiny random weights) load under the pinned transformers
and decode as their authors' reference samplers do, token for token at temperature 0."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

from app.errors import SourceError
from app.sources.base import make_source

torch = pytest.importorskip("torch", reason="torch is not installed")
transformers = pytest.importorskip("transformers", reason="transformers is not installed")

from tests.hf_families import build_llada, vendored  # noqa: E402  (needs torch and transformers)

PROMPT = "the cat had a red ball"


@pytest.fixture(scope="module")
def llada(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_llada(tmp_path_factory.mktemp("llada"))


def test_llada_remote_code_alone_does_not_load_under_transformers_5(llada: Path) -> None:
    """The break the project mends: LLaDA's own class, loaded as its model card says, fails in transformers 5."""
    with pytest.raises(AttributeError, match="all_tied_weights_keys"):
        transformers.AutoModel.from_pretrained(llada, trust_remote_code=True)


def test_llada_loads_with_its_saved_weights_mask_id_and_end_of_text(llada: Path) -> None:
    from safetensors.torch import load_file

    from app.engine.hf import load_masked

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
    assert ours[-1].ids.tolist() == theirs and ours[-1].nfe == 8
    assert len(set(theirs)) > 4  # a real answer, not one token repeated
    frames = list(src.stream(PROMPT, threading.Event()))
    assert frames[-1].final and frames[-1].text == src.tok.decode(theirs)


def test_llada_without_trust_remote_code_says_so(llada: Path) -> None:
    with pytest.raises(SourceError, match="ships its own model code.*trust_remote_code"):
        make_source(f"hf-diffusion:{llada}")


def test_llada_code_that_breaks_under_this_transformers_names_the_version_and_the_fix(
        llada: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the mend (app/engine/hf_compat.py), LLaDA's own code fails in transformers 5: the sentence says it
    is a library version mismatch and how to run it, not that the files are broken."""
    from app.engine import hf, hf_compat

    monkeypatch.setattr(hf_compat, "compatible", lambda cls: cls)
    with pytest.raises(SourceError) as err:
        hf.load_masked(str(llada), trust_remote_code=True, device="cpu")
    text = str(err.value)
    assert f"own model code does not run under transformers {transformers.__version__}" in text
    assert "AttributeError" in text and "all_tied_weights_keys" in text
    assert 'it was written for transformers 4.46.3: run it with pip install "transformers==4.46.3"' in text
    assert "download" not in text and "\n" not in text
