"""Tiny random Hugging Face models, built and saved locally (no downloads), run end to end through the samplers."""

from __future__ import annotations

import shutil
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from app.errors import UserError
from app.sources.base import make_source
from tests.hf_families import counted_run, drawn, no_cache_offered, past_the_tokenizer

torch = pytest.importorskip("torch", reason="torch is not installed")
transformers = pytest.importorskip("transformers", reason="transformers is not installed")

WORDS = ("once upon a time there was a little cat who liked to play in the sun . she had a red ball "
         "and a big dog friend they ran to the park every day").split()
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "[EOS]"]


def tiny_tokenizer():
    """A word-level fast tokenizer with [MASK] and [EOS], built in memory."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    vocab = {w: i for i, w in enumerate(SPECIALS + sorted(set(WORDS)))}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.decoder = decoders.WordPiece(prefix="##")
    return transformers.PreTrainedTokenizerFast(
        tokenizer_object=tok, pad_token="[PAD]", unk_token="[UNK]", cls_token="[CLS]", sep_token="[SEP]",
        mask_token="[MASK]", eos_token="[EOS]")


def build_tiny_models(root: Path, padding: int = 0) -> dict[str, Path]:
    """Saves a BERT masked LM, a GPT-2 causal LM and a Qwen2 causal LM (used Dream-style) under root; with `padding`,
    their output layers have that many rows more than the tokenizer has entries (as real checkpoints pad them)."""
    tok = tiny_tokenizer()
    v = len(tok) + padding
    torch.manual_seed(0)
    models = {
        "bert": transformers.BertForMaskedLM(transformers.BertConfig(
            vocab_size=v, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
            max_position_embeddings=96)),
        "gpt2": transformers.GPT2LMHeadModel(transformers.GPT2Config(
            vocab_size=v, n_embd=32, n_layer=2, n_head=2, n_positions=96, bos_token_id=5, eos_token_id=5)),
        "qwen": transformers.Qwen2ForCausalLM(transformers.Qwen2Config(
            vocab_size=v, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
            num_key_value_heads=2, max_position_embeddings=96)),
    }
    paths = {}
    for name, model in models.items():
        paths[name] = root / name
        model.save_pretrained(paths[name])
        tok.save_pretrained(paths[name])
    return paths


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return build_tiny_models(tmp_path_factory.mktemp("hf"))


def test_bert_masked_lm_runs_through_the_diffusion_sampler(tiny: dict[str, Path]) -> None:
    src = make_source(f"hf-diffusion:{tiny['bert']}", gen_length=16, steps=8, block_length=8, stop_at_eos=False)
    frames = list(src.stream("once upon a time", threading.Event()))
    assert frames[0].masked == [True] * 16 and frames[0].nfe == 0
    last = frames[-1]
    # 8 steps, each one call of the network (BERT keeps no cache to fill)
    assert last.final and last.nfe == 8 and len(frames) == 9
    assert sum(len(f.committed or []) for f in frames) == 16
    assert not any(last.masked) and last.text
    for f in frames[1:5]:  # the first block (8 positions over 4 steps) fills before anything right of it
        assert all(i < 8 for i in f.committed)
    assert src.settings()["model"] == str(tiny["bert"])


def test_dream_style_wrapper_unshifts_the_logits(tiny: dict[str, Path]) -> None:
    from app.hf.models import load_masked

    model, tok = load_masked(str(tiny["qwen"]))
    assert model.shifted and model.mask_id == tok.mask_id
    ids = np.array(tok.prompt_ids("the cat had a red ball", chat=False) + [model.mask_id] * 4)
    with torch.inference_mode():
        raw = model.model(input_ids=torch.as_tensor(ids)[None]).logits[0].numpy()
    got = model.logits(ids)
    allowed = [i for i in range(model.vocab_size) if i not in model.banned]
    np.testing.assert_allclose(got[1:, allowed], raw[:-1, allowed], rtol=1e-5, atol=1e-5)
    aligned, _ = load_masked(str(tiny["qwen"]), shift="aligned")
    np.testing.assert_allclose(aligned.logits(ids)[:, allowed], raw[:, allowed], rtol=1e-5, atol=1e-5)

    src = make_source(f"hf-diffusion:{tiny['qwen']}", gen_length=8, steps=4, block_length=8, stop_at_eos=False,
                      threshold=0.5)
    frames = list(src.stream("the cat", threading.Event()))
    # at most 4 steps, each one call of the network
    assert frames[-1].final and len(frames[-1].tokens) == 8 and frames[-1].nfe <= 4


def test_causal_lm_with_kv_cache_matches_recomputing_the_whole_prefix(tiny: dict[str, Path]) -> None:
    from app.engine.autoregressive import ARSettings, generate
    from app.hf.models import load_causal

    model, tok = load_causal(str(tiny["gpt2"]))
    prompt = tok.prompt_ids("a little cat", chat=False)
    steps = list(generate(model, prompt, ARSettings(gen_length=10, stop_at_eos=False)))
    assert [s.nfe for s in steps] == list(range(1, 11)) and steps[-1].done
    ids = list(prompt)
    for _ in range(10):  # no cache: the full sequence every token
        with torch.inference_mode():
            ids.append(int(model.model(input_ids=torch.tensor([ids])).logits[0, -1].argmax()))
    assert steps[-1].ids == ids[len(prompt):]

    frames = list(make_source(f"hf-ar:{tiny['gpt2']}", gen_length=6, stop_at_eos=False)
                  .stream("a little cat", threading.Event()))
    assert [len(f.tokens) for f in frames] == [1, 2, 3, 4, 5, 6] and frames[-1].final
    assert frames[-1].text == tok.decode(ids[len(prompt):len(prompt) + 6])


def test_sampled_ar_is_reproducible_by_seed(tiny: dict[str, Path]) -> None:
    def text(seed: int) -> str:
        src = make_source(f"hf-ar:{tiny['gpt2']}", gen_length=12, temperature=1.5, top_k=20, top_p=0.95,
                          stop_at_eos=False, seed=seed)
        return list(src.stream("the dog", threading.Event()))[-1].text

    assert text(1) == text(1)
    assert len({text(s) for s in range(4)}) > 1


def test_unknown_id_offline_and_corrupt_weights_give_one_sentence(tiny: dict[str, Path], tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(UserError, match="local folder"):
        make_source("hf-ar:no-such-org/no-such-model")
    broken = tmp_path / "broken"
    shutil.copytree(tiny["bert"], broken)
    (broken / "model.safetensors").write_bytes(b"not a safetensors file")
    with pytest.raises(UserError, match="weights") as err:
        make_source(f"hf-diffusion:{broken}")
    assert "\n" not in str(err.value)
    with pytest.raises(UserError, match="hf-diffusion"):
        make_source(f"hf-ar:{tiny['gpt2']}", shift="shifted")


def test_missing_transformers_names_the_install(tiny: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    from app.hf import models as hf

    monkeypatch.setitem(sys.modules, "transformers", None)  # what Python does when a package is absent
    with pytest.raises(UserError, match="pip install torch transformers"):
        hf.load_causal(str(tiny["gpt2"]))


def test_token_strings_concatenate_to_the_text_with_byte_level_pieces() -> None:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    from app.hf.models import HFTokenizer

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.train_from_iterator(["the cat sat on the mat", "héllo wörld café"] * 20, trainers.BpeTrainer(
        vocab_size=300, special_tokens=["<eos>", "<mask>"], initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False))
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token="<eos>", mask_token="<mask>")
    tok = HFTokenizer(fast, fast.mask_token_id, fast.eos_token_id)
    for text in ["the cat sat on the mat", "café 🐱 über naïve", "日本語のテキスト"]:
        ids = tok.encode(text)
        pieces = tok.token_strings(ids)
        assert len(pieces) == len(ids) and "".join(pieces) == tok.decode(ids) == text
    assert tok.token_strings(tok.encode("the cat"))[1] == " cat"


def test_auto_placement_on_this_machine_runs_where_torch_finds_an_accelerator() -> None:
    from app.hf.models import placement

    expected = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"
    runs_on = placement()
    assert runs_on["device"] == expected
    assert runs_on["dtype"] == ("float32" if expected == "cpu" else
                                "bfloat16" if expected == "cuda" and torch.cuda.is_bf16_supported() else "float16")
    assert placement("cpu") == {"device": "cpu", "dtype": "float32"}
    assert placement("cpu", "bfloat16") == {"device": "cpu", "dtype": "bfloat16"}


def test_cpu_with_auto_dtype_runs_in_float32_and_the_header_records_it(tiny: dict[str, Path], tmp_path: Path) -> None:
    from app.cli.record import record
    from app.trace.reading import read_recording

    out = tmp_path / "hf.jsonl"
    final = record("once upon a time", f"hf-diffusion:{tiny['bert']}", f"hf-ar:{tiny['gpt2']}", out, settings={
        "left": {"gen_length": 8, "steps": 4, "block_length": 8, "stop_at_eos": False, "device": "cpu"},
        "right": {"gen_length": 6, "stop_at_eos": False, "device": "cpu", "dtype": "auto"}})
    assert {entry["status"] for entry in final["sides"].values()} == {"done"}
    sources = read_recording(out).header["sources"]
    for side in ("left", "right"):
        assert (sources[side]["settings"]["device"], sources[side]["settings"]["dtype"]) == ("cpu", "float32")
    from app.sources.hf import _causal, _masked

    assert next(_masked(str(tiny["bert"]), "auto", False, "cpu", "auto")[0].model.parameters()).dtype == torch.float32
    assert next(_causal(str(tiny["gpt2"]), False, "cpu", "auto")[0].model.parameters()).dtype == torch.float32


def test_an_explicit_dtype_loads_the_weights_in_it_and_sampling_still_works(tiny: dict[str, Path]) -> None:
    src = make_source(f"hf-ar:{tiny['gpt2']}", gen_length=6, stop_at_eos=False, device="cpu", dtype="bfloat16")
    assert next(src.model.model.parameters()).dtype == torch.bfloat16
    assert (src.settings()["device"], src.settings()["dtype"]) == ("cpu", "bfloat16")
    frames = list(src.stream("a little cat", threading.Event()))
    assert frames[-1].final and len(frames[-1].tokens) == 6

    masked = make_source(f"hf-diffusion:{tiny['qwen']}", gen_length=8, steps=4, block_length=8, stop_at_eos=False,
                         device="cpu", dtype="bfloat16")
    assert next(masked.model.model.parameters()).dtype == torch.bfloat16 and masked.model.shifted
    ids = np.array(masked.tok.prompt_ids("the cat", chat=False) + [masked.model.mask_id] * 8)
    with torch.inference_mode():
        raw = masked.model.model(input_ids=torch.as_tensor(ids)[None]).logits[0].float().numpy()
    got = masked.model.logits(ids, start=3)  # rows 3.. only, unshifted, as float32 on the CPU
    assert got.dtype == np.float32 and got.shape == (len(ids) - 3, masked.model.vocab_size)
    allowed = [i for i in range(masked.model.vocab_size) if i not in masked.model.banned]
    np.testing.assert_array_equal(got[:, allowed], raw[2:-1, allowed])
    assert list(masked.stream("the cat", threading.Event()))[-1].final


def test_an_absent_device_or_an_unknown_dtype_is_one_sentence(tiny: dict[str, Path]) -> None:
    if not torch.cuda.is_available():
        with pytest.raises(UserError, match="no CUDA GPU cuda on this machine.*auto or cpu"):
            make_source(f"hf-ar:{tiny['gpt2']}", device="cuda")
    with pytest.raises(UserError, match="Dtype must be one of auto, float32, bfloat16, float16, not 'int4'"):
        make_source(f"hf-ar:{tiny['gpt2']}", dtype="int4")
    with pytest.raises(UserError, match="Device must be one of"):
        make_source(f"hf-diffusion:{tiny['bert']}", device="tpu")


def test_a_hugging_face_masked_model_can_be_stepped_by_hand_and_saved(tiny: dict[str, Path], tmp_path: Path) -> None:
    from app.lessons import by_hand
    from app.trace.reading import read_recording

    spec = by_hand.steppable(f"hf-diffusion:{tiny['bert']}")
    src = make_source(spec, gen_length=16, steps=16, block_length=8, threshold=0, stop_at_eos=False)
    run = by_hand.begin(src, "once upon a time")
    first_open = run.state.open[:2]
    run = by_hand.advance(run, {first_open[1]: None})  # the learner takes the second position first
    run = by_hand.advance(run)  # then the model's rule
    rec = read_recording(by_hand.save(by_hand.finish(run), tmp_path))
    assert rec.header["sources"]["left"]["name"] == f"you+hf-diffusion:{tiny['bert']}"
    frames = rec.frames["left"]
    assert frames[1].chosen_by == "user" and frames[1].committed == [first_open[1]]
    assert frames[2].chosen_by == "model" and rec.ends["left"]["status"] == "done" and not any(frames[-1].masked)



@pytest.mark.parametrize("family", ["bert", "qwen"])
def test_a_masked_model_counts_each_call_of_its_network_as_one_pass_and_records_no_cache(
        tiny: dict[str, Path], family: str) -> None:
    """The BERT family and a Dream-style causal model keep no keys/values between passes: 32 tokens in blocks of 16
    over 16 steps are 16 calls and nfe 16; no cache is offered, run or recorded."""
    spec = f"hf-diffusion:{tiny[family]}"
    calls, last, settings = counted_run(spec, "the cat had a red ball", gen_length=32, steps=16, block_length=16,
                                        threshold=None, stop_at_eos=False)
    assert calls == last.nfe == 16 and last.refreshes == 0
    assert not {"prefix_cache", "dual_cache"} & set(settings)
    no_cache_offered(spec)


def test_a_causal_model_counts_its_prefill_and_each_cached_decode_as_one_pass(tiny: dict[str, Path]) -> None:
    calls, last, _ = counted_run(f"hf-ar:{tiny['gpt2']}", "the cat had a red ball", gen_length=12, stop_at_eos=False)
    assert calls == last.nfe == 12


@pytest.fixture(scope="module")
def padded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return build_tiny_models(tmp_path_factory.mktemp("padded"), padding=8)


@pytest.mark.parametrize("spec", ["hf-diffusion:bert", "hf-diffusion:qwen", "hf-ar:gpt2"])
def test_an_id_past_the_tokenizer_is_drawn_as_its_placeholder(padded: dict[str, Path], spec: str) -> None:
    """An output row the tokenizer has no entry for, once written, is drawn as `<id N>` by the masked loader, a
    Dream-style model and the causal loader, where a fast tokenizer's own decoding would drop it without a trace."""
    kind, family = spec.split(":")
    token = len(tiny_tokenizer()) + 3
    frames = past_the_tokenizer(f"{kind}:{padded[family]}", token, "the cat had a red ball", gen_length=8,
                                stop_at_eos=False, **({"steps": 8, "block_length": 8} if kind != "hf-ar" else {}))
    assert drawn(frames, token)
