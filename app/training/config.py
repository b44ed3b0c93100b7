"""Every flag of `python -m app.training.train`, declared once as the fields of `TrainConfig`."""

from __future__ import annotations

from dataclasses import MISSING, dataclass
from pathlib import Path

from app.engine.options import option
from app.training.stories import SPLIT_SEED

DEFAULT_OUT = Path(__file__).resolve().parents[2] / "assets" / "models"


@dataclass(frozen=True)
class TrainConfig:
    """Every flag of `python -m app.training.train`, declared once (name, type, default, help); the parser is derived
    from the declaration (`parse_config`), so a flag and its field cannot disagree."""

    twin: str = option(MISSING, "Twin", choices=("ar", "diffusion", "uniform"), help="which twin to train")
    corpus: tuple[str, ...] = option(MISSING, "Corpus", help="plain-text files of stories")
    out: str = option(str(DEFAULT_OUT), "Output folder", help="folder for weights, config and tokenizer")
    tokens: int = option(2_000_000, "Token budget", help="total token budget N (AR trains N; diffusion trains from "
                         "the fork to N)")
    fork_at: int | None = option(None, "Fork", help="tokens into the run where the AR twin saves the checkpoint the "
                                 "diffusion twin starts from, and where the diffusion run starts (default N/2)")
    init_from: str | None = option(None, "Initial weights", help="weights (safetensors) to start from: for "
                                   "diffusion, the AR checkpoint at the fork (ar_fork.safetensors), or a checkpoint "
                                   "to continue")
    first_token: int | None = option(None, "First token", help="where in the data order this run starts (default 0 "
                                     "for AR, the fork for diffusion)")
    batch: int = option(16, "Batch", help="windows per step")
    seq: int = option(321, "Window", help="positions per window, including the leading end-of-text token")
    n_layer: int = option(4, "Layers")
    n_head: int = option(4, "Heads")
    n_embd: int = option(256, "Width")
    vocab: int = option(4096, "Vocabulary", help="size of the BPE vocabulary trained when --out has no tokenizer")
    lr: float | None = option(None, "Learning rate", help="peak learning rate (default 2e-3 AR, 1e-3 diffusion)")
    seed: int = option(SPLIT_SEED, "Seed", help="the held-out split, the data order, the initialisation and masks")
    threads: int = option(2, "Threads")
    log_every: int = option(10, "Log every", help="steps between points of the loss curve")
    eval_every: int = option(250, "Evaluate every", help="steps between held-out evaluations")
    dropout: float = option(0.1, "Dropout")
    prefix_frac: float = option(0.5, "Clean prefixes", help="diffusion: share of sequences with a clean prefix of "
                                "random length")
    block_frac: float = option(0.0, "Block layouts", help="diffusion: share of sequences laid out as the block "
                               "sampler sees them (clean prefix, one block masked at rate t, everything after masked)")
    clean_weight: float = option(0.1, "Clean weight", help="uniform: weight of the cross-entropy at the positions of "
                                 "the noised region that the draw left clean (noised positions weigh min(1/t, 10))")
    certainty: float = option(0.0, "Certainty forcing", help="diffusion: weight of dParallel's certainty forcing "
                              "(entropy of the sharpened prediction at masked positions the model gets right)")
    order_frac: float = option(0.0, "Trajectory layouts", help="diffusion, with --kd-data from self_distill: share of "
                               "its stories laid out as a state of the decode that wrote them (the trajectory it kept)")
    pad_frac: float = option(0.0, "Padded windows", help="share of windows holding one story then end-of-text padding "
                             "(teaches the twins to end)")
    no_bf16: bool = option(False, "No bfloat16", help="train in float32 instead of bfloat16 autocast")
    val_windows: int = option(64, "Held-out windows", help="held-out windows each evaluation reads")
    kd_data: tuple[str, ...] | None = option(None, "Distilled data", help="train on these token streams (.npz from "
                                             "app.training.distill or self_distill: a teacher's stories, joined in "
                                             "order) instead of the corpus, which still gives the tokenizer and the "
                                             "held-out stories")
    checkpoint_every: int = option(200, "Checkpoint every", help="steps between resumable checkpoints (<twin>.ckpt.pt "
                                   "in --out)")
    pause_after: int | None = option(None, "Pause after", help="save a checkpoint after this many steps of the run "
                                     "and stop without writing the twin (continue later with --resume)")
    resume: bool = option(False, "Resume", help="continue from <twin>.ckpt.pt in --out, as if never stopped")
    finish: bool = option(False, "Finish", help="with --resume: write the twin from the checkpoint as it is (a run "
                          "stopped early: its steps, tokens and seconds are the checkpoint's)")
    augment: int = option(0, "Augmented copies", help="add this many copies of the training stories with their "
                          "names, animals, colours, objects and places swapped consistently (app/training/augment.py)")
    keep_best: bool = option(False, "Keep the best", help="write the weights of the best held-out evaluation, not the "
                             "last (early stopping for a model that starts to memorise)")
    max_minutes: float | None = option(None, "Time limit", help="stop training after this many minutes and write the "
                                       "twin as it is then (its log says how many tokens it saw)")
    device: str = option("cpu", "Device", help="cpu or cuda[:N]: on a GPU, tensors and the generator live there")
