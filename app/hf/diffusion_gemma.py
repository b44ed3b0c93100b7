"""DiffusionGemma (Google's uniform-state block diffusion: each canvas starts as random tokens, each denoising step
accepts the positions whose summed entropy fits a bound and re-noises the rest), run by its own `generate()` in
transformers (`DiffusionGemmaForBlockDiffusion`, no remote code), each denoising step captured as a `GemmaStep`
(needs torch and transformers, imported only when a model loads or a run starts).

Nothing of its sampler is re-implemented. Three observers watch generate() run, none changing what it computes:

- a streamer that takes the logits (`_takes_logits`): generate() hands it each step's temperature-scaled logits, from
  which the draft (their argmax, generate()'s own `argmax_canvas`), the top candidates, their probabilities and each
  position's entropy are read; and each finished canvas, as generate() appended it;
- the sampler `_prepare_sampler` returns, behind a delegating proxy (`_Observed`) that passes every call through and
  keeps what the sampler's own `initialize_canvas`, `accept_canvas` and `renoise_canvas` returned: the random first
  canvas, the positions accepted and the noise the next decoder pass reads. A streamer only sees the draft, so this is
  the one place those exist; wrapping the object generate() already calls is less intrusive than a subclass or a
  patched class, touches this model's run only, and is undone when the run ends;
- forward hooks on the encoder and the decoder, counting every call of the network (`nfe`; the encoder's, over the
  prompt and each committed canvas, also as `refreshes`).

Started from a draft (issue 53, app/engine/draft.py), the first canvas is generate()'s own `decoder_input_ids`: the
draft's tokens, with each re-noised position (and any past the draft) drawn as generate() draws a canvas's random
start, by its sampler's own `initialize_canvas` (uniform over the vocabulary); generate() then accepts and re-noises
by its own rule, a draft token included. Only the first canvas can be seeded so (generate() pops
`decoder_input_ids` once): a draft longer than a canvas is cut to one (`seed_canvas`). `surprisal` reads how unlikely
the model finds each draft token (`unsure`) from one plain forward pass, counted in the run's `nfe`.

generate() runs eagerly (`disable_compile`): a compiled sampler would not call the proxy's Python. Capturing costs a
device-to-host copy of the logits each step, so timings taken this way are labelled as captured (`CAPTURED`);
`python -m app bench --only diffusion-gemma` measures what that costs.
"""

from __future__ import annotations

import queue
import threading
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Iterator, Sequence

import numpy as np

from app.engine.options import check, option
from app.errors import UserError
from app.hf.relay import Stopped, relay

MODEL_TYPES = ("diffusion_gemma",)  # DiffusionGemmaConfig.model_type
CAPTURED = "timed with every step captured"  # what a captured run's timings are, said wherever they are shown
TOP = 3  # candidates kept per position accepted this step, for the token inspector


OWN = "the model's own, from its generation_config"  # what a setting left out runs with, as help and --help say


