"""The numpy engine: parity with torch, caches equal full passes, shipped twins load and speak English."""

from __future__ import annotations

import re
import shutil

import numpy as np
import pytest

from app.engine.model import (
    ARLM,
    DEFAULT_MODELS_DIR,
    MaskedDiffusionLM,
    ModelConfig,
    NumpyTransformer,
    load_twin,
    random_model,
    random_weights,
)
from app.engine.tokenizer import BPETokenizer
from app.errors import UserError

SMALL = dict(vocab_size=97, n_layer=2, n_head=4, n_embd=32, max_len=48)


def ids_for(n: int, seed: int = 0, vocab: int = 97) -> np.ndarray:
    return np.random.default_rng(seed).integers(3, vocab, size=n).astype(np.int64)


@pytest.mark.parametrize("causal", [True, False])
def test_numpy_forward_matches_torch_reference(causal: bool) -> None:
    pytest.importorskip("torch", reason="torch (the optional training extra) is needed for the reference forward")
    from app.training.model import torch_forward

    config = ModelConfig(**SMALL, causal=causal)
    weights = random_weights(config, seed=3)
    ids = ids_for(40)
    ours = NumpyTransformer(config, weights).forward(ids)
    ref = torch_forward(weights, config, ids)
    assert ours.shape == ref.shape == (40, config.vocab_size)
    np.testing.assert_allclose(ours, ref, rtol=1e-4, atol=1e-4)


def test_kv_cache_decode_equals_full_causal_forward() -> None:
    model = random_model(ModelConfig(**SMALL, causal=True), seed=1)
    assert isinstance(model, ARLM)
    ids = ids_for(30, seed=2)
    cache, first = model.prefill(ids[:7])
    steps = [first] + [model.decode(cache, int(t)) for t in ids[7:]]
    full = model.net.forward(np.concatenate([[model.eos_id], ids]))
    np.testing.assert_allclose(np.stack(steps), full[7:], rtol=1e-4, atol=1e-5)


def test_empty_prompt_and_full_context() -> None:
    model = random_model(ModelConfig(**SMALL, causal=True), seed=1)
    cache, logits = model.prefill(np.array([], dtype=np.int64))
    assert logits.shape == (SMALL["vocab_size"],)
    for t in ids_for(model.max_len, seed=4):
        model.decode(cache, int(t))
    with pytest.raises(ValueError, match="context is full"):
        model.decode(cache, 5)


