"""LLaDA2.x (inclusionAI's mixture-of-experts block diffusion; 2.1 also edits tokens it already wrote), run by
diffusers' `LLaDA2Pipeline`, each refinement pass a diffusion `Step` (needs torch, transformers and diffusers, imported
only when a run starts).

Driven as published, the pipeline does not decode as the model's own `generate()` (its authors' sampler), in three
ways this module mends without touching the pipeline's loop:

- the pipeline hands the model a 2D attention mask, which LLaDA2's code turns into full attention over the window,
  while its `generate()` attends block-causally (a block sees itself and the blocks before it): `block_causal` wraps
  the model so it gets the mask `generate()` builds;
- a block stops when its pass budget is spent even if the pass that filled its last mask edited tokens, and runs one
  editing pass more than `generate()` at the cap: `AuthorsScheduler` decides when a block is done as `generate()` does;
- the pipeline counts its passes per block, Converge's `steps` over the whole answer: `run` passes the answer's steps
  per block, so the even schedule spreads a block over them as LLaDA2.0's `generate()` does; at one step a token (the
  answer length, the default) it commits one token a pass, as 2.1's `generate()` does with editing on.

Of Converge's diffusion settings the pipeline takes only `TAKES`; `PipelineSettings` declares what it takes beyond
them. app/sources/hf.py declares that pair as the LLaDA2.x backend, so the page, the CLI and the recording offer,
accept and keep nothing else (its own `minimal_topk` only caps the passes, which `steps` sets, and its
`sampling_method` "auto" follows the temperature: neither is offered).

Started from a draft (issue 53, app/engine/draft.py), each block's window starts as the draft with masks at the
re-noised positions (and past the draft), so the pipeline fills those masks and, with editing on, may rewrite a
draft token by its own rule. LLaDA2Pipeline's one per-pass hook, its callback's `block_x`, runs after a pass: a
draft written there would come a pass late (the block's first pass reading it all masked, and an end-of-text that
pass wrote ending the run). The draft is written instead into the window the pipeline hands its model, before the
block's first pass (`block_causal`'s `seed`): that window is the pipeline's own tensor, so its scheduler, its
end-of-text check and its callback all read the draft. The pipeline decides whether masks remain before that pass,
so a block the draft fills with nothing re-noised gets one pass it counts as filling. `surprisal` reads how unlikely
the model finds each draft token (`unsure`) from one plain forward pass, counted in the run's `nfe`.

tests/test_llada2.py checks, on a tiny LLaDA2.1 built from its own code, that the answers agree token for token,
with edits, at temperature 0.
"""

from __future__ import annotations

import queue
import threading
from dataclasses import asdict, dataclass
from typing import Any, Iterator, Sequence

import numpy as np

from app.engine.diffusion import DiffusionSettings, Step
from app.engine.options import check, option
from app.errors import UserError
from app.hf.relay import Stopped, relay

MODEL_TYPES = ("llada2_moe", "llada21_moe")  # inclusionAI's name; dllm's copy of the 2.1 code renames it
MASK_ID = 156895  # LLaDA2.x's mask id (its generate()'s default), for a tokenizer that names no mask token


# the diffusion settings (app/engine/diffusion.py) LLaDA2Pipeline takes: gen_length, block_length, steps (as
# num_inference_steps per block), temperature, top_k, threshold (off: 1.0), stop_at_eos (eos_early_stop), seed
TAKES = ("gen_length", "steps", "block_length", "temperature", "top_k", "threshold", "stop_at_eos", "seed")


@dataclass
class PipelineSettings:
    """What LLaDA2Pipeline takes beyond the diffusion settings it shares (`TAKES`): nucleus sampling and LLaDA2.1's
    token editing (off runs LLaDA2.0's sampler)."""

    top_p: float = option(1.0, "Top-p (LLaDA2.x)", min=0.05, max=1.0, step=0.05,
                          help="Above temperature 0, sample among the fewest tokens whose probability reaches p "
                               "(1: all of them).")

    editing_threshold: float | None = option(
        None, "Token editing threshold (LLaDA2.x)", min=0.0, max=1.0, step=0.05, off=True,
        help="LLaDA2.1 rewrites a token it already wrote when it is at least this sure of another (its own default "
             "is 0.9); off: never (LLaDA2.0).")
    max_post_steps: int = option(16, "Editing passes after a block is filled (LLaDA2.x)", min=1, max=64, step=1,
                                 help="At most this many passes over a filled block that only edit (LLaDA2.1: 16).")

    def validate(self) -> "PipelineSettings":
        """Checks each setting against its declaration."""
        check(self)
        return self

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def is_llada2(model: Any) -> bool:
    """Whether a loaded transformers model is LLaDA2.x's (by its config's model type)."""
    return str(getattr(getattr(model, "config", None), "model_type", "")).lower() in MODEL_TYPES