@dataclass
class GemmaSettings:
    """What DiffusionGemma's generate() takes. A setting left out (None) is the checkpoint's own, as generate() reads
    it from the model's generation config (then transformers' defaults, `DiffusionGemmaGenerationConfig.
    _get_default_generation_params`); `resolve` reads back the values a loaded model runs with. The canvas length is
    the model's (its config's `canvas_length`), shown, not set."""

    max_new_tokens: int | None = option(None, "Answer length (DiffusionGemma: whole canvases)", min=1, max=4096,
                                        step=1, own=True,
                                        help=f"generate() writes this many tokens rounded up to whole canvases; "
                                             f"empty: {OWN}.")
    max_denoising_steps: int | None = option(None, "Denoising steps a canvas, at most (DiffusionGemma)", min=1,
                                             max=512, step=1, own=True,
                                             help=f"Each canvas stops earlier once stable and confident; empty: {OWN}.")
    entropy_bound: float | None = option(None, "Entropy bound (DiffusionGemma)", min=0.001, max=100.0, step=0.01,
                                         own=True,
                                         help="A step accepts the lowest-entropy positions whose summed entropy, less "
                                              f"the largest, stays under this bound; higher accepts more a step; "
                                              f"empty: {OWN}.")
    stability_threshold: int | None = option(None, "Steps the draft must hold to stop (DiffusionGemma)", min=0, max=64,
                                             step=1, own=True,
                                             help="A canvas stops once its draft is unchanged for this many steps and "
                                                  f"confident (0: confidence alone); empty: {OWN}.")
    confidence_threshold: float | None = option(None, "Mean entropy to stop under (DiffusionGemma)", min=1e-6,
                                                max=100.0, step=0.001, own=True,
                                                help="A canvas stops once its mean entropy is under this and its draft "
                                                     f"is stable; empty: {OWN}.")
    t_min: float | None = option(None, "Temperature at the last step (DiffusionGemma)", min=0.01, max=10.0, step=0.05,
                                 own=True, help="The temperature falls linearly from t_max at the first step to this "
                                                f"at the last; empty: {OWN}.")
    t_max: float | None = option(None, "Temperature at the first step (DiffusionGemma)", min=0.01, max=10.0,
                                 step=0.05, own=True, help=f"Empty: {OWN}.")
    seed: int = option(0, "Seed", min=0, max=9999, step=1)  # declared as the diffusion sampler's, as the page shows one

    def validate(self) -> "GemmaSettings":
        """Checks each setting given against its declaration, and that the temperature falls when both are given."""
        check(self)
        if self.t_max is not None and self.t_min is not None and self.t_max <= self.t_min:
            raise UserError(f"DiffusionGemma's temperature at the first step (t_max {self.t_max:g}) must be above the "
                            f"one at the last (t_min {self.t_min:g}): change t_max or t_min.")
        return self

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def generate_kwargs(s: GemmaSettings) -> dict[str, Any]:
    """The keywords of generate() that carry the settings `s` gives (all but the seed, which seeds torch before the
    call); one left out is not passed, so generate() takes the model's own."""
    from transformers import EntropyBoundSamplerConfig

    given = {k: v for k, v in asdict(s).items() if k not in ("seed", "entropy_bound") and v is not None}
    for k in ("confidence_threshold", "t_min", "t_max"):  # generate() checks these are floats
        if k in given:
            given[k] = float(given[k])
    if s.entropy_bound is not None:
        given["sampler_config"] = EntropyBoundSamplerConfig(entropy_bound=float(s.entropy_bound))
    return {**given, "disable_compile": True}


def resolve(model: Any, s: GemmaSettings) -> GemmaSettings:
    """`s` with each setting left out read back from the generation config generate() builds for `model` from them
    (the model's own generation_config, then transformers' defaults): the values a run takes, for its header."""
    config, _ = model._prepare_generation_config(None, **generate_kwargs(s))
    ran = {k: getattr(config, k) for k in asdict(s) if k not in ("seed", "entropy_bound")}
    return replace(s, entropy_bound=float(config.sampler_config.entropy_bound), **ran).validate()


class DiffusionGemmaLM:
    """A loaded DiffusionGemmaForBlockDiffusion, its end-of-text ids and where it runs; `lock` lets one run at a time
    observe it (its hooks and sampler proxy are per model)."""

    def __init__(self, model: Any, eos_ids: list[int], *, runs_on: dict[str, str]) -> None:
        self.model = model
        self.eos_ids = eos_ids
        self.eos_id = eos_ids[0] if eos_ids else -1
        self.canvas_length = int(model.config.canvas_length)
        self.vocab_size = int(model.config.text_config.vocab_size)
        self.placement = runs_on
        self.lock = threading.Lock()


def load(name: str, device: str = "auto", dtype: str = "auto") -> tuple[DiffusionGemmaLM, Any]:
    """A DiffusionGemma checkpoint through transformers' own classes, and its tokenizer; a UserError says why not."""
    from app.hf.models import HFTokenizer, _load, _weights, placement

    runs_on = placement(device, dtype)
    config, tok, tf, local = _load(name, False, runs_on)
    if str(getattr(config, "model_type", "")).lower() not in MODEL_TYPES:
        raise UserError(f"{name} is not a DiffusionGemma model (its config says {config.model_type!r}).")
    model = _weights(tf.DiffusionGemmaForBlockDiffusion, name, False, local, runs_on)
    eos = getattr(model.generation_config, "eos_token_id", None)
    eos = eos if eos is not None else tok.eos_token_id
    eos_ids = [int(i) for i in (eos if isinstance(eos, (list, tuple)) else [eos] if eos is not None else [])]
    return DiffusionGemmaLM(model, eos_ids, runs_on=runs_on), HFTokenizer(tok, None, eos_ids[0] if eos_ids else -1)


