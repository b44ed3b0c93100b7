"""Tiny random models built from each family's own published code (vendored in tests/assets/, see SOURCES.md).

Each builder copies the family's modeling and configuration files next to a shrunk copy of its real config.json,
builds the model class from them with transformers (as `trust_remote_code` does), gives it seeded random weights
and saves it with a word-level tokenizer whose special tokens sit at the family's real ids and whose
tokenizer_config.json (chat template, end-of-text, padding) is the family's own. No weights are downloaded.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import shutil
import threading
from pathlib import Path
from types import ModuleType
from typing import Any, Iterator

ASSETS = Path(__file__).parent / "assets"
WORDS = ("once upon a time there was a little cat who liked to play in the sun . she had a red ball and a big dog "
         "friend they ran to the park every day user assistant system").split()


def vendored(family: str, filename: str) -> ModuleType:
    """A vendored reference module (such as LLaDA's generate.py) imported from its file."""
    path = ASSETS / family / filename
    spec = importlib.util.spec_from_file_location(f"vendored_{family}_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def word_tokenizer(folder: Path, specials: dict[int, str], vocab_size: int, words: tuple[str, ...] = ()) -> None:
    """Writes tokenizer.json: WORDS and `words`, then fillers up to vocab_size, `specials` ({id: text}) at their ids."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

    vocab: dict[str, int] = {"<unk>": 0}
    for w in sorted(set(WORDS) | set(words)):
        vocab[w] = len(vocab)
    for i in range(len(vocab), vocab_size):
        if i not in specials:
            vocab[f"w{i}"] = i
    vocab.update({text: i for i, text in specials.items()})
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.decoder = decoders.WordPiece(prefix="##")
    tok.add_special_tokens([AddedToken(specials[i], special=True, normalized=False) for i in sorted(specials)])
    tok.save(str(folder / "tokenizer.json"))


def family_tokenizer(folder: Path, family: str, vocab_size: int, words: tuple[str, ...] = ()) -> None:
    """Writes tokenizer.json (WORDS and `words`, then fillers up to vocab_size, the family's special tokens at their
    real ids) beside the family's own tokenizer_config.json."""
    config = json.loads((ASSETS / family / "tokenizer_config.json").read_text(encoding="utf-8"))
    specials = {int(i): t["content"] for i, t in config["added_tokens_decoder"].items()}
    word_tokenizer(folder, specials, vocab_size, words)
    shutil.copy(ASSETS / family / "tokenizer_config.json", folder / "tokenizer_config.json")


def _randomise(model: Any, seed: int, std: float) -> None:
    """Seeded normal weights (norm scales stay 1), large enough that the tiny model is confident."""
    import torch

    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for _name, p in model.named_parameters():
            if p.dim() > 1:
                p.copy_(torch.randn(p.shape, generator=gen) * std)


def build_llada(root: Path, seed: int = 0) -> Path:
    """A 2-layer, 16-wide LLaDA with LLaDA-8B-Instruct's vocabulary (126464 ids, mask 126336), saved under root."""
    import transformers

    folder = root / "llada"
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("modeling_llada.py", "configuration_llada.py"):
        shutil.copy(ASSETS / "llada" / name, folder / name)
    config = json.loads((ASSETS / "llada" / "config.json").read_text(encoding="utf-8"))
    config.update(d_model=16, n_heads=2, n_kv_heads=2, n_layers=2, mlp_hidden_size=32, max_sequence_length=256)
    (folder / "config.json").write_text(json.dumps(config, indent=2), encoding="utf-8")
    cfg = transformers.AutoConfig.from_pretrained(folder, trust_remote_code=True)
    model = transformers.AutoModel.from_config(cfg, trust_remote_code=True)
    _randomise(model, seed, std=0.5)
    model.save_pretrained(folder)
    (folder / "config.json").write_text(json.dumps(config, indent=2), encoding="utf-8")  # as published: 4.46.3
    family_tokenizer(folder, "llada", config["vocab_size"])
    return folder


def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2's byte-to-character map, which Qwen2-style byte-level BPE vocabularies (Dream's) are written in."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


def bpe_tokenizer_files(folder: Path, family: str) -> None:
    """vocab.json and merges.txt for a Qwen2-style byte-level BPE tokenizer (Dream's own, transformers' Qwen2Tokenizer):
    the 256 bytes, merges that spell WORDS, fillers up to the family's first special id, beside the family's own
    tokenizer_config.json (which places the special tokens)."""
    config = json.loads((ASSETS / family / "tokenizer_config.json").read_text(encoding="utf-8"))
    first_special = min(int(i) for i in config["added_tokens_decoder"])
    vocab = {ch: i for i, ch in enumerate(_bytes_to_unicode().values())}
    merges: list[str] = []
    for word in sorted(set(WORDS)):
        for form in (word, "Ġ" + word):  # Ġ is the byte-level space
            pieces = list(form)
            while len(pieces) > 1:
                joined = pieces[0] + pieces[1]
                if joined not in vocab:
                    merges.append(f"{pieces[0]} {pieces[1]}")
                    vocab[joined] = len(vocab)
                pieces = [joined] + pieces[2:]
    for i in range(len(vocab), first_special):
        vocab[f"<unused{i}>"] = i
    (folder / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
    (folder / "merges.txt").write_text("#version: 0.2\n" + "\n".join(merges) + "\n", encoding="utf-8")
    shutil.copy(ASSETS / family / "tokenizer_config.json", folder / "tokenizer_config.json")


def dream_tokenizer_files(folder: Path) -> None:
    """Dream's tokenizer files (bpe_tokenizer_files) beside Dream's own tokenizer code, tokenization_dream.py."""
    bpe_tokenizer_files(folder, "dream")
    shutil.copy(ASSETS / "dream" / "tokenization_dream.py", folder / "tokenization_dream.py")


def build_dream(root: Path, seed: int = 0) -> Path:
    """A 2-layer, 16-wide Dream with Dream-v0-Instruct-7B's vocabulary (152064 ids, mask 151666), saved under root
    with Dream's own tokenizer code. The model is built in this process on the CPU, so its rotary buffer is right."""
    import transformers

    from app.hf.compat import legacy_rope_default

    folder = root / "dream"
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("modeling_dream.py", "configuration_dream.py", "generation_utils.py", "generation_config.json"):
        shutil.copy(ASSETS / "dream" / name, folder / name)
    config = json.loads((ASSETS / "dream" / "config.json").read_text(encoding="utf-8"))
    config.update(hidden_size=16, intermediate_size=32, num_attention_heads=2, num_key_value_heads=1,
                  num_hidden_layers=2, max_window_layers=2, max_position_embeddings=256)
    (folder / "config.json").write_text(json.dumps(config, indent=2), encoding="utf-8")
    legacy_rope_default()  # Dream's code looks up transformers 4's "default" RoPE by name
    from app.hf.compat import remote_class

    cfg = transformers.AutoConfig.from_pretrained(folder, trust_remote_code=True)
    model = remote_class(cfg, str(folder), True, "AutoModel")(cfg)  # saving needs transformers 5's tied-keys dict
    _randomise(model, seed, std=0.5)
    model.save_pretrained(folder)
    (folder / "config.json").write_text(json.dumps(config, indent=2), encoding="utf-8")  # as published: 4.46.2
    dream_tokenizer_files(folder)
    return folder


LLADA2_EOS, LLADA2_MASK = 156892, 156895  # LLaDA2.x's end-of-text and mask ids (its generate()'s defaults)


def llada2_tokenizer(folder: Path, vocab_size: int) -> None:
    """tokenizer.json and tokenizer_config.json with LLaDA2.x's end-of-text and mask tokens at their ids (no chat
    template: LLaDA2's published tokenizer_config.json is not vendored, see SOURCES.md)."""
    word_tokenizer(folder, {LLADA2_EOS: "<|endoftext|>", LLADA2_MASK: "<|mask|>"}, vocab_size)
    (folder / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "PreTrainedTokenizerFast", "eos_token": "<|endoftext|>", "mask_token": "<|mask|>",
        "pad_token": "<|endoftext|>", "unk_token": "<unk>"}, indent=2), encoding="utf-8")