def test_masked_lm_rows_are_unshifted_positions() -> None:
    model = random_model(ModelConfig(**SMALL, causal=False), seed=5)
    assert isinstance(model, MaskedDiffusionLM)
    ids = ids_for(20, seed=6)
    ids[10:] = model.mask_id
    out = model.logits(ids)
    raw = model.net.forward(np.concatenate([[model.eos_id], ids]), causal=False)
    assert out.shape == (20, SMALL["vocab_size"]) and out.dtype == np.float32
    np.testing.assert_allclose(out, raw[:20], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(model.logits(ids, start=13), out[13:], rtol=1e-5, atol=1e-6)


def test_prefix_cache_refreshed_on_full_sequence_equals_uncached_logits() -> None:
    model = random_model(ModelConfig(**SMALL, causal=False), seed=7)
    ids = ids_for(36, seed=8)
    ids[20:] = model.mask_id
    full = model.logits(ids)
    for start in (1, 12, 20):
        cache = model.prefix_cache(ids, upto=start)
        np.testing.assert_allclose(model.logits(ids, cache=cache, start=start), full[start:], rtol=1e-4, atol=1e-5)


def test_prefix_only_cache_equals_a_prefix_that_cannot_see_its_suffix() -> None:
    model = random_model(ModelConfig(**SMALL, causal=False), seed=9)
    ids = ids_for(36, seed=10)
    ids[24:] = model.mask_id
    start = 16
    cached = model.logits(ids, cache=model.prefix_cache(ids[:start]), start=start)
    seq = np.concatenate([[model.eos_id], ids])
    ref = model.net.hidden(seq, causal=False, allow_prefix=start)[start:-1] @ model.net.head
    np.testing.assert_allclose(cached, ref, rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="start="):
        model.logits(ids, cache=model.prefix_cache(ids[:start]), start=start + 1)


def test_tokenizer_round_trips_and_token_strings_concatenate() -> None:
    tok = BPETokenizer(DEFAULT_MODELS_DIR / "tokenizer.json")
    assert len({tok.eos_id, tok.mask_id, tok.pad_id}) == 3 and 2048 <= tok.vocab_size <= 8192
    text = 'Once upon a time, a girl named Lily said "hi!"\n\nThe end. Café, naïve 🙂 日本.'
    ids = tok.encode(text)
    assert tok.decode(ids) == text
    assert "".join(tok.token_strings(ids)) == text
    assert tok.decode(ids + [tok.eos_id, tok.mask_id]) == text
    rng = np.random.default_rng(0)
    for _ in range(20):
        rand = rng.integers(0, tok.vocab_size, size=int(rng.integers(1, 40))).tolist()
        strings = tok.token_strings(rand)
        assert len(strings) == len(rand) and "".join(strings) == tok.decode(rand)


def test_shipped_ar_twin_writes_english_greedily() -> None:
    model, tok = load_twin("ar")
    assert isinstance(model, ARLM) and model.max_len >= 320
    cache, logits = model.prefill(np.array(tok.encode("Once upon a time"), dtype=np.int64))
    out: list[int] = []
    for _ in range(40):
        t = int(np.argmax(logits))
        if t == tok.eos_id:
            break
        out.append(t)
        logits = model.decode(cache, t)
    words = re.findall(r"[a-z]+", tok.decode(out).lower())
    common = {"there", "was", "a", "the", "little", "girl", "boy", "named", "she", "he", "and", "to", "her", "his",
              "play"}
    assert len(set(words)) >= 6 and len(common & set(words)) >= 3, tok.decode(out)


def test_shipped_diffusion_twin_loads_and_fills_a_mask() -> None:
    model, tok = load_twin("diffusion")
    assert isinstance(model, MaskedDiffusionLM) and model.max_len >= 320
    left = tok.encode("Once upon a time, there was a little")
    ids = np.array(left + [model.mask_id] + tok.encode(" named Lily. She liked to play."), dtype=np.int64)
    guess = tok.decode([int(np.argmax(model.logits(ids)[len(left)]))])
    assert guess.strip() in {"girl", "boy", "dog", "cat", "bird", "bunny", "fish", "bear"}, guess


def test_missing_and_corrupt_weights_raise_source_error(tmp_path) -> None:
    for name in ("ar.json", "ar.safetensors", "tokenizer.json"):
        shutil.copy(DEFAULT_MODELS_DIR / name, tmp_path / name)
    with pytest.raises(UserError, match="missing"):
        load_twin("diffusion", tmp_path)
    (tmp_path / "ar.safetensors").write_bytes(b"\x00not a safetensors file")
    with pytest.raises(UserError, match="corrupt"):
        load_twin("ar", tmp_path)
    with pytest.raises(UserError, match="Unknown local model"):
        load_twin("gpt", tmp_path)


def test_the_twins_note_reads_the_shipped_logs_and_names_the_fix_when_they_are_missing(tmp_path) -> None:
    from app.ui.about import twins_note

    headline, details = twins_note()
    assert "parameters each" in headline and "AR twin" in details and "Diffusion twin" in details
    assert "early stopping" in details and "swapped consistently" in details  # what the shipped logs say
    assert "`local-uniform`" in details and "uniform-state loss" in details
    headline, details = twins_note(tmp_path)
    assert "not found" in headline and "python -m app.training.train" in details


def test_a_prompt_of_one_token_says_one_token() -> None:
    from app.engine.sampling import check_prompt
    from app.errors import UserError, counted

    assert [counted(n, "token") for n in (0, 1, 2, 1024)] == ["0 tokens", "1 token", "2 tokens", "1,024 tokens"]
    assert counted(1, "pass", "passes") == "1 pass" and counted(3, "pass", "passes") == "3 passes"
    with pytest.raises(UserError, match=r"^Prompt \(1 token\) plus answer length \(8\) exceeds"):
        check_prompt([5], 8, 4)