def seed_canvas(lm: DiffusionGemmaLM, s: GemmaSettings, draft: Sequence[int], renoised: Sequence[int]) -> Any:
    """The first canvas (1, canvas_length) generate() is given as `decoder_input_ids`: `draft`'s tokens (the first
    canvas's worth), and at each of `renoised` and past the draft the noise generate()'s own sampler draws for a
    canvas's random start (`initialize_canvas`, from torch's global generator: the caller seeds it first)."""
    import torch

    model = lm.model
    config, _ = model._prepare_generation_config(None, **generate_kwargs(s))
    canvas = model._prepare_sampler(config).initialize_canvas(batch_size=1, device=torch.device(lm.placement["device"]))
    kept = [i for i in range(min(len(draft), lm.canvas_length)) if i not in set(renoised)]
    canvas[0, kept] = torch.tensor([int(draft[i]) for i in kept], dtype=canvas.dtype, device=canvas.device)
    return canvas


def surprisal(lm: DiffusionGemmaLM, prompt_ids: list[int], draft: Sequence[int],
              seed: int = 0) -> tuple[np.ndarray, int]:
    """Each draft token's surprisal (-log p, nats: app/engine/draft.py's `unsure` measure) from one plain forward pass
    of the model (its encoder over the prompt, its decoder over the draft's first canvas, laid out as generate() lays
    out a first canvas; past the draft, noise drawn from `seed`), and the network calls it cost (2: the encoder's and
    the decoder's), for the run's `nfe`."""
    import torch

    model, length = lm.model, lm.canvas_length
    n = min(len(draft), length)
    device = torch.device(lm.placement["device"])
    canvas = torch.randint(0, lm.vocab_size, (1, length), generator=torch.Generator().manual_seed(seed)).to(device)
    canvas[0, :n] = torch.tensor([int(t) for t in draft[:n]], dtype=torch.long, device=device)
    p = len(prompt_ids)
    calls = [0]

    def count(*_: Any) -> None:
        calls[0] += 1

    hooks = [model.model.encoder.register_forward_hook(count), model.model.decoder.register_forward_hook(count)]
    try:
        with lm.lock, torch.inference_mode():
            logits = model(input_ids=torch.tensor([prompt_ids], dtype=torch.long, device=device),
                           position_ids=torch.arange(p, device=device)[None], decoder_input_ids=canvas,
                           decoder_position_ids=torch.arange(p, p + length, device=device)[None]).logits[0, :n]
    finally:
        for hook in hooks:
            hook.remove()
    log_p = torch.log_softmax(logits.float(), dim=-1)
    tokens = torch.tensor([int(t) for t in draft[:n]], dtype=torch.long, device=log_p.device)
    return (-log_p[torch.arange(n, device=log_p.device), tokens]).cpu().numpy().astype(np.float64), calls[0]


@dataclass
class GemmaStep:
    """The answer after one event of a run: `ids` are the finished canvases then the current one (accepted tokens and
    the noise the next pass reads), `states` one letter a token (app/trace/frames.py STATES). `candidates` and
    `entropy` are the current canvas's (answer-relative positions); `denoising` is the step within canvas `canvas`
    (0: its random start)."""

    step: int
    ids: np.ndarray
    states: str
    confidence: np.ndarray
    canvas: int
    denoising: int
    nfe: int
    refreshes: int
    committed: list[int] = field(default_factory=list)
    candidates: dict[int, list[tuple[int, float]]] = field(default_factory=dict)
    entropy: np.ndarray | None = None
    done: bool = False