def build_llada2(root: Path, seed: int = 0, std: float = 0.5, version: str = "2.1") -> Path:
    """A 2-layer, 16-wide LLaDA2.1 (or, with version "2.0", LLaDA2.0) mixture of experts (8 experts, 2 a token, one
    shared) with LLaDA2.x-mini's vocabulary (157184 ids, mask 156895), built from its own model code under root."""
    import transformers

    from app.hf.compat import legacy_rope_default, remote_class

    stem = {"2.1": "llada21_moe", "2.0": "llada2_moe"}[version]
    folder = root / f"llada{version.replace('.', '')}"
    folder.mkdir(parents=True, exist_ok=True)
    for name in (f"modeling_{stem}.py", f"configuration_{stem}.py"):
        shutil.copy(ASSETS / "llada2" / name, folder / name)
    config = {
        "architectures": ["LLaDA2MoeModelLM"], "model_type": stem,
        "auto_map": {"AutoConfig": f"configuration_{stem}.LLaDA2MoeConfig",
                     "AutoModel": f"modeling_{stem}.LLaDA2MoeModelLM",
                     "AutoModelForCausalLM": f"modeling_{stem}.LLaDA2MoeModelLM"},
        "vocab_size": 157184, "hidden_size": 16, "intermediate_size": 32, "moe_intermediate_size": 8,
        "num_hidden_layers": 2, "first_k_dense_replace": 1, "num_attention_heads": 2, "num_key_value_heads": 1,
        "head_dim": 8, "num_experts": 8, "num_experts_per_tok": 2, "num_shared_experts": 1, "n_group": 2,
        "topk_group": 1, "routed_scaling_factor": 2.5, "use_qk_norm": True, "use_qkv_bias": False, "use_bias": False,
        "partial_rotary_factor": 0.5, "rope_theta": 600000, "max_position_embeddings": 256, "rms_norm_eps": 1e-6,
        "hidden_act": "silu", "tie_word_embeddings": False, "pad_token_id": LLADA2_EOS, "eos_token_id": LLADA2_EOS,
        "mask_token_id": LLADA2_MASK, "embedding_dropout": 0.0, "attention_dropout": 0.0, "output_dropout": 0.0,
        "use_cache": False, "torch_dtype": "float32", "transformers_version": "4.56.1"}
    (folder / "config.json").write_text(json.dumps(config, indent=2), encoding="utf-8")
    legacy_rope_default()
    cfg = transformers.AutoConfig.from_pretrained(folder, trust_remote_code=True)
    model = remote_class(cfg, str(folder), True, "AutoModelForCausalLM")(cfg)
    _randomise(model, seed, std=std)
    model.save_pretrained(folder)
    (folder / "config.json").write_text(json.dumps(config, indent=2), encoding="utf-8")
    llada2_tokenizer(folder, config["vocab_size"])
    return folder


