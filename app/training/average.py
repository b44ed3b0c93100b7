"""The weighted mean of two diffusion twins' weights, one continued from the other:
`python -m app.training.average --new DIR --old DIR --weight 0.5 --corpus ../shared/corpus/tinystories-*.txt --out DIR`.

Why: each round of self-distillation makes the twin sure of more positions together, and its text drifts further from
the stories (its perplexity at one token a pass rises). A fine-tuned model and the model it started from lie in one
basin, so the straight line between their weights holds models in between (WiSE-FT, Wortsman et al. 2022: the mean of
a fine-tuned model's weights and its start's keeps most of what each is good at). `--out` gets the mean's weights and
a log that keeps the newer twin's training chain (which holds the older's: no token is counted twice), the weight and
the mean's held-out figures; the commit filter is refitted for it afterwards (app/training/fit_filter.py).
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from pathlib import Path
from typing import Any

import numpy as np

FILES = ("tokenizer.json", "ar.safetensors", "ar.json", "referee.safetensors", "referee.json")


def mean_weights(new: dict[str, np.ndarray], old: dict[str, np.ndarray], weight: float) -> dict[str, np.ndarray]:
    """weight x new + (1 - weight) x old, tensor by tensor, in float32 (both must have the same tensors)."""
    if new.keys() != old.keys() or any(new[k].shape != old[k].shape for k in new):
        raise ValueError("the two twins do not have the same architecture")
    return {k: weight * new[k].astype(np.float32) + (1 - weight) * old[k].astype(np.float32) for k in new}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Writes the mean twin to --out (with the newer folder's tokenizer, AR twin and referee); returns its log."""
    import torch
    from safetensors.numpy import load_file

    from app.training.data import encode_stream, held_out_windows
    from app.training.losses import held_out_loss
    from app.training.model import TorchTransformer, save_twin
    from app.training.stories import SPLIT_SEED, command_line, read_stories, split_stories
    from app.training.train import hardware

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--new", required=True, help="folder of the twin trained further (its log's chain holds --old's)")
    ap.add_argument("--old", required=True, help="folder of the twin it was continued from")
    ap.add_argument("--weight", type=float, default=0.5, help="share of the newer twin's weights")
    ap.add_argument("--corpus", nargs="+", required=True, help="the twins' stories (for the held-out figures)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--val-windows", type=int, default=64)
    args = ap.parse_args(argv)
    start = time.time()
    new, old, out = Path(args.new), Path(args.old), Path(args.out)
    logs = {f: json.loads((f / "diffusion.json").read_text(encoding="utf-8")) for f in (new, old)}
    config = logs[new]["config"]
    weights = mean_weights(load_file(str(new / "diffusion.safetensors")), load_file(str(old / "diffusion.safetensors")),
                           args.weight)
    model = TorchTransformer(config["vocab_size"], config["n_layer"], config["n_head"], config["n_embd"],
                             config["max_len"])
    model.load_state_dict({k: torch.from_numpy(v) for k, v in weights.items()})
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(new / "tokenizer.json"))
    _, val_s = split_stories(read_stories(args.corpus), SPLIT_SEED)
    val_tokens, val_starts = encode_stream(tok, val_s, config["eos_id"])
    val = held_out_windows(val_tokens, val_starts, config["max_len"], SPLIT_SEED, args.val_windows)
    newer = logs[new]["training"]
    stats = {
        "twin": "diffusion",
        "init": f"the weighted mean of two twins' weights (WiSE-FT): {args.weight:g} x the twin of the run below and "
                f"{1 - args.weight:g} x an earlier twin of its chain",
        "averaged": {"weight": args.weight, "old_held_out": logs[old]["training"].get("held_out")},
        "data": {"stories_held_out": len(val_s), "held_out_tokens": int(len(val_tokens))},
        "params": newer["params"], "tokens_this_run": 0, "tokens_seen_total": newer["tokens_seen_total"],
        "seconds": round(time.time() - start, 1), "hardware": hardware(),
        "held_out": held_out_loss(model, val, "diffusion", config["mask_id"], SPLIT_SEED),
        "previous_run": newer, "command": command_line("app.training.average", argv),
    }
    save_twin(model, out, "diffusion", config, stats)
    for name in FILES:
        if (new / name).is_file() and not (out / name).exists():
            shutil.copy(new / name, out / name)
    print(json.dumps({k: stats[k] for k in ("init", "held_out", "seconds")}), flush=True)
    return stats


if __name__ == "__main__":
    main()