class _Capture:
    """generate()'s streamer (it takes the logits) and the sampler proxy's sink in one: each event becomes a
    GemmaStep on `out`. Runs on generate()'s thread; raises `Stopped` there once `stop` is set."""

    _takes_logits = True

    def __init__(self, lm: DiffusionGemmaLM, out: queue.Queue, stop: threading.Event,
                 spent: int = 0) -> None:
        self.lm, self.out, self.stop = lm, out, stop
        self.calls = {"encoder": 0, "decoder": 0, "before": spent}  # `spent`: calls made for the run before it
        # the first canvas when generate() is given one (`decoder_input_ids`), and which of its positions hold the draft
        self.seed: tuple[np.ndarray, np.ndarray] | None = None
        self.drafted = np.zeros(0, dtype=bool)  # positions of the current canvas showing the draft, not yet read
        self.done: list[np.ndarray] = []  # the finished canvases, as generate() appended them
        self.done_confidence: list[np.ndarray] = []
        self.canvas = np.zeros(0, dtype=np.int64)  # what the next decoder pass reads
        self.accepted = np.zeros(0, dtype=bool)
        self.confidence = np.zeros(0, dtype=np.float32)
        self.mask: Any = None  # the sampler's accepted positions and renoised canvas, this step (device tensors)
        self.noise: Any = None
        self.prompt_seen = False
        self.steps = 0
        self.index = -1
        self.denoising = 0

    def count(self, part: str) -> Any:
        """A forward hook that counts one call of the encoder or the decoder."""
        def hook(*_: Any) -> None:
            self.calls[part] += 1
        return hook

    def _check(self) -> None:
        if self.stop.is_set():
            raise Stopped

    def started(self, canvas: Any) -> None:
        """The sampler drew canvas `index`'s random start: every position is noise; the first canvas, when
        generate() was given one, is that canvas instead (generate() draws a random start all the same, unused),
        its draft positions shown as the draft ("d")."""
        self._check()
        self.index += 1
        self.denoising = 0
        self.canvas = canvas[0].cpu().numpy().astype(np.int64)
        self.drafted = np.zeros(len(self.canvas), dtype=bool)
        if self.index == 0 and self.seed is not None:
            self.canvas, self.drafted = self.seed
        self.accepted = np.zeros(len(self.canvas), dtype=bool)
        self.confidence = np.zeros(len(self.canvas), dtype=np.float32)
        self._emit()

    def put(self, value: Any) -> None:
        """generate()'s prompt (first), then each canvas it appended: all accepted."""
        self._check()
        if not self.prompt_seen:
            self.prompt_seen = True
            return
        self.done.append(value[0].numpy().astype(np.int64))
        self.done_confidence.append(self.confidence)
        self.canvas = np.zeros(0, dtype=np.int64)
        self.accepted = np.zeros(0, dtype=bool)
        self.confidence = np.zeros(0, dtype=np.float32)
        self._emit()

    def put_draft(self, value: Any = None, logits: Any = None) -> None:
        """One denoising step: its logits, beside what the sampler accepted and re-noised in it."""
        import torch

        self._check()
        self.denoising += 1
        canvas = self.noise[0].cpu().numpy().astype(np.int64)
        accepted = self.mask[0].cpu().numpy().astype(bool)
        probs = torch.softmax(logits[0].float(), dim=-1)
        entropy = -(probs * torch.log(probs.clamp_min(1e-30))).sum(-1).numpy()
        top = torch.topk(probs, min(TOP, probs.shape[-1]), dim=-1)
        values, ids = top.values.numpy(), top.indices.numpy()
        new = accepted & (~self.accepted | (canvas != self.canvas))
        offset = sum(len(c) for c in self.done)
        candidates = {offset + int(i): [(int(t), float(p)) for t, p in zip(ids[i], values[i])]
                      for i in np.flatnonzero(new)}
        self.canvas, self.accepted, self.confidence = canvas, accepted, values[:, 0].astype(np.float32)
        self.drafted = np.zeros(len(canvas), dtype=bool)
        self._emit([offset + int(i) for i in np.flatnonzero(new)], candidates, entropy)

    def end(self) -> None:
        """generate() is done; the run's last step comes from what it returned (`final`)."""

    def _emit(self, committed: list[int] | None = None, candidates: dict[int, list[tuple[int, float]]] | None = None,
              entropy: np.ndarray | None = None) -> None:
        ids = np.concatenate([*self.done, self.canvas])
        states = "a" * sum(len(c) for c in self.done) + "".join(
            "a" if a else "d" if d else "n" for a, d in zip(self.accepted, self.drafted))
        self.out.put(GemmaStep(self.steps, ids, states, np.concatenate([*self.done_confidence, self.confidence]),
                               self.index, self.denoising, sum(self.calls.values()), self.calls["encoder"],
                               committed or [], candidates or {}, entropy))
        self.steps += 1

    def final(self, answer: np.ndarray) -> GemmaStep:
        """The run's last step: the answer generate() returned, all accepted."""
        confidence = np.concatenate([*self.done_confidence, np.zeros(0, dtype=np.float32)])[:len(answer)]
        confidence = np.pad(confidence, (0, len(answer) - len(confidence)))
        return GemmaStep(self.steps, answer, "a" * len(answer), confidence, self.index, self.denoising,
                         sum(self.calls.values()), self.calls["encoder"], done=True)


