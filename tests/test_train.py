"""Training both twins for a handful of steps on a tiny corpus: the loss falls and the output loads and generates."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

pytest.importorskip("torch", reason="training needs torch, the optional training extra (pip install torch)")

from app.engine.model import ARLM, MaskedDiffusionLM, load_twin  # noqa: E402
from app.training.train import main  # noqa: E402
from app.ui.about import twins_note  # noqa: E402

NAMES = ["Lily", "Tom", "Sue", "Ben", "Max", "Mia"]
THINGS = ["ball", "cat", "tree", "cake", "boat", "dog"]
FEELINGS = ["happy", "sad", "glad", "tired"]


def write_corpus(path, n: int = 120) -> None:
    """Template stories, blank line between paragraphs and between stories (like TinyStories a)."""
    rng = random.Random(0)
    stories = []
    for _ in range(n):
        name, thing, feel = rng.choice(NAMES), rng.choice(THINGS), rng.choice(FEELINGS)
        stories.append(
            f"Once upon a time, there was a kid named {name}. {name} had a {thing}.\n\n"
            f"One day, {name} lost the {thing}. {name} was {feel}. Then {name} found the {thing} and played."
        )
    path.write_text("\n\n".join(stories) + "\n")


def small_args(corpus, out, twin: str, *extra: str) -> list[str]:
    return ["--twin", twin, "--corpus", str(corpus), "--out", str(out), "--vocab", "320", "--n-layer", "1",
            "--n-head", "2", "--n-embd", "32", "--seq", "49", "--batch", "8", "--tokens", str(8 * 49 * 60),
            "--log-every", "1", "--eval-every", "1000", "--val-windows", "8", "--threads", "1", "--no-bf16", *extra]


def mean(points: list[dict], key: str) -> float:
    return float(np.mean([p[key] for p in points]))


def test_both_twins_train_load_and_generate(tmp_path) -> None:
    corpus, out = tmp_path / "stories.txt", tmp_path / "models"
    write_corpus(corpus)
    ar = main(small_args(corpus, out, "ar"))
    curve = ar["loss_curve"]
    assert mean(curve[-5:], "loss") < mean(curve[:5], "loss") - 0.5
    assert (out / "tokenizer.json").is_file() and (out / "ar_fork.safetensors").is_file()
    assert ar["held_out"]["ce"] < curve[0]["loss"]

    diff = main(small_args(corpus, out, "diffusion", "--init-from", str(out / "ar_fork.safetensors")))
    dcurve = diff["loss_curve"]
    assert diff["tokens_this_run"] + ar["fork_checkpoint"]["tokens"] == ar["tokens_this_run"]
    assert dcurve[0]["step"] == ar["steps"] // 2 + 1 and "AR twin" in diff["init"]
    assert mean(dcurve[-8:], "masked_ce") < mean(dcurve[:8], "masked_ce")
    saved = json.loads((out / "diffusion.json").read_text())
    assert saved["config"]["causal"] is False
    assert saved["training"]["command"].startswith("python -m app.training.train")

    model, tok = load_twin("ar", out)
    assert isinstance(model, ARLM)
    cache, logits = model.prefill(np.array(tok.encode("Once upon a time"), dtype=np.int64))
    ids = []
    for _ in range(12):
        ids.append(int(np.argmax(logits)))
        logits = model.decode(cache, ids[-1])
    assert any(name in tok.decode(ids) for name in ["there", "was", "kid", "named", *NAMES]), tok.decode(ids)

    dmodel, dtok = load_twin("diffusion", out)
    assert isinstance(dmodel, MaskedDiffusionLM)
    prompt = dtok.encode("Once upon a time, there was a kid named")
    seq = np.array(prompt + [dmodel.mask_id] * 6, dtype=np.int64)
    filled = dmodel.logits(seq, start=len(prompt))
    filled[:, dmodel.mask_id] = -np.inf
    words = dtok.decode([int(t) for t in filled.argmax(-1)])
    assert words.strip(), "the diffusion twin filled the masks with nothing"

    headline, details = twins_note(out)  # what the page says about these twins, read from their logs
    fork = ar["fork_checkpoint"]["tokens"]
    assert f"{ar['tokens_seen_total']:,} training tokens each" in headline and "starts from the AR twin" in headline
    assert f"checkpoint after {fork:,} tokens" in details and f"next {ar['tokens_seen_total'] - fork:,}" in details




def test_a_paused_run_resumed_from_its_checkpoint_ends_where_an_unbroken_run_ends(tmp_path) -> None:
    corpus = tmp_path / "stories.txt"
    write_corpus(corpus)
    whole = main(small_args(corpus, tmp_path / "whole", "ar", "--dropout", "0.1"))
    out = tmp_path / "paused"
    paused = main(small_args(corpus, out, "ar", "--dropout", "0.1", "--pause-after", "25"))
    assert paused["paused_at_step"] == 25 and (out / "ar.ckpt.pt").is_file() and not (out / "ar.safetensors").exists()
    resumed = main(small_args(corpus, out, "ar", "--dropout", "0.1", "--resume"))
    assert not (out / "ar.ckpt.pt").exists()  # a finished run leaves no checkpoint behind
    drop = lambda points: [{k: v for k, v in p.items() if k != "seconds"} for p in points]  # noqa: E731
    assert drop(resumed["loss_curve"]) == drop(whole["loss_curve"])
    assert resumed["held_out"] == whole["held_out"]


def test_distilled_stories_come_from_the_teacher_and_train_the_diffusion_twin(tmp_path) -> None:
    from app.training.distill import main as distill

    corpus, out = tmp_path / "stories.txt", tmp_path / "models"
    write_corpus(corpus)
    main(small_args(corpus, out, "ar"))
    kd = tmp_path / "kd.npz"
    stats = distill(["--teacher", str(out / "ar.safetensors"), "--corpus", str(corpus), "--out", str(kd),
                     "--stories", "16", "--batch", "8", "--max-len", "40", "--temperatures", "0"])
    data = np.load(kd)
    tokens, starts = data["tokens"], data["starts"]
    assert stats["stories"] == len(starts) == 16 and len(tokens) == stats["tokens"]
    model, tok = load_twin("ar", out)  # greedy: the numpy engine's AR sampler writes the same story
    story = tokens[starts[0]: starts[1]].tolist()
    eos = model.eos_id
    assert story[-1] == eos
    for n in range(3, 13):  # the opening is the first 3..12 tokens; whichever it was, greedy continues it alike
        cache, logits = model.prefill(np.array(story[:n], dtype=np.int64))
        ids = []  # a story cut at the length limit gets its end-of-text appended, so compare before it
        while len(ids) < len(story) - 1 - n:
            ids.append(int(np.argmax(logits)))
            if ids[-1] == eos:
                break
            logits = model.decode(cache, ids[-1])
        if story[:n] + ids in (story, story[:-1]):
            break
    else:
        raise AssertionError("no opening length reproduces the distilled story greedily")
    main(small_args(corpus, out, "diffusion", "--init-from", str(out / "ar_fork.safetensors")))
    before = json.loads((out / "diffusion.json").read_text())["training"]
    diff = main(small_args(corpus, out, "diffusion", "--init-from", str(out / "diffusion.safetensors"),
                           "--kd-data", str(kd), "--first-token", "0", "--tokens", str(8 * 49 * 10)))
    assert diff["data"]["distilled"]["stories"] == 16 and diff["previous_run"] == before
    headline, details = twins_note(out)  # the page says the AR twin taught the diffusion twin, and what that cost
    assert "stories the AR twin wrote" in headline and "the AR twin is its teacher" in details
    total = before["tokens_seen_total"] + diff["tokens_this_run"]
    assert f"the diffusion twin {total:,}" in details and "writing its stories" in details


def test_block_layout_masks_a_block_after_a_clean_prefix_and_everything_after_it() -> None:
    import torch

    from app.training.losses import diffusion_loss
    from app.training.model import TorchTransformer

    model = TorchTransformer(64, 1, 2, 32, 40)
    seen = []
    forward = model.forward
    model.forward = lambda ids, causal: seen.append(ids.clone()) or forward(ids, causal)  # type: ignore[method-assign]
    x = torch.randint(3, 64, (16, 40))
    loss, _ = diffusion_loss(model, x, 1, torch.Generator().manual_seed(0), t=torch.full((16,), 0.5),
                             block_frac=1.0, blocks=(8,))
    assert torch.isfinite(loss)
    for row in (seen[0] == 1).tolist():
        first = row.index(True)
        assert first >= 1 and not any(row[:first])  # a clean prefix (never the leading end-of-text)
        tail = row[first:]
        block_end = next((i for i in range(len(tail)) if all(tail[i:])), len(tail))
        assert block_end <= 8  # at most one block of 8 has clean positions among its masks; after it, all masked


def test_certainty_forcing_makes_the_model_surer_of_what_it_already_gets_right() -> None:
    import torch

    from app.training.losses import diffusion_loss
    from app.training.model import TorchTransformer

    torch.manual_seed(0)
    model = TorchTransformer(32, 1, 2, 32, 24)
    x = torch.randint(3, 32, (8, 24))
    t = torch.full((8,), 0.5)
    plain, _ = diffusion_loss(model, x, 1, torch.Generator().manual_seed(1), t=t)
    forced, _ = diffusion_loss(model, x, 1, torch.Generator().manual_seed(1), t=t, certainty=1.0)
    assert forced > plain  # the same masks: the entropy term is added on top of the cross-entropy

    def sharpness() -> float:  # the mean top probability over masked rows, with the same masks each time
        with torch.no_grad():
            noisy = torch.where(torch.rand(x.shape, generator=torch.Generator().manual_seed(2)) < 0.5, 1, x)
            return model(noisy, causal=False).softmax(-1).max(-1).values.mean().item()

    before = sharpness()
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    for _ in range(20):  # certainty forcing alone (cross-entropy scaled away): predictions only get sharper
        loss, _ = diffusion_loss(model, x, 1, torch.Generator().manual_seed(1), t=t, certainty=1.0, max_weight=1e-9)
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert sharpness() > before


def test_trajectory_windows_line_up_with_the_story_windows_of_the_same_step() -> None:
    from app.training.data import batch_at, orders_at
    from app.training.stories import NEVER, PROMPT

    tokens = np.array([5, 6, 7, 8, 0, 9, 10, 11, 0])  # two stories, each ending with end-of-text (0)
    orders = np.array([PROMPT, PROMPT, 2, 1, 3, PROMPT, 1, NEVER, NEVER])
    starts = np.array([0, 5])
    for step in range(4):
        x, o = batch_at(step, tokens, starts, 6, 8, 0), orders_at(step, orders, starts, 6, 8, 0)
        for row, order in zip(x.tolist(), o.tolist()):
            assert row[0] == 0 and order[0] == PROMPT  # the end-of-text before the story is clean context
            story = [5, 6, 7, 8, 0] if row[1] == 5 else [9, 10, 11, 0]
            assert row[1 : 1 + len(story)] == story
            assert order[1 : 1 + len(story)] == (orders[:5] if row[1] == 5 else orders[5:]).tolist()
            assert set(order[1 + len(story) :]) == {NEVER}  # what follows the story is never a state's context


def test_trajectory_layout_cleans_what_the_decode_wrote_before_a_step_and_scores_the_block_it_wrote_next() -> None:
    import torch

    from app.training.losses import trajectory_layout
    from app.training.stories import NEVER, PROMPT

    row = [PROMPT, PROMPT, PROMPT, 3, 1, 2, 4, 6, 5, 7, 8, NEVER]  # a 3-token opening, 8 answer tokens in blocks of 4
    order = torch.tensor([row] * 64)
    use, masked, scored, count = trajectory_layout(order, torch.Generator().manual_seed(0), 1.0, 4)
    assert use.all()
    seen = set()
    for m, sc, n in zip(masked.tolist(), scored.tolist(), count.tolist()):
        done = sum(1 for o, hid in zip(row, m) if 0 <= o < NEVER and not hid)  # steps done before this state
        seen.add(done)
        assert [not hid for hid in m] == [o <= done for o in row]  # written by step `done`: clean; the rest masked
        nxt = row.index(done + 1)
        block = range(3, 7) if nxt < 7 else range(7, 11)
        assert [i for i, s in enumerate(sc) if s] == [i for i in block if row[i] > done] and n == sum(sc)
    assert seen == set(range(8))  # every state of the decode is drawn, never the finished one


def test_a_diffusion_twin_trains_on_the_trajectories_its_stories_came_with(tmp_path) -> None:
    from app.training.stories import NEVER, PROMPT, save_stream

    corpus, out = tmp_path / "stories.txt", tmp_path / "models"
    write_corpus(corpus)
    main(small_args(corpus, out, "ar"))
    ar, tok = load_twin("ar", out)
    rng = np.random.default_rng(0)
    stream, starts, orders = [], [], []
    for text in ["Tom had a ball. Tom was happy.", "Sue had a cake. Sue was glad.", "Ben lost the dog."] * 4:
        ids = tok.encode(text)
        starts.append(len(stream))
        stream += ids + [ar.eos_id]
        orders += [PROMPT] * 2 + (1 + rng.permutation(len(ids) - 2)).tolist() + [NEVER]
    kd = tmp_path / "own.npz"
    save_stream(kd, stream, starts, {"stories": len(starts)}, orders)
    stats = main(small_args(corpus, out, "diffusion", "--init-from", str(out / "ar_fork.safetensors"),
                            "--kd-data", str(kd), "--first-token", "0", "--tokens", str(8 * 49 * 10),
                            "--order-frac", "1.0"))
    assert "laid out as a state of the decode" in stats["objective"]
    assert all(np.isfinite(p["loss"]) for p in stats["loss_curve"])
    assert isinstance(load_twin("diffusion", out)[0], MaskedDiffusionLM)


def test_the_uniform_twin_trains_on_random_token_noise_and_loads(tmp_path) -> None:
    corpus, out = tmp_path / "stories.txt", tmp_path / "models"
    write_corpus(corpus)
    stats = main(small_args(corpus, out, "uniform", "--block-frac", "0.5", "--prefix-frac", "0.5"))
    curve = stats["loss_curve"]
    assert mean(curve[-8:], "masked_ce") < mean(curve[:8], "masked_ce") - 0.5
    assert "uniform-state" in stats["objective"] and "noised_ce@t=0.5" in stats["held_out"]
    saved = json.loads((out / "uniform.json").read_text())
    assert saved["config"]["causal"] is False and saved["config"]["noise"] == "uniform"
    model, _ = load_twin("uniform", out)
    assert isinstance(model, MaskedDiffusionLM)


def test_uniform_noise_draws_only_ordinary_tokens_and_keeps_the_prefix_clean() -> None:
    import torch

    from app.training.losses import uniform_loss
    from app.training.model import TorchTransformer

    seen: list = []

    class Spy(TorchTransformer):
        def forward(self, ids, causal):
            seen.append(ids.clone())
            return super().forward(ids, causal)

    model = Spy(50, 1, 2, 16, 40)
    x = torch.zeros(64, 40, dtype=torch.long)  # all end-of-text: every noised position shows as non-zero
    gen = torch.Generator().manual_seed(0)
    uniform_loss(model, x, 3, gen, t=torch.full((64,), 0.5), block_frac=0.5)
    noisy = seen[-1]
    assert (noisy[:, 0] == 0).all() and ((noisy == 0) | (noisy >= 3)).all()
    assert 0.3 < (noisy[:, 1:] != 0).float().mean() < 0.9
    uniform_loss(model, x, 3, gen, t=torch.full((64,), 1.0))
    assert (seen[-1][:, 1:] >= 3).all()  # at t = 1 every position after the first is noise


def test_a_checkpoint_loads_into_a_fresh_state_that_steps_on_as_if_never_stopped(tmp_path) -> None:
    import dataclasses

    import torch

    from app.training.config import TrainConfig
    from app.training.loop import Run, load_state, new_state, save_state, step

    cfg = TrainConfig(twin="diffusion", corpus=(), n_layer=1, n_head=2, n_embd=16, seq=12, no_bf16=True, seed=3)
    run = Run(cfg=cfg, device=torch.device("cpu"), tokens=np.zeros(1), starts=np.zeros(1), orders=None,
              val=torch.zeros(0), data={}, config={"vocab_size": 40, "mask_id": 1}, per_step=48, first_step=0,
              total_steps=2, fork=1, lr=1e-3)
    x = torch.randint(3, 40, (4, 12), generator=torch.Generator().manual_seed(0))
    torch.manual_seed(cfg.seed)
    whole = new_state(run)
    unbroken = [step(whole, run, (x, None), 1e-3)[0].item() for _ in range(2)]  # dropout and masks draw each step

    torch.manual_seed(cfg.seed)
    first = new_state(run)
    step(first, run, (x, None), 1e-3)
    first.curve.append({"step": 1})
    first.done_steps = 1
    save_state(first, tmp_path / "ckpt.pt")
    assert set(torch.load(tmp_path / "ckpt.pt", weights_only=False)) == {f.name for f in dataclasses.fields(first)}

    torch.manual_seed(99)  # other weights and another dropout generator: the checkpoint must put back every part
    resumed = new_state(run)
    load_state(resumed, tmp_path / "ckpt.pt")
    assert resumed.done_steps == 1 and resumed.curve == [{"step": 1}]
    assert step(resumed, run, (x, None), 1e-3)[0].item() == unbroken[1]
    for a, b in zip(resumed.model.parameters(), whole.model.parameters()):
        assert torch.equal(a, b)