def dllm_on_path() -> ModuleType:
    """dllm's vendored samplers and schedulers (tests/assets/dllm) as the package `dllm`: its samplers import it so,
    and its modeling_qwen3.py imports it in a `__main__` block, which transformers' import check asks to find."""
    import sys

    path = str(ASSETS / "dllm")
    if path not in sys.path:
        sys.path.insert(0, path)
    import dllm.core.samplers

    return dllm.core.samplers


def build_a2d(root: Path, seed: int = 0) -> Path:
    """A 2-layer, 16-wide A2D Qwen3 (dllm's MDLM and BD3LM models share this code and layout) with Qwen3's vocabulary
    (151936 ids; mask <|mask|> 151669, end-of-text <|im_end|> 151645, padding <|endoftext|> 151643), saved under root
    with dllm's modeling_qwen3.py, which its config's auto_map names."""
    import transformers

    dllm_on_path()
    folder = root / "a2d"
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(ASSETS / "a2d" / "modeling_qwen3.py", folder / "modeling_qwen3.py")
    config = json.loads((ASSETS / "a2d" / "config.json").read_text(encoding="utf-8"))
    config.update(hidden_size=16, intermediate_size=32, num_attention_heads=2, num_key_value_heads=1, head_dim=8,
                  num_hidden_layers=2, max_window_layers=2, max_position_embeddings=256)
    (folder / "config.json").write_text(json.dumps(config, indent=2), encoding="utf-8")
    cfg = transformers.AutoConfig.from_pretrained(folder, trust_remote_code=True)
    model = transformers.AutoModelForMaskedLM.from_config(cfg, trust_remote_code=True)
    _randomise(model, seed, std=0.5)
    model.save_pretrained(folder)
    (folder / "config.json").write_text(json.dumps(config, indent=2), encoding="utf-8")  # as published: 4.57.0
    bpe_tokenizer_files(folder, "a2d")
    return folder