def _diffusers() -> Any:
    """The diffusers module, or a UserError that says what to install."""
    try:
        import diffusers
    except ImportError:
        raise UserError("LLaDA2 models run through diffusers' LLaDA2Pipeline: pip install diffusers.") from None
    if not hasattr(diffusers, "LLaDA2Pipeline"):
        raise UserError(f"diffusers {diffusers.__version__} has no LLaDA2Pipeline: pip install -U diffusers.")
    return diffusers


def block_causal(model: Any, block_length: int, seed: dict[int, int] | None = None) -> Any:
    """`model` behind a module that replaces the pipeline's 2D attention mask with the block-causal mask LLaDA2's
    own generate() builds (0 where a block sees a position, -inf elsewhere, in the model's dtype). `seed` ({sequence
    position: token}, a draft's kept tokens): written into the window the pipeline hands the model, in place, on
    the first pass over each block, before the model reads it."""
    import torch

    seeded: set[int] = set()  # the windows (by their end) already given their draft

    class BlockCausal(torch.nn.Module):
        """LLaDA2 seen through its own generate()'s attention mask."""

        def __init__(self) -> None:
            super().__init__()
            self.inner = model

        @property
        def device(self) -> Any:
            return self.inner.device

        @property
        def dtype(self) -> Any:
            return self.inner.dtype

        def forward(self, input_ids: Any, attention_mask: Any = None, position_ids: Any = None) -> Any:
            end = input_ids.shape[1]
            if seed and end not in seeded:
                seeded.add(end)
                for i in range(end - block_length, end):
                    if i in seed:
                        input_ids[:, i] = seed[i]
            blocks = input_ids.shape[1] // block_length
            seen = torch.tril(torch.ones(blocks, blocks, device=input_ids.device))
            seen = seen.repeat_interleave(block_length, 0).repeat_interleave(block_length, 1)[None, None]
            return self.inner(input_ids, attention_mask=seen.log().to(self.inner.dtype), position_ids=position_ids)

    return BlockCausal()


def surprisal(model: Any, mask_id: int, prompt_ids: list[int], draft: Sequence[int],
              s: DiffusionSettings) -> tuple[np.ndarray, int]:
    """Each draft token's surprisal (-log p, nats: app/engine/draft.py's `unsure` measure) from one plain forward pass
    of the model over the prompt and the draft, laid out as the pipeline lays out its sequence (whole blocks, masks
    past the draft) and attending block-causally as the run does; and the network calls it cost (1), for `nfe`."""
    import torch

    n, length, p = min(len(draft), s.gen_length), s.block_length, len(prompt_ids)
    total = (p + s.gen_length + length - 1) // length * length
    x = torch.full((1, total), mask_id, dtype=torch.long)
    x[0, :p] = torch.tensor(prompt_ids, dtype=torch.long)
    x[0, p:p + n] = torch.tensor([int(t) for t in draft[:n]], dtype=torch.long)
    with torch.inference_mode():
        x = x.to(model.device)
        logits = block_causal(model, length)(x, position_ids=torch.arange(total, device=x.device)[None]).logits
    log_p = torch.log_softmax(logits[0, p:p + n].float(), dim=-1).cpu()
    return (-log_p[torch.arange(n), x[0, p:p + n].cpu()]).numpy().astype(np.float64), 1


def authors_scheduler(diffusers: Any) -> Any:
    """A BlockRefinementScheduler that ends a block when LLaDA2.1's generate() does: after a pass that found no mask
    and edited nothing, or before a pass beyond `max_post_steps` over a filled block; never for the pass budget."""

    class AuthorsScheduler(diffusers.BlockRefinementScheduler):
        def check_block_should_continue(self, step_idx: int, masks_remaining: bool, editing_enabled: bool,
                                        editing_transfer_index: Any, post_steps: int, max_post_steps: int,
                                        finished: Any) -> bool:
            if finished.all():
                return False
            if not masks_remaining and not editing_transfer_index.any():
                return False
            return post_steps + (0 if masks_remaining else 1) <= max_post_steps

    return AuthorsScheduler()


