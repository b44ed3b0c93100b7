"""dllm's families (its own published code, tiny random weights) load under the pinned transformers and decode as dllm's
own samplers do, token for token at temperature 0: the A2D Qwen3 models with its MDLM and BD3LM samplers, and
ModernBERT chat with its MDLM sampler (vendored in tests/assets/, see SOURCES.md)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from app.errors import UserError
from app.sources.base import make_source

torch = pytest.importorskip("torch", reason="torch is not installed")
transformers = pytest.importorskip("transformers", reason="transformers is not installed")

from tests.hf_families import (  # noqa: E402
    build_a2d,
    build_modernbert_chat,
    counted_run,
    dllm_on_path,
    drawn,
    forward_calls,
    no_cache_offered,
    past_the_tokenizer,
)

PROMPT = "the cat had a red ball"
RUNS = [(32, 8, 16), (32, 32, 8), (24, 10, 8)]  # (answer length, steps, block): 10 steps over 3 blocks rounds up


@pytest.fixture(scope="module")
def samplers():
    return dllm_on_path()


@pytest.fixture(scope="module")
def a2d(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_a2d(tmp_path_factory.mktemp("a2d"))


@pytest.fixture(scope="module")
def modernbert(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_modernbert_chat(tmp_path_factory.mktemp("modernbert"))


def _ours(folder: Path, length: int, steps: int, block: int, **settings) -> tuple[list[int], list[int], object]:
    """(prompt ids, Converge's answer, the source) at temperature 0 with dllm's schedule."""
    from app.engine import diffusion

    src = make_source(f"hf-diffusion:{folder}", device="cpu", gen_length=length, steps=steps, block_length=block,
                      temperature=0.0, threshold=None, stop_at_eos=False, schedule="dllm", **settings)
    prompt = src.encode(PROMPT)
    return prompt, list(diffusion.generate(src.model, prompt, src.opts))[-1].ids.tolist(), src


def test_a2d_loads_with_its_own_code_mask_end_of_text_and_chat_template(a2d: Path) -> None:
    from safetensors.torch import load_file

    from app.hf.models import load_masked

    model, tok = load_masked(str(a2d), trust_remote_code=True, device="cpu")
    assert type(model.model).__name__ == "A2DQwen3LMHeadModel"  # the masked-LM class, not the bare AutoModel one
    assert model.mask_id == tok.tok.mask_token_id == 151669 and tok.tok.convert_ids_to_tokens(151669) == "<|mask|>"
    assert model.eos_id == 151645 == tok.tok.convert_tokens_to_ids("<|im_end|>") and not model.shifted
    assert {151644, 151669} <= set(model.banned)  # <|im_start|>, the mask and the like are never proposed
    assert 151643 not in model.banned and 151645 not in model.banned  # padding (after the answer) and end-of-text are
    saved = load_file(str(a2d / "model.safetensors"))
    state = model.model.state_dict()
    for key, value in saved.items():
        assert torch.equal(state[key], value), key
    ids = tok.prompt_ids(PROMPT, chat=True)
    assert ids[0] == 151644 and {151667, 151668} <= set(ids)  # Qwen3's <think></think>, empty: answer, no trace
    assert tok.decode(ids).endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")
    x = np.array(ids + [model.mask_id] * 8)
    with torch.inference_mode():
        raw = model.model(input_ids=torch.as_tensor(x)[None]).logits[0].numpy()
    allowed = [i for i in range(model.vocab_size) if i not in model.banned]
    np.testing.assert_array_equal(model.logits(x)[:, allowed], raw[:, allowed])
    later = x.copy()
    later[-1] = ids[1]
    assert not np.allclose(model.logits(later)[0], model.logits(x)[0])  # bidirectional: the first row sees the last


def test_a2d_code_under_transformers_5_needs_the_layers_attention_types(a2d: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """dllm's A2DQwen3Model picks each layer's mask by `layer.attention_type`, which transformers 5 no longer sets."""
    from app.hf import compat as hf_compat
    from app.hf import models as hf

    monkeypatch.setattr(hf_compat, "restore_attention_types", lambda model: 0)
    model, tok = hf.load_masked(str(a2d), trust_remote_code=True, device="cpu")
    with pytest.raises(AttributeError, match="attention_type"):
        model.logits(np.array(tok.prompt_ids(PROMPT, chat=True) + [model.mask_id] * 8))


def test_a2d_code_without_the_package_it_imports_names_the_package_not_the_version(a2d: Path,
                                                                                   tmp_path: Path) -> None:
    """dllm's modeling_qwen3.py imports `dllm` (in its `__main__` block), which transformers' import check asks for:
    without it the sentence says to install it, in a fresh process whose path lacks the vendored package."""
    import os
    import subprocess
    import sys

    code = ("from app.sources.base import make_source\n"
            "from app.errors import UserError\n"
            "try:\n"
            f"    make_source('hf-diffusion:{a2d}', trust_remote_code=True, device='cpu')\n"
            "except UserError as e:\n"
            "    print(e)\n")
    env = {**os.environ, "HF_MODULES_CACHE": str(tmp_path), "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env,
                         cwd=Path(__file__).resolve().parents[1])
    assert out.stdout.strip().endswith("own model code imports dllm, which is not installed here: pip install dllm, "
                                       "then load it again."), out.stderr[-2000:]


@pytest.mark.parametrize(("length", "steps", "block"), RUNS)
def test_a2d_mdlm_decodes_as_dllms_mdlm_sampler(a2d: Path, samplers, length: int, steps: int, block: int) -> None:
    prompt, ours, src = _ours(a2d, length, steps, block, trust_remote_code=True)
    sampler = samplers.MDLMSampler(model=src.model.model, tokenizer=src.tok.tok)
    config = samplers.MDLMSamplerConfig(max_new_tokens=length, steps=steps, block_size=block, temperature=0.0)
    theirs = sampler.sample([prompt], config)[0, len(prompt):].tolist()
    assert ours == theirs and len(set(theirs)) > 4


def _bd3lm(sampler_module, src, prompt: list[int], length: int, steps: int, block: int) -> list[int]:
    """dllm's BD3LM answer: its row is the prompt left-padded to whole blocks, then the answer (cut short after the
    first block holding end-of-text)."""
    sampler = sampler_module.BD3LMSampler(model=src.model.model, tokenizer=src.tok.tok)
    config = sampler_module.BD3LMSamplerConfig(max_new_tokens=length, steps=steps, block_size=block, temperature=0.0)
    row = sampler.sample([prompt], config)[0].tolist()
    pad = (-len(prompt)) % block
    assert row[:pad] == [src.tok.tok.pad_token_id] * pad and row[pad:pad + len(prompt)] == prompt
    return row[pad + len(prompt):]


@pytest.mark.parametrize(("length", "steps", "block"), [*RUNS, (64, 64, 32)])
def test_a2d_bd3lm_decodes_as_dllms_bd3lm_sampler(a2d: Path, samplers, length: int, steps: int, block: int) -> None:
    prompt, ours, src = _ours(a2d, length, steps, block, trust_remote_code=True, block_attention=True)
    theirs = _bd3lm(samplers, src, prompt, length, steps, block)
    assert ours[:len(theirs)] == theirs and len(set(theirs)) > 4
    if len(theirs) < length:  # dllm stops after a block that wrote end-of-text
        assert src.model.eos_id in theirs[-block:]


def test_full_attention_does_not_decode_as_the_bd3lm_sampler(a2d: Path, samplers) -> None:
    """Why block attention is a setting: the same model with every position in view answers otherwise."""
    prompt, ours, src = _ours(a2d, 32, 8, 16, trust_remote_code=True)
    assert ours[:16] != _bd3lm(samplers, src, prompt, 32, 8, 16)[:16]


def test_block_attention_runs_the_prefix_once_a_block_then_only_the_block(a2d: Path) -> None:
    """The block cache: each block starts with one pass over the prompt and the blocks before it (left-padded to
    whole blocks), then every step runs the block's 8 positions alone."""
    from app.engine import diffusion

    src = make_source(f"hf-diffusion:{a2d}", trust_remote_code=True, device="cpu", gen_length=24, steps=12,
                      block_length=8, temperature=0.0, threshold=None, stop_at_eos=False, schedule="dllm",
                      block_attention=True)
    widths: list[int] = []
    hook = src.model.model.register_forward_pre_hook(lambda m, a, kw: widths.append(kw["input_ids"].shape[1]),
                                                     with_kwargs=True)
    try:
        prompt = src.encode(PROMPT)
        steps = list(diffusion.generate(src.model, prompt, src.opts))
    finally:
        hook.remove()
    padded = len(prompt) + (-len(prompt)) % 8
    prefixes = [w for w in widths if w != 8]
    assert prefixes == [padded, padded + 8, padded + 16]
    assert len(widths) - len(prefixes) == 12  # block steps
    assert steps[-1].nfe == len(widths) and steps[-1].refreshes == len(prefixes)  # every call of the network counts