def build_modernbert_chat(root: Path, seed: int = 0) -> Path:
    """A 3-layer, 16-wide ModernBERT (transformers' own ModernBertForMaskedLM, ModernBERT-large's config and
    vocabulary: 50368 ids, [MASK] 50284, [PAD] 50283) saved with its tokenizer as dllm's BERT-chat fine-tuning saves it:
    dllm's get_tokenizer sets end-of-text and BOS to the padding and the chat template to its [Question]/[Answer]
    template (vendored from dllm/utils/models.py), and sft.py saves that tokenizer beside the model."""
    import transformers

    folder = root / "modernbert-chat"
    folder.mkdir(parents=True, exist_ok=True)
    config = json.loads((ASSETS / "modernbert" / "config.json").read_text(encoding="utf-8"))
    config.update(hidden_size=16, intermediate_size=32, num_attention_heads=2, num_hidden_layers=3)
    cfg = transformers.ModernBertConfig.from_dict(config)
    torch_model = transformers.ModernBertForMaskedLM(cfg)
    _randomise(torch_model, seed, std=0.5)
    torch_model.save_pretrained(folder)
    (folder / "config.json").write_text(json.dumps(config, indent=2), encoding="utf-8")  # as published: 4.47
    family_tokenizer(folder, "modernbert", config["vocab_size"], words=("[", "[/", "]", "Question", "Answer"))
    tok = transformers.AutoTokenizer.from_pretrained(folder)
    tok.eos_token = tok.pad_token  # dllm's get_tokenizer: `if not tokenizer.eos_token: eos = pad` (and bos)
    tok.bos_token = tok.pad_token
    tok.chat_template = (ASSETS / "modernbert" / "chat_template.jinja").read_text(encoding="utf-8")
    tok.save_pretrained(folder)
    return folder


CACHES = [{"prefix_cache": False}, {"prefix_cache": True}, {"dual_cache": False},
          {"dual_cache": True}]  # the cache switches both ways, which no Hugging Face diffusion model is offered


def no_cache_offered(spec: str, **settings: Any) -> None:
    """Asking a Hugging Face diffusion model for either cache switch, either way, is refused with one sentence that
    names the source and the setting, before anything loads."""
    from app.errors import UserError
    from app.sources.base import make_source

    for cache in CACHES:
        (name,) = cache
        try:
            make_source(spec, **{"device": "cpu", **settings, **cache})
        except UserError as e:
            assert spec in str(e) and repr(name) in str(e), str(e)
        else:
            raise AssertionError(f"{spec} took {cache}")


@contextlib.contextmanager
def forward_calls(module: Any) -> Iterator[list[int]]:
    """Counts every call of a torch module's `forward`, however it is reached, while the block runs: [count]."""
    calls = [0]
    forward = module.forward

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        return forward(*args, **kwargs)

    module.forward = counting
    try:
        yield calls
    finally:
        del module.forward


def counted_run(spec: str, prompt: str, **settings: Any) -> tuple[int, Any, dict[str, Any]]:
    """(calls of the loaded model's forward, the last frame, the settings the recording's header would hold) of one
    run of the source `spec`, made with `settings`."""
    from app.sources.base import make_source

    src = make_source(spec, **{"device": "cpu", **settings})
    with forward_calls(src.model.model) as calls:
        frames = list(src.stream(prompt, threading.Event()))
    return calls[0], frames[-1], src.settings()


