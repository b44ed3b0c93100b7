"""`local-diffusion` / `local-uniform` / `local-ar`: frames from the samplers, settings from the UI, errors, and the
shipped twins."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

from app.engine.autoregressive import ARSettings
from app.engine.base import MaskedLMBase
from app.engine.diffusion import DiffusionSettings
from app.engine.model import ModelConfig, random_model
from app.engine.options import coerce, declared
from app.engine.uniform import UniformSettings
from app.errors import UserError
from app.sources import local
from app.sources.base import REGISTRY, load_plugins, make_source
from app.trace.frames import Frame
from tests.fixtures import needs_twins

MODELS = Path(__file__).resolve().parent.parent / "assets" / "models"
TOKENIZER = MODELS / "tokenizer.json"
UI_KEYS = {"default", "label", "choices", "min", "max", "step", "info", "own"}  # own: a number box left empty


@pytest.fixture(scope="module")
def tok():
    if not TOKENIZER.is_file():
        pytest.skip("assets/models/tokenizer.json is absent")
    from app.engine.tokenizer import BPETokenizer

    return BPETokenizer(TOKENIZER)


def tiny(tok, causal: bool, eos_id: int | None = None):
    cfg = ModelConfig(vocab_size=tok.vocab_size, n_layer=2, n_head=2, n_embd=32, max_len=129, causal=causal,
                      mask_id=tok.mask_id, eos_id=tok.eos_id if eos_id is None else eos_id, pad_id=tok.pad_id)
    return random_model(cfg, seed=0)


def source(tok, model, settings) -> local.SamplerSource:
    name = "local-diffusion" if isinstance(settings, DiffusionSettings) else "local-ar"
    return local.SamplerSource(name, lambda: (model, tok), settings, local._plain_prompt)


def roundtrip(frames: list[Frame]) -> None:
    """Every frame survives the recording format, and time never runs backwards."""
    for f in frames:
        assert Frame.from_json(f.to_json()) == f
    assert all(a.t <= b.t for a, b in zip(frames, frames[1:]))


def test_diffusion_frames_show_the_answer_region_step_by_step(tok) -> None:
    s = DiffusionSettings(gen_length=32, steps=16, block_length=8, threshold=None, stop_at_eos=False)
    src = source(tok, tiny(tok, causal=False), s)
    frames = list(src.stream("Once upon a time", threading.Event()))
    roundtrip(frames)
    first, last = frames[0], frames[-1]
    assert first.step == 0 and first.nfe == 0 and first.tokens == [""] * 32 and all(first.masked)
    assert len(frames) == 17 and last.final and last.nfe == 16 and not any(f.final for f in frames[:-1])
    for f in frames[:-1]:
        assert len(f.tokens) == len(f.masked) == len(f.confidence) == 32
        assert all((tokens == "") >= masked for tokens, masked in zip(f.tokens, f.masked))
    for before, after in zip(frames, frames[1:-1]):
        assert after.committed and all(before.masked[i] and not after.masked[i] for i in after.committed)
    assert last.text == "".join(last.tokens).replace(local.EOS_MARK, "")
    assert src.settings()["gen_length"] == 32


class LikesToEnd(MaskedLMBase):
    """A random diffusion model whose end-of-text logit is raised from answer position `at` on, so it floods."""

    def __init__(self, model, prompt_len: int, at: int = 12) -> None:
        self.model, self.cut = model, prompt_len + at
        self.vocab_size, self.mask_id, self.eos_id, self.max_len = (model.vocab_size, model.mask_id, model.eos_id,
                                                                    model.max_len)

    def logits(self, ids, cache=None, start=0):
        out = self.model.logits(ids, cache, start).copy()
        out[max(0, self.cut - start):, self.eos_id] += 20.0
        return out

    caches = True  # the real model's cache, passed through
    exact_prefix = True  # it passes `upto` on to the real model's cache

    def prefix_cache(self, ids, upto=None):
        return self.model.prefix_cache(ids, upto)


def test_eos_flooding_is_visible_then_the_final_frame_is_cut_at_end_of_text(tok) -> None:
    prompt = "Once upon a time"
    model = LikesToEnd(tiny(tok, causal=False), len(tok.encode(prompt)))
    s = DiffusionSettings(gen_length=32, steps=32, block_length=32, threshold=None, stop_at_eos=False)
    frames = list(source(tok, model, s).stream(prompt, threading.Event()))
    flooded = [f.tokens.count(local.EOS_MARK) for f in frames[:-1]]
    assert flooded[20] == 20 and flooded[-1] == 20  # the right end fills with end-of-text first
    assert all(f.masked[:12] == [True] * 12 for f in frames[:21])
    last = frames[-1]
    assert local.EOS_MARK not in last.tokens and len(last.tokens) == 12 and not any(last.masked)
    assert last.usage["completion_tokens"] == len(last.tokens)
    stopped = list(source(tok, model, DiffusionSettings(gen_length=32, steps=32, block_length=8, threshold=None))
                   .stream("Once upon a time", threading.Event()))
    assert stopped[-1].nfe < 32 and stopped[-1].final


def test_ar_frames_grow_one_token_at_a_time(tok) -> None:
    src = source(tok, tiny(tok, causal=True), ARSettings(gen_length=10, stop_at_eos=False))
    frames = list(src.stream("Once upon a time", threading.Event()))
    roundtrip(frames)
    assert [len(f.tokens) for f in frames] == list(range(1, 11))
    assert [f.nfe for f in frames] == list(range(1, 11)) and [f.committed for f in frames] == [[i] for i in range(10)]
    assert frames[-1].final and frames[-1].text == "".join(frames[-1].tokens)
    assert all(f.masked is None and len(f.confidence) == len(f.tokens) for f in frames)


def test_uniform_frames_start_as_noise_and_accept_positions_until_the_answer(tok) -> None:
    """local-uniform: the first frame is the whole canvas as noise, each later one a call of the network that
    accepts at least one position, which stays accepted with its token; the final frame is the answer as decoded."""
    from app.engine import uniform

    model, s = tiny(tok, causal=False), UniformSettings(gen_length=16, steps=16, block_length=8, stop_at_eos=False)
    src = local.SamplerSource("local-uniform", lambda: (model, tok), s, local._plain_prompt)
    frames = list(src.stream("Once upon a time", threading.Event()))
    roundtrip(frames)
    assert frames[0].states == "n" * 16 and frames[0].nfe == 0 and len(frames[0].tokens) == 16
    assert [f.nfe for f in frames] == list(range(len(frames)))
    for a, b in zip(frames, frames[1:-1]):
        kept = [i for i, c in enumerate(a.states) if c == "a"]
        assert b.states.count("a") > a.states.count("a") and all(b.states[i] == "a" for i in kept)
        whole = [i for i in kept if "\ufffd" not in a.tokens[i] + b.tokens[i] and a.tokens[i] and b.tokens[i]]
        assert [b.tokens[i] for i in whole] == [a.tokens[i] for i in whole]  # a byte piece reads as its neighbours do
        assert sorted(b.committed) == [i for i, c in enumerate(b.states) if c == "a" and a.states[i] == "n"]
    last = uniform.decode(model, local._plain_prompt(tok, "Once upon a time"), s)
    answer = uniform.answer(last, tok.eos_id)
    assert frames[-1].final and frames[-1].text == tok.decode(answer.tolist())
    assert frames[-1].states == "a" * len(answer)


def test_uniform_frames_carry_each_predicted_positions_entropy_and_the_accepted_ones_candidates(tok) -> None:
    """local-uniform: a pass's frame gives the entropy of every position it predicted (the block's open ones, null
    elsewhere) and the top candidates of those it accepted, the chosen token's probability among them."""
    from app.engine import uniform

    model, s = tiny(tok, causal=False), UniformSettings(gen_length=16, steps=16, block_length=8, stop_at_eos=False)
    src = local.SamplerSource("local-uniform", lambda: (model, tok), s, local._plain_prompt)
    frames = list(src.stream("Once upon a time", threading.Event()))
    steps = list(uniform.generate(model, local._plain_prompt(tok, "Once upon a time"), s))
    assert frames[0].entropy is None and frames[0].candidates is None  # the random start predicted nothing
    for f, st in zip(frames[1:-1], steps[1:-1]):
        assert len(f.entropy) == len(f.tokens)
        assert [e is not None for e in f.entropy] == np.isfinite(st.entropy).tolist()
        assert all(e >= 0 for e in f.entropy if e is not None)
        assert [pos for pos, _ in f.candidates] == sorted(f.committed)
        for pos, cands in f.candidates:
            probs = [p for _, p in cands]
            assert probs == sorted(probs, reverse=True) and len(cands) <= 3 and f.entropy[pos] is not None
    assert len(frames[-1].entropy) == len(frames[-1].tokens)


