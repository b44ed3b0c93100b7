"""Sequence-level distillation data: the AR twin writes stories that the diffusion twin then learns from.

`python -m app.training.distill --teacher assets/models/ar.safetensors --out kd.npz --stories 20000`

Kim and Rush (2016) and Mask-Predict (Ghazvininejad et al. 2019) made parallel decoding work by training the
non-autoregressive model on a teacher's outputs instead of the original text: the teacher's text has lower
entropy, so many positions become predictable at once. Openings are the first few tokens of training
stories (the held-out stories are never used); each story is written at a low temperature in batches with a
key/value cache, and ends at the teacher's end-of-text or at the length limit. The file is rewritten every ten
batches, so a run stopped early keeps what it wrote.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from app.training.data import SPECIALS, encode_stream
from app.training.model import TorchTransformer
from app.training.stories import SPLIT_SEED, command_line, read_stories, save_stream, split_stories


def load_torch_twin(path: str) -> tuple[TorchTransformer, dict]:
    """A twin's safetensors (float16 on disk) as a float32 TorchTransformer in eval mode, with its config."""
    from safetensors import safe_open
    from safetensors.numpy import load_file

    with safe_open(path, framework="numpy") as f:
        config = json.loads(f.metadata()["config"])
    model = TorchTransformer(config["vocab_size"], config["n_layer"], config["n_head"], config["n_embd"],
                             config["max_len"])
    model.load_state_dict({k: torch.from_numpy(v.astype(np.float32)) for k, v in load_file(path).items()})
    return model.eval(), config


@torch.no_grad()
def write_batch(model: TorchTransformer, openings: list[list[int]], max_len: int, temperature: float,
                eos_id: int, gen: torch.Generator) -> list[list[int]]:
    """Continues each opening (which starts with end-of-text, the engine's beginning token) to end-of-text
    or `max_len` positions, sampling at `temperature` (0: greedy). Returns the new tokens of each row,
    the end-of-text included when written. Openings of one batch must have equal length."""
    B = len(openings)
    x = torch.tensor(openings, dtype=torch.long)
    H = model.h[0].n_head
    C = model.wte.weight.shape[1]
    # preallocated: growing the cache by concatenation copies it every step
    shape = (len(model.h), B, H, max_len, C // H)
    keys, values = torch.zeros(shape), torch.zeros(shape)
    out = torch.zeros(B, 0, dtype=torch.long)
    finished = torch.zeros(B, dtype=torch.bool)
    pos = 0
    step_in = x
    while pos + step_in.shape[1] <= max_len:
        T = step_in.shape[1]
        h = model.wte(step_in) + model.wpe(torch.arange(pos, pos + T))
        for li, block in enumerate(model.h):
            q, k, v = block.qkv(block.ln1(h)).split(C, dim=2)
            q, k, v = (t.view(B, T, H, C // H).transpose(1, 2) for t in (q, k, v))
            keys[li, :, :, pos : pos + T] = k
            values[li, :, :, pos : pos + T] = v
            y = F.scaled_dot_product_attention(q, keys[li, :, :, : pos + T], values[li, :, :, : pos + T],
                                               is_causal=T > 1)
            h = h + block.proj(y.transpose(1, 2).reshape(B, T, C))
            h = h + block.fc_proj(F.gelu(block.fc(block.ln2(h)), approximate="tanh"))
        logits = model.ln_f(h[:, -1]) @ model.wte.weight.T
        logits[:, SPECIALS.index("<|mask|>")] = -float("inf")
        logits[:, SPECIALS.index("<|pad|>")] = -float("inf")
        if temperature > 0:
            nxt = torch.multinomial(F.softmax(logits / temperature, dim=-1), 1, generator=gen)[:, 0]
        else:
            nxt = logits.argmax(dim=-1)
        nxt = torch.where(finished, torch.full_like(nxt, eos_id), nxt)
        out = torch.cat([out, nxt[:, None]], dim=1)
        finished |= nxt == eos_id
        pos += T
        step_in = nxt[:, None]
        if bool(finished.all()):
            break
    rows = []
    for row in out.tolist():
        rows.append(row[: row.index(eos_id) + 1] if eos_id in row else row)
    return rows


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--teacher", required=True, help="the AR twin's safetensors")
    ap.add_argument("--tokenizer", default=None, help="tokenizer.json (default: beside the teacher)")
    ap.add_argument("--corpus", nargs="+", required=True,
                    help="the twins' training text (openings come from its training stories)")
    ap.add_argument("--out", required=True, help=".npz with the token stream and story starts")
    ap.add_argument("--stories", type=int, default=20000)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--opening", type=int, nargs=2, default=[3, 12], help="opening length range in tokens (inclusive)")
    ap.add_argument("--temperatures", type=float, nargs="+", default=[0.0, 0.3, 0.6], help="cycled over batches")
    ap.add_argument("--max-len", type=int, default=320, help="positions per story, the opening included")
    ap.add_argument("--seed", type=int, default=SPLIT_SEED, help="the twins' seed: the same training/held-out split")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--device", default="cpu",
                    help="cpu or cuda[:N]: on a GPU the teacher, its cache and its draws live there")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    from tokenizers import Tokenizer

    device = torch.device(args.device)
    if device.type != "cpu":  # as train.py: every tensor the writer makes lands on the accelerator
        torch.set_default_device(device)
    model, config = load_torch_twin(args.teacher)
    model.to(device)
    tok = Tokenizer.from_file(args.tokenizer or str(Path(args.teacher).with_name("tokenizer.json")))
    eos_id = config["eos_id"]
    train_s, _ = split_stories(read_stories(args.corpus), args.seed)
    tokens, starts = encode_stream(tok, train_s, eos_id)
    rng = np.random.default_rng(args.seed + 7)
    gen = torch.Generator(device=device).manual_seed(args.seed + 7)
    stream: list[int] = []
    story_starts: list[int] = []
    t0 = time.time()
    n_batches = (args.stories + args.batch - 1) // args.batch
    for b in range(n_batches):
        n = int(rng.integers(args.opening[0], args.opening[1] + 1))
        picks = starts[rng.integers(0, len(starts), size=args.batch)]
        openings = [[eos_id, *tokens[p : p + n].tolist()] for p in picks]
        temperature = args.temperatures[b % len(args.temperatures)]
        for opening, written in zip(openings, write_batch(model, openings, args.max_len, temperature, eos_id, gen)):
            story_starts.append(len(stream))
            stream.extend(opening[1:])
            stream.extend(written)
            if stream[-1] != eos_id:
                stream.append(eos_id)
        if b % 10 == 0 or b == n_batches - 1:
            print(json.dumps({"batch": b + 1, "of": n_batches, "tokens": len(stream),
                              "seconds": round(time.time() - t0, 1)}), flush=True)
            if b < n_batches - 1:  # every tenth batch: a stopped run keeps the stories written so far
                save(args, argv, stream, story_starts, time.time() - t0)
    return save(args, argv, stream, story_starts, time.time() - t0)


def save(args: argparse.Namespace, argv: list[str] | None, stream: list[int], story_starts: list[int],
         seconds: float) -> dict:
    """Writes the stories so far, with how they were made, to args.out; returns those stats."""
    stats = {
        "teacher": Path(args.teacher).name, "stories": len(story_starts), "tokens": len(stream),
        "temperatures": args.temperatures, "opening_tokens": args.opening, "seconds": round(seconds, 1),
        "threads": args.threads, "device": args.device,
        "command": command_line("app.training.distill", argv),
    }
    save_stream(args.out, stream, story_starts, stats)
    return stats


if __name__ == "__main__":
    main()