class _Observed:
    """The sampler generate() made, behind a proxy that passes every call through and tells `seen` what its own
    `initialize_canvas`, `accept_canvas` and `renoise_canvas` returned (its renoising calls its own
    initialize_canvas, which this proxy does not see, so only a canvas's random start reaches `started`)."""

    def __init__(self, inner: Any, seen: _Capture) -> None:
        self._inner = inner
        self._seen = seen

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def initialize_canvas(self, *args: Any, **kwargs: Any) -> Any:
        canvas = self._inner.initialize_canvas(*args, **kwargs)
        self._seen.started(canvas)
        return canvas

    def accept_canvas(self, *args: Any, **kwargs: Any) -> Any:
        accepted = self._inner.accept_canvas(*args, **kwargs)
        self._seen.mask = self._inner.accepted_token_mask
        return accepted

    def renoise_canvas(self, *args: Any, **kwargs: Any) -> Any:
        canvas = self._inner.renoise_canvas(*args, **kwargs)
        self._seen.noise = canvas
        return canvas


def _generate(lm: DiffusionGemmaLM, prompt_ids: list[int], s: GemmaSettings, cap: _Capture,
              draft: Sequence[int] = (), renoised: Sequence[int] = ()) -> np.ndarray:
    """Runs generate() once with `cap` watching (its hooks and sampler proxy removed after), given the first canvas
    `seed_canvas` makes of a non-empty `draft`; the answer it returned, prompt excluded."""
    import torch

    model = lm.model
    torch.manual_seed(s.seed)
    kwargs = generate_kwargs(s)
    if len(draft):
        canvas = seed_canvas(lm, s, draft, renoised)
        drafted = np.zeros(lm.canvas_length, dtype=bool)
        drafted[[i for i in range(min(len(draft), lm.canvas_length)) if i not in set(renoised)]] = True
        cap.seed = (canvas[0].cpu().numpy().astype(np.int64), drafted)
        kwargs["decoder_input_ids"] = canvas
    prepare = model._prepare_sampler
    model._prepare_sampler = lambda config: _Observed(prepare(config), cap)
    hooks = [model.model.encoder.register_forward_hook(cap.count("encoder")),
             model.model.decoder.register_forward_hook(cap.count("decoder"))]
    try:
        ids = torch.tensor([prompt_ids], dtype=torch.long, device=lm.placement["device"])
        out = model.generate(ids, streamer=cap, **kwargs)
    finally:
        for hook in hooks:
            hook.remove()
        del model._prepare_sampler
    sequences = out.sequences if hasattr(out, "sequences") else out
    return sequences[0, len(prompt_ids):].cpu().numpy().astype(np.int64)


def run(lm: DiffusionGemmaLM, prompt_ids: list[int], s: GemmaSettings, cancel: threading.Event | None = None,
        draft: Sequence[int] = (), renoised: Sequence[int] = (),
        spent: int = 0) -> Iterator[GemmaStep]:
    """DiffusionGemma's generate() on `prompt_ids` at `s`, seeded with `torch.manual_seed(s.seed)`: a step for each
    canvas's random start, each denoising step and each canvas appended, as they happen, then the answer generate()
    returned, done. Given a `draft` (token ids) and the answer positions of it to re-noise, the first canvas starts
    from it (`seed_canvas`); `spent`: network calls made for this run before it (`surprisal`'s), counted in `nfe`.
    Stops at the next step once `cancel` is set or the caller stops reading."""
    if not prompt_ids:
        raise UserError("The prompt is empty: type a prompt.")
    out: queue.Queue = queue.Queue()
    stop = threading.Event()
    cap = _Capture(lm, out, stop, spent)

    def work() -> None:
        try:
            with lm.lock:
                answer = _generate(lm, prompt_ids, s, cap, draft, renoised)
            out.put(cap.final(answer))
            out.put(None)
        except BaseException as err:  # handed to the consumer, which raises it on its own thread
            out.put(err)

    worker = threading.Thread(target=work, name="diffusion-gemma-generate", daemon=True)
    try:
        yield from relay(worker, out, cancel, "DiffusionGemma's generate()")
    finally:
        stop.set()