def test_cancel_stops_the_stream(tok) -> None:
    cancel = threading.Event()
    s = DiffusionSettings(gen_length=32, steps=32, block_length=8, threshold=None, stop_at_eos=False)
    src = source(tok, tiny(tok, causal=False), s)
    got = []
    for f in src.stream("Once upon a time", cancel):
        got.append(f)
        if len(got) == 3:
            cancel.set()
    assert len(got) == 3 and not got[-1].final


def test_settings_from_the_ui_are_coerced_and_checked() -> None:
    s = coerce(DiffusionSettings, {"gen_length": 64.0, "steps": "32", "threshold": 0, "factor": "off",
                                         "block_length": 256, "stop_at_eos": "false"}, "local-diffusion")
    assert ((s.gen_length, s.steps, s.threshold, s.factor, s.block_length, s.stop_at_eos)
            == (64, 32, None, None, 64, False))
    assert coerce(DiffusionSettings, {"gen_length": 32}, "local-diffusion").steps <= 32
    assert coerce(DiffusionSettings, {"factor": 1.0}, "local-diffusion").threshold is None
    untouched = {"factor": 1.0, "threshold": 0.9}  # the page passes the threshold it shows
    assert coerce(DiffusionSettings, untouched, "local-diffusion").threshold is None
    assert coerce(DiffusionSettings, {"gen_length": 64, "steps": 0}, "local-diffusion").steps == 64  # the page's 0
    with pytest.raises(UserError, match="not both"):
        coerce(DiffusionSettings, {"factor": 1.0, "threshold": 0.8}, "local-diffusion")
    with pytest.raises(UserError, match="no setting 'top_p'"):
        coerce(DiffusionSettings, {"top_p": 0.5}, "local-diffusion")
    with pytest.raises(UserError, match="whole number"):
        coerce(ARSettings, {"gen_length": "lots"}, "local-ar")
    with pytest.raises(UserError, match="does not divide"):
        coerce(DiffusionSettings, {"gen_length": 64, "block_length": 24}, "local-diffusion")