DRAFT_TEXT = " once upon a time there was a red cat"  # 16 tokens in the A2D tokenizer, continuing PROMPT


def test_block_attention_reads_a_whole_draft_in_one_pass_as_its_blocks_read_it(a2d: Path) -> None:
    """Without its cache, the block model's logits are one pass over the prompt and a draft (issue 53's `unsure`),
    laid out as the decode lays them out: each answer block's rows agree with that block decoded against its cache."""
    src = make_source(f"hf-diffusion:{a2d}", trust_remote_code=True, device="cpu", gen_length=16, block_length=8,
                      block_attention=True)
    model, prompt = src.model, src.encode(PROMPT)
    draft = np.array(src.tok.encode(DRAFT_TEXT)[:16])
    ids, p = np.concatenate([prompt, draft]), len(prompt)
    with forward_calls(model.model) as calls:
        whole = model.logits(ids, start=p)
    assert calls[0] == 1 and whole.shape == (16, model.vocab_size)
    for k in (0, 8):
        cached = model.logits(ids[:p + k + 8], cache=model.prefix_cache(ids[:p + k]), start=p + k)
        np.testing.assert_allclose(whole[k:k + 8], cached, atol=1e-4)
    from app.engine.draft import Revision

    plan = src.revise(Revision(DRAFT_TEXT, share=0.25, where="unsure"), PROMPT)  # the masked sampler's unsure pass
    assert plan.mode == "revise" and plan.nfe == 1 and len(plan.renoised) == 4