# long: the pipeline's per-pass callback and its worker thread are closures over this run's answer, confidences,
# queue and stop flag, which the generator owns so that it can stop the worker when its reader stops
def run(model: Any, mask_id: int, eos_id: int, prompt_ids: list[int], s: DiffusionSettings, e: PipelineSettings,
        cancel: threading.Event | None = None, draft: Sequence[int] = (), renoised: Sequence[int] = (),
        spent: int = 0) -> Iterator[Step]:
    """LLaDA2.x's block diffusion on `prompt_ids`: an all-masked first Step (given a `draft`, token ids, the draft
    with masks at its `renoised` answer positions and past it), one per pass of the pipeline as it happens
    (answer-relative positions; `committed` lists the masks filled, an edited token simply changes), then the last
    pass's again, done. `spent`: network calls made for this run before it (`surprisal`'s), counted in `nfe`.
    Stops at the next pass once `cancel` is set or the caller stops reading.

    Blocks are aligned to the whole sequence, prompt included, as LLaDA2's sampler aligns them; each gets `steps` x
    block length / answer length passes (one a token at the default steps). Of `s` only the settings in `TAKES`
    are read."""
    import torch

    d = _diffusers()
    n, length = s.gen_length, s.block_length
    answer = np.full(n, mask_id, dtype=np.int64)
    gone = set(renoised)
    kept = {i: int(t) for i, t in enumerate(draft[:n]) if i not in gone}
    answer[list(kept)] = list(kept.values())
    confidence = np.zeros(n, dtype=np.float32)
    out: queue.Queue = queue.Queue()
    p = len(prompt_ids)
    passes = max(1, min(length, round(s.steps * length / n)))
    stop = threading.Event()  # set when the run is cancelled or its consumer stops reading

    def on_pass(pipe: Any, index: int, _t: int, kw: dict[str, Any]) -> dict[str, Any]:
        if stop.is_set():
            raise Stopped
        window = kw["block_x"][0].tolist()
        start = len(window) - length
        lo, hi = max(start, p), min(len(window), p + n)
        written = kw["transfer_index"][0].tolist()
        probs = kw["sampled_probs"][0].float().tolist()
        committed = [i - p for i in range(lo, hi) if written[i - start]]
        for i in range(lo, hi):
            if window[i] != answer[i - p]:
                confidence[i - p] = probs[i - start]
            answer[i - p] = window[i]
        out.put(Step(step=index + 1, ids=answer.copy(), masked=answer == mask_id, confidence=confidence.copy(),
                     committed=committed, nfe=spent + index + 1))
        return {}

    def work() -> None:
        try:
            seed = {p + i: t for i, t in kept.items()}
            pipe = d.LLaDA2Pipeline(model=block_causal(model, length, seed), scheduler=authors_scheduler(d),
                                    tokenizer=None)
            pipe.set_progress_bar_config(disable=True)
            with torch.inference_mode():
                pipe(input_ids=torch.tensor([prompt_ids], dtype=torch.long), use_chat_template=False, gen_length=n,
                     block_length=length, num_inference_steps=passes, temperature=s.temperature,
                     top_k=s.top_k or None, top_p=e.top_p if e.top_p < 1 else None,
                     sampling_method="auto", threshold=s.threshold if s.threshold is not None
                     else 1.0, editing_threshold=e.editing_threshold, max_post_steps=e.max_post_steps,
                     eos_early_stop=s.stop_at_eos, eos_token_id=eos_id, mask_token_id=mask_id, output_type="seq",
                     generator=torch.Generator().manual_seed(s.seed), callback_on_step_end=on_pass,
                     callback_on_step_end_tensor_inputs=["block_x", "transfer_index", "sampled_probs"])
            out.put(None)
        except BaseException as err:  # handed to the consumer, which raises it on its own thread
            out.put(err)

    worker = threading.Thread(target=work, name="llada2-pipeline", daemon=True)
    last = Step(step=0, ids=answer.copy(), masked=answer == mask_id, confidence=confidence.copy(), nfe=spent)
    try:
        yield last
        for last in relay(worker, out, cancel, "LLaDA2's pipeline"):
            yield last
        if cancel is not None and cancel.is_set():
            return
        yield Step(step=last.step + 1, ids=last.ids, masked=last.masked, confidence=last.confidence, nfe=last.nfe,
                   done=True)
    finally:
        stop.set()