def test_registered_settings_use_only_the_keys_the_ui_renders_and_their_defaults_are_valid() -> None:
    from app.sources.hf import LOAD_OPTIONS

    load_plugins()
    for prefix, cls in (("local-diffusion", DiffusionSettings), ("local-ar", ARSettings),
                        ("hf-diffusion", DiffusionSettings), ("hf-ar", ARSettings)):
        spec = REGISTRY[prefix].settings
        assert all(set(entry) <= UI_KEYS and "default" in entry and "label" in entry for entry in spec.values())
        sampler = {k: v["default"] for k, v in spec.items() if k not in LOAD_OPTIONS}
        for declared_in in REGISTRY[prefix].defaults[1:]:  # settings declared beside the sampler's (LLaDA2's)
            own = {k: sampler.pop(k) for k in declared(type(declared_in)) if k in sampler}
            coerce(type(declared_in), own, prefix)
        coerce(cls, sampler, prefix)
        for entry in spec.values():
            if "choices" in entry:
                assert entry["default"] in entry["choices"]
            elif entry.get("own") and entry["default"] is None:  # left empty: the model's own value
                assert entry["min"] <= entry["max"]
            else:
                assert entry["min"] <= entry["default"] <= entry["max"]


def test_missing_or_corrupt_twin_files_give_one_sentence(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="missing") as err:
        local.twin("diffusion", str(tmp_path))
    assert "\n" not in str(err.value)
    if TOKENIZER.is_file():
        (tmp_path / "tokenizer.json").write_bytes(TOKENIZER.read_bytes())
        (tmp_path / "ar.json").write_text('{"config": {}}')
        (tmp_path / "ar.safetensors").write_bytes(b"\x00" * 64)
        with pytest.raises(UserError, match="corrupt"):
            local.twin("ar", str(tmp_path))


@needs_twins
def test_the_shipped_twins_tell_a_story_with_their_default_settings() -> None:
    words = {"the", "a", "was", "and", "to", "he", "she", "they", "it", "day", "happy", "play"}
    for name in ("local-diffusion", "local-ar"):
        frames = list(make_source(name).stream("Once upon a time, there was a little", threading.Event()))
        text = frames[-1].text
        assert frames[-1].final and len(text.split()) >= 10, (name, text)
        assert len(words & set(text.lower().replace(".", " ").replace(",", " ").split())) >= 3, (name, text)
    with pytest.raises(UserError, match="shorten the prompt"):
        list(make_source("local-ar", gen_length=256).stream("word " * 400, threading.Event()))
    with pytest.raises(UserError, match="empty"):
        list(make_source("local-diffusion").stream("   ", threading.Event()))


