"""Tiny random models built from each family's own published code (vendored in tests/assets/, see SOURCES.md).

Each builder copies the family's modeling and configuration files next to a shrunk copy of its real config.json,
builds the model class from them with transformers (as `trust_remote_code` does), gives it seeded random weights
and saves it with a word-level tokenizer whose special tokens sit at the family's real ids and whose
tokenizer_config.json (chat template, end-of-text, padding) is the family's own. No weights are downloaded.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path
from types import ModuleType
from typing import Any

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


def family_tokenizer(folder: Path, family: str, vocab_size: int) -> None:
    """Writes tokenizer.json (words, then fillers up to vocab_size, the family's special tokens at their real ids)
    beside the family's own tokenizer_config.json."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

    config = json.loads((ASSETS / family / "tokenizer_config.json").read_text(encoding="utf-8"))
    specials = {int(i): t["content"] for i, t in config["added_tokens_decoder"].items()}
    vocab: dict[str, int] = {"<unk>": 0}
    for w in sorted(set(WORDS)):
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
    shutil.copy(ASSETS / family / "tokenizer_config.json", folder / "tokenizer_config.json")


def _randomise(model: Any, seed: int, std: float) -> None:
    """Seeded normal weights (norm scales stay 1), large enough that the tiny model is confident."""
    import torch

    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
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