@contextlib.contextmanager
def favouring(module: Any, token: int) -> Iterator[None]:
    """The module's logits raised at `token` on every row while the block runs, so the sampler writes that id."""
    def raise_it(_module: Any, _args: Any, out: Any) -> None:
        out.logits[..., token] += 100.0

    hook = module.register_forward_hook(raise_it)
    try:
        yield
    finally:
        hook.remove()


def past_the_tokenizer(spec: str, token: int, prompt: str, **settings: Any) -> list[Any]:
    """The frames of a run of the source `spec` whose model is made to write `token` (`favouring`), an id its output
    layer has a row for and its tokenizer no entry."""
    from app.sources.base import make_source

    src = make_source(spec, **{"device": "cpu", **settings})
    assert src.model.vocab_size > token and token not in src.tok.tok.get_vocab().values()
    with favouring(src.model.model, token):
        return list(src.stream(prompt, threading.Event()))


def drawn(frames: list[Any], token: int) -> bool:
    """Whether `token` is drawn as its placeholder in the answer's cells, the inspector's candidates and the text."""
    from app.hf.models import unknown_token

    shown = unknown_token(token)
    candidates = [name for f in frames for _, cands in f.candidates or [] for name, _ in cands]
    return shown in frames[-1].tokens and shown in candidates and shown in frames[-1].text


GEMMA_PAD, GEMMA_EOS, GEMMA_BOS = 124, 125, 126  # the tiny DiffusionGemma's special ids (above WORDS' ids)


def build_diffusion_gemma(root: Path, seed: int = 0, canvas_length: int = 8,
                          generation: dict[str, Any] | None = None) -> Path:
    """A 2-layer, 32-wide DiffusionGemma (transformers' own DiffusionGemmaForBlockDiffusion: a mixture-of-experts text
    config, 4 experts, 2 a token, and a small Gemma 4 vision config, as transformers' own tests shrink them) with a
    128-id word tokenizer and canvases of `canvas_length`, saved under root with seeded random weights; `generation`:
    values its saved generation_config.json sets (`entropy_bound` as its sampler config's)."""
    import transformers

    folder = root / "diffusion-gemma"
    folder.mkdir(parents=True, exist_ok=True)
    text = {"vocab_size": 128, "hidden_size": 32, "num_attention_heads": 2, "num_key_value_heads": 2,
            "intermediate_size": 32, "max_position_embeddings": 512, "pad_token_id": GEMMA_PAD,
            "bos_token_id": GEMMA_BOS, "eos_token_id": GEMMA_EOS, "moe_intermediate_size": 8, "num_experts": 4,
            "top_k_experts": 2, "num_hidden_layers": 2, "layer_types": ["sliding_attention", "full_attention"],
            "per_layer_config": {1: {"head_dim": 16, "num_key_value_heads": 2}}}
    vision = {"image_size": 20, "patch_size": 5, "num_channels": 3, "hidden_size": 16, "num_key_value_heads": 1,
              "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 37}
    config = transformers.DiffusionGemmaConfig(text_config=text, vision_config=vision, image_token_id=120,
                                               boi_token_id=121, eoi_token_id=122, canvas_length=canvas_length)
    model = transformers.DiffusionGemmaForBlockDiffusion(config)
    _randomise(model, seed, std=0.5)
    if generation:
        given = dict(generation)
        if "entropy_bound" in given:
            given["sampler_config"] = transformers.EntropyBoundSamplerConfig(entropy_bound=given.pop("entropy_bound"))
        model.generation_config = transformers.DiffusionGemmaGenerationConfig(**given)
    model.save_pretrained(folder)
    word_tokenizer(folder, {GEMMA_PAD: "<pad>", GEMMA_EOS: "<eos>", GEMMA_BOS: "<bos>"}, text["vocab_size"])
    (folder / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "PreTrainedTokenizerFast", "bos_token": "<bos>", "eos_token": "<eos>",
        "pad_token": "<pad>", "unk_token": "<unk>"}, indent=2), encoding="utf-8")
    return folder