def test_the_frames_report_every_call_of_the_network_as_a_pass_and_count_the_refreshes(tok) -> None:
    from tests.test_samplers import network_calls

    model = tiny(tok, causal=False)
    s = DiffusionSettings(gen_length=32, steps=16, block_length=8, threshold=None, stop_at_eos=False)
    with network_calls(model) as calls:
        frames = list(source(tok, model, s).stream("Once upon a time", threading.Event()))
    assert frames[-1].nfe == calls[0] == 16
    assert frames[-1].refreshes == 4  # one per block, each also the block's first step
    assert Frame.from_json(frames[-1].to_json()).refreshes == 4


@needs_twins
@pytest.mark.parametrize(("kind", "cache"), [("local-diffusion", {}), ("local-diffusion", {"prefix_cache": False}),
                                             ("local-diffusion", {"dual_cache": False}), ("local-ar", {})])
def test_the_shipped_twins_count_every_call_of_their_network_at_the_page_defaults(kind: str, cache: dict) -> None:
    """At the page's defaults and with the cache switches both ways: the twin's cache is real, so it is used,
    recorded as asked and its fills are passes (each block's first step refreshes it in the same call)."""
    from tests.test_samplers import network_calls

    src = make_source(kind, gen_length=32, **cache)
    with network_calls(src.model) as calls:
        frames = list(src.stream("Once upon a time", threading.Event()))
    assert frames[-1].nfe == calls[0] > 0
    if kind == "local-diffusion":
        asked = {"prefix_cache": True, "dual_cache": True, **cache}
        assert src.settings()["prefix_cache"] == asked["prefix_cache"]
        assert src.settings()["dual_cache"] == (asked["prefix_cache"] and asked["dual_cache"])


def test_deferred_frames_are_stamped_now_and_decoded_when_made_ready(tok) -> None:
    model = tiny(tok, causal=True)
    src = source(tok, model, ARSettings(gen_length=6, stop_at_eos=False))
    deferred = list(src.stream("Once upon a time", threading.Event(), defer=True))
    plain = list(src.stream("Once upon a time", threading.Event()))
    assert all(f.tokens == [] and f.pending is not None for f in deferred)
    assert [f.ready().to_json() | {"t": 0} for f in deferred] == [f.to_json() | {"t": 0} for f in plain]
    assert all(f.pending is None for f in deferred)


def test_each_source_declares_whether_it_takes_a_key_as_its_factory_does() -> None:
    import inspect

    from app.sources.base import REGISTRY, load_plugins

    load_plugins()
    for kind in REGISTRY.values():  # the page offers a key box, and a served page demands a typed key, from this flag
        assert kind.takes_key == ("api_key" in inspect.signature(kind.make).parameters), kind.prefix


def test_models_declare_the_caches_their_methods_offer() -> None:
    from app.bench.engine import TorchMaskedLM
    from app.engine.model import MaskedDiffusionLM
    from app.hf.block import HFBlockLM
    from app.hf.models import HFMaskedLM

    for cls in (MaskedDiffusionLM, HFMaskedLM, HFBlockLM, TorchMaskedLM):  # the sampler trusts these flags
        assert issubclass(cls, MaskedLMBase), cls  # every optional part has its default
        assert cls.caches == (cls.prefix_cache is not MaskedLMBase.prefix_cache), cls  # the base's refuses
        assert cls.fused_refresh == (cls.refresh is not MaskedLMBase.refresh), cls
        assert cls.caches or not (cls.exact_prefix or cls.dual_cache or cls.fused_refresh), cls  # only with a cache


def test_one_on_off_reader_refuses_what_is_neither() -> None:
    from app.engine.options import on_off
    from app.errors import UserError

    assert ([on_off(v, "x") for v in (True, "on", " YES ", "1", 1, False, "off", "No", "0", 0)]
            == [True] * 5 + [False] * 5)
    for bad in ("maybe", None, 2, 0.5):
        with pytest.raises(UserError, match="The x setting must be on or off"):
            on_off(bad, "x")