def test_block_attention_is_not_an_ar_setting(a2d: Path) -> None:
    with pytest.raises(UserError, match="hf-ar:anything has no setting 'block_attention': that is for hf-diffusion"):
        make_source("hf-ar:anything", block_attention=True)


def test_modernbert_chat_loads_its_mask_end_of_text_and_chat_template_from_its_files(modernbert: Path) -> None:
    from app.hf.models import load_masked

    model, tok = load_masked(str(modernbert), device="cpu")
    assert type(model.model).__name__ == "ModernBertForMaskedLM" and not model.shifted
    assert model.mask_id == 50284 == tok.tok.convert_tokens_to_ids("[MASK]")
    assert model.eos_id == 50283 == tok.tok.pad_token_id  # dllm's tokenizer ends answers with the padding
    assert {50280, 50281, 50282, 50284} <= set(model.banned) and 50283 not in model.banned
    text = tok.decode(tok.prompt_ids(PROMPT, chat=True))
    assert text.startswith("[ Question ]") and text.endswith("[ Answer ]")  # dllm's [Question]/[Answer] template


@pytest.mark.parametrize(("length", "steps", "block"), RUNS)
def test_modernbert_chat_decodes_as_dllms_mdlm_sampler(modernbert: Path, samplers, length: int, steps: int,
                                                       block: int) -> None:
    prompt, ours, src = _ours(modernbert, length, steps, block)
    sampler = samplers.MDLMSampler(model=src.model.model, tokenizer=src.tok.tok)
    config = samplers.MDLMSamplerConfig(max_new_tokens=length, steps=steps, block_size=block, temperature=0.0)
    assert ours == sampler.sample([prompt], config)[0, len(prompt):].tolist() and len(set(ours)) > 4


def test_dllm_schedule_counts_as_dllms_get_num_transfer_tokens(samplers) -> None:
    from dllm.core.schedulers import LinearAlphaScheduler

    from app.engine.diffusion import dllm_counts

    linear = LinearAlphaScheduler()
    for masked in (0, 1, 5, 16, 31, 32, 64):
        for steps in (1, 2, 3, 7, 8, 10, 32, 64):
            want = samplers.get_num_transfer_tokens(torch.ones(1, masked, dtype=torch.bool), steps, linear)[0]
            assert dllm_counts(masked, steps) == [int(n) for n in want if n], (masked, steps)


@pytest.mark.parametrize("family", ["a2d", "modernbert"])
def test_mdlm_families_count_each_call_of_their_network_as_one_pass_and_record_no_cache(
        request: pytest.FixtureRequest, family: str) -> None:
    """dllm's A2D MDLM (as loaded: bidirectional, no cache in its code path) and ModernBERT chat keep no keys/values
    between passes: 32 tokens in blocks of 16 over 16 steps are 16 calls and nfe 16; no cache is offered, run or
    recorded."""
    spec = f"hf-diffusion:{request.getfixturevalue(family)}"
    calls, last, settings = counted_run(spec, PROMPT, trust_remote_code=family == "a2d", gen_length=32, steps=16,
                                        block_length=16, threshold=None, stop_at_eos=False)
    assert calls == last.nfe == 16 and last.refreshes == 0
    assert not {"prefix_cache", "dual_cache"} & set(settings)
    no_cache_offered(spec, trust_remote_code=family == "a2d")


def test_bd3lm_counts_its_block_cache_fills_as_passes(a2d: Path) -> None:
    """BD3LM's block cache is real and its block attention always runs it: each block's fill is a call of the network
    and a pass. Its block attention is what is recorded; no cache switch is offered (it has no dual cache)."""
    spec = f"hf-diffusion:{a2d}"
    calls, last, settings = counted_run(spec, PROMPT, trust_remote_code=True, gen_length=32, steps=16,
                                        block_length=16, threshold=None, stop_at_eos=False, block_attention=True)
    assert calls == last.nfe == 16 + 2 and last.refreshes == 2
    assert settings["block_attention"] is True and not {"prefix_cache", "dual_cache"} & set(settings)
    no_cache_offered(spec, trust_remote_code=True, block_attention=True)


@pytest.mark.parametrize("block_attention", [False, True])
def test_an_id_past_the_a2d_tokenizer_is_drawn_as_its_placeholder(a2d: Path, block_attention: bool) -> None:
    """The A2D Qwen3 output layer has 151936 rows and its tokenizer 151670 entries (as Qwen3's); an id between is
    drawn as `<id N>` under the MDLM sampler and under block attention (BD3LM)."""
    frames = past_the_tokenizer(f"hf-diffusion:{a2d}", 151900, PROMPT, trust_remote_code=True, gen_length=16,
                                steps=8, block_length=8, stop_at_eos=False, block_attention=block_attention)
    assert drawn(frames, 151900)
