"""DiffusionGemma races as its own generate() runs it (issue 40): on a tiny random DiffusionGemma built from
transformers' own config classes (tests/hf_families.py), `hf-diffusion:` picks its backend from the config alone, the
answer is generate()'s at the seed, every denoising step is a frame in the schema-2 states, and every call of the
network is counted."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from app.errors import UserError

torch = pytest.importorskip("torch", reason="torch is not installed")
transformers = pytest.importorskip("transformers", reason="transformers is not installed")
if not hasattr(transformers, "DiffusionGemmaForBlockDiffusion"):
    pytest.skip("this transformers has no DiffusionGemma (5.11 or later)", allow_module_level=True)

from tests.hf_families import GEMMA_EOS, build_diffusion_gemma, forward_calls  # noqa: E402

PROMPT = "once upon a time"
QUICK = {"max_new_tokens": 12, "max_denoising_steps": 4}  # two canvases of 8, at most 4 steps each
DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(),
                                                                 reason="no CUDA GPU on this machine"))]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_diffusion_gemma(tmp_path_factory.mktemp("gemma"))


def source(tiny: Path, device: str = "cpu", **settings: Any) -> Any:
    from app.sources.base import make_source

    return make_source(f"hf-diffusion:{tiny}", device=device, **settings)


def frames_of(src: Any, prompt: str = PROMPT) -> list[Any]:
    return list(src.stream(prompt, threading.Event()))


def reference(src: Any, seed: int = 0, **kwargs: Any) -> list[int]:
    """The answer `torch.manual_seed(seed); model.generate(input_ids, **kwargs)` returns, prompt excluded."""
    ids = src.encode(PROMPT)
    model = src.model.model
    torch.manual_seed(seed)
    out = model.generate(torch.tensor([ids], device=model.device), **kwargs)
    return out.sequences[0, len(ids):].tolist()


def cut(ids: list[int]) -> list[int]:
    return ids[:ids.index(GEMMA_EOS)] if GEMMA_EOS in ids else ids


def test_hf_diffusion_runs_diffusion_gemma_on_its_own_backend(tiny: Path) -> None:
    from app.hf.config import model_type
    from app.sources.base import REGISTRY
    from app.sources.hf import backend_of
    from app.sources.hf_gemma import GemmaSource

    assert model_type(str(tiny)) == "diffusion_gemma" and backend_of(str(tiny)) == "diffusion_gemma"
    src = source(tiny, **QUICK)
    assert isinstance(src, GemmaSource) and type(src.model.model).__name__ == "DiffusionGemmaForBlockDiffusion"
    assert set(src.settings()) <= set(REGISTRY["hf-diffusion"].backend(str(tiny)).names) | {"model"}
    tokenizer = transformers.AutoTokenizer.from_pretrained(tiny)
    assert src.encode(PROMPT) == tokenizer(PROMPT).input_ids  # no chat template: the ids its tokenizer gives


@pytest.mark.parametrize("device", DEVICES)
def test_the_answer_is_what_generate_returns_at_the_seed(tiny: Path, device: str) -> None:
    src = source(tiny, device, max_new_tokens=8, seed=3)
    last = frames_of(src)[-1]
    answer = reference(src, 3, max_new_tokens=8)
    assert last.final and last.text == src.tok.decode(cut(answer))
    assert len(last.tokens) == len(cut(answer)) and last.usage["completion_tokens"] == len(cut(answer))


OWN = {"max_new_tokens": 12, "max_denoising_steps": 3, "entropy_bound": 0.7, "stability_threshold": 2,
       "confidence_threshold": 0.01, "t_min": 0.2, "t_max": 0.9}  # none of them transformers' defaults


def test_settings_left_out_are_transformers_defaults_for_a_model_that_sets_none(tiny: Path) -> None:
    given = transformers.DiffusionGemmaGenerationConfig._get_default_generation_params()
    ran = source(tiny).settings()
    assert {k: ran[k] for k in given if k != "sampler_config"} == {k: v for k, v in given.items()
                                                                   if k != "sampler_config"}
    assert ran["entropy_bound"] == given["sampler_config"].entropy_bound


def test_settings_left_out_are_the_checkpoints_own_and_the_header_keeps_them(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    from app.engine.options import coerce, settings_spec
    from app.hf.diffusion_gemma import GemmaSettings

    own = build_diffusion_gemma(tmp_path_factory.mktemp("gemma-own"), generation=OWN)
    src = source(own)
    assert {k: src.settings()[k] for k in OWN} == OWN  # read back from the generation config generate() uses
    last = frames_of(src)[-1]
    assert last.text == src.tok.decode(cut(reference(src)))  # generate() with nothing passed: the same run
    moved = source(own, max_denoising_steps=2, t_max="").settings()  # empty, as the page's box sends it: its own
    assert moved["max_denoising_steps"] == 2 and {k: moved[k] for k in OWN if k != "max_denoising_steps"} == \
        {k: v for k, v in OWN.items() if k != "max_denoising_steps"}
    assert coerce(GemmaSettings, {"t_min": ""}, "hf-diffusion").t_min is None
    spec = settings_spec(GemmaSettings())
    assert all(spec[k]["default"] is None and spec[k]["own"] and "the model's own" in spec[k]["label"] for k in OWN)


def test_each_canvas_shows_its_random_start_every_step_and_what_generate_appended(tiny: Path) -> None:
    from app.hf import diffusion_gemma
    from app.trace.frames import Frame

    src = source(tiny, **QUICK)
    lm, ids = src.model, src.encode(PROMPT)
    steps = list(diffusion_gemma.run(lm, ids, src.opts))
    length = lm.canvas_length
    assert steps[0].states == "n" * length and steps[0].denoising == 0  # the first canvas's random start
    appended = [i for i, st in enumerate(steps) if st.entropy is None and st.denoising and not st.done]
    assert len(appended) == 2 and steps[-1].done
    for i in appended:
        assert steps[i].states == "a" * len(steps[i].ids) and len(steps[i].ids) % length == 0
    second = steps[appended[0] + 1]
    assert second.states == "a" * length + "n" * length  # the second canvas starts as noise after the first
    torch.manual_seed(0)
    answer = lm.model.generate(torch.tensor([ids]), **diffusion_gemma.generate_kwargs(src.opts)).sequences
    assert steps[-1].ids.tolist() == answer[0, len(ids):].tolist() == steps[appended[-1]].ids.tolist()
    for st in steps:
        if st.entropy is not None:  # a denoising step: at most max_denoising_steps of them a canvas
            assert 1 <= st.denoising <= QUICK["max_denoising_steps"] and set(st.states) <= {"a", "n"}
            assert all(st.states[p] == "a" for p in st.committed) and set(st.candidates) == set(st.committed)
    frames = frames_of(src)
    for frame in frames:
        assert Frame.from_json(frame.to_json()).states == frame.states and "every step captured" in frame.note
    starts = [f for f in frames if f.inserted]
    assert [f.inserted for f in starts] == [list(range(length, 2 * length))] and starts[0].states.endswith("n" * length)
    last = frames[-1]
    assert (last.deleted or []) == list(range(len(last.tokens), len(steps[-1].ids)))


def test_candidates_put_the_draft_first_and_confidence_is_its_probability(tiny: Path) -> None:
    frames = frames_of(source(tiny, **QUICK, entropy_bound=2.0))
    shown = [f for f in frames if f.candidates]
    assert shown
    for f in shown:
        for pos, cands in f.candidates:
            probs = [p for _, p in cands]
            assert probs == sorted(probs, reverse=True) and f.confidence[pos] == pytest.approx(probs[0], abs=1e-4)
            assert f.entropy[pos] is not None and f.entropy[pos] >= 0
        assert len(f.entropy) == len(f.tokens)
        canvas = len(f.tokens) - f.entropy.count(None)  # the current canvas's; none for the finished ones
        assert canvas == 8 and all(e is None for e in f.entropy[:len(f.tokens) - canvas])
    assert all(f.entropy is None for f in frames if not f.candidates and (f.final or "random start" in f.note))


def test_nfe_counts_every_encoder_and_decoder_call_and_refreshes_the_encoders(tiny: Path) -> None:
    src = source(tiny, **QUICK)
    inner = src.model.model.model
    with forward_calls(inner.encoder) as encoder, forward_calls(inner.decoder) as decoder:
        frames = frames_of(src)
    last = frames[-1]
    assert last.nfe == encoder[0] + decoder[0] and last.refreshes == encoder[0] == 2  # the prompt, then canvas 1
    assert decoder[0] <= 2 * QUICK["max_denoising_steps"]
    assert [f.nfe for f in frames] == sorted(f.nfe for f in frames)


def test_a_cancelled_run_stops_at_the_next_step(tiny: Path) -> None:
    src = source(tiny, **QUICK)
    cancel = threading.Event()
    seen = []
    for frame in src.stream(PROMPT, cancel):
        seen.append(frame)
        cancel.set()
    assert len(seen) == 1 and not seen[0].final
    assert frames_of(src)[-1].final  # the model is free for the next run


def test_settings_it_does_not_take_are_refused_before_loading(tiny: Path) -> None:
    from app.sources.hf import GEMMA

    for name, value in (("scoring", "margin"), ("trust_remote_code", True), ("shift", "shifted"),
                        ("gen_length", 8)):
        with pytest.raises(UserError) as e:
            source(tiny, **{name: value})
        assert repr(name) in str(e.value)
    with pytest.raises(UserError) as e:
        source(tiny, pins=["3:cat"])
    assert str(e.value) == GEMMA.why_not["pins"]
    with pytest.raises(UserError, match="t_max"):
        source(tiny, t_min=0.9, t_max=0.5)


def test_a_model_ids_type_is_read_once() -> None:
    from app.hf.config import _hub_type, model_type

    before = _hub_type.cache_info().hits
    for _ in range(3):
        assert model_type("no-such-org/no-such-model-for-converge", fetch=False) is None
    assert _hub_type.cache_info().hits == before + 2


def test_generate_takes_its_settings_as_flags(tiny: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from app.cli.generate import main

    argv = ["--source", f"hf-diffusion:{tiny}", "--prompt", PROMPT, "--device", "cpu", "--max-new-tokens", "8",
            "--max-denoising-steps", "3", "--entropy-bound", "0.5", "--t-min", "0.2", "--t-max", "0.9",
            "--stability-threshold", "2", "--confidence-threshold", "0.01", "--seed", "4"]
    assert main(argv) == 0
    src = source(tiny, max_new_tokens=8, max_denoising_steps=3, entropy_bound=0.5, t_min=0.2, t_max=0.9,
                 stability_threshold=2, confidence_threshold=0.01, seed=4)
    assert capsys.readouterr().out.strip() == frames_of(src)[-1].text.strip()


DRAFT = "there was a little cat"  # five tokens: a first canvas of 8 holds it and three positions past it


def started(tiny: Path, where: str = "random", share: float = 0.4, text: str = DRAFT, device: str = "cpu",
            **settings: Any) -> Any:
    """A source and its plan from `text` (issue 53), at QUICK's settings and seed 3 unless given."""
    from app.engine.draft import Revision

    src = source(tiny, device, **{**QUICK, "seed": 3, **settings})
    return src, src.revise(Revision(text, share=share, where=where, seed=1), PROMPT)


@pytest.mark.parametrize("device", DEVICES)
def test_a_draft_is_generates_own_first_canvas_and_the_answer_is_generates_from_it(tiny: Path, device: str) -> None:
    """Started from a draft, the run is generate() given `decoder_input_ids`: the draft's tokens, and at each
    re-noised position and past the draft the noise generate()'s sampler draws (uniform over the vocabulary from
    torch's generator, seeded first), as a user of transformers would write it."""
    from app.hf import diffusion_gemma

    src, plan = started(tiny, device=device)
    assert plan.mode == "revise" and plan.tokens == tuple(src.tok.encode(DRAFT)) and len(plan.renoised) == 2
    ids, lm = src.encode(PROMPT), src.model
    steps = list(diffusion_gemma.run(lm, ids, src.opts, draft=plan.tokens, renoised=plan.renoised))
    torch.manual_seed(3)
    canvas = torch.randint(0, lm.vocab_size, (1, lm.canvas_length), device=device)
    kept = [i for i in range(len(plan.tokens)) if i not in plan.renoised]
    canvas[0, kept] = torch.tensor([plan.tokens[i] for i in kept], device=device)
    assert steps[0].ids.tolist() == canvas[0].tolist()
    prompt = torch.tensor([ids], device=device)
    answer = lm.model.generate(prompt, decoder_input_ids=canvas.clone(),
                               **diffusion_gemma.generate_kwargs(src.opts)).sequences[0, len(ids):].tolist()
    assert steps[-1].ids.tolist() == answer
    torch.manual_seed(3)
    assert answer != lm.model.generate(prompt, **diffusion_gemma.generate_kwargs(src.opts)
                                       ).sequences[0, len(ids):].tolist()  # from nothing: another run


def test_the_first_frame_shows_the_draft_with_noise_where_re_noised_and_every_frame_its_revision(tiny: Path) -> None:
    from app.hf import diffusion_gemma
    from app.trace.frames import Frame

    src, plan = started(tiny)
    frames = list(src.stream(PROMPT, threading.Event()))
    steps = list(diffusion_gemma.run(src.model, src.encode(PROMPT), src.opts, draft=plan.tokens,
                                     renoised=plan.renoised))  # the same run: its token ids, frame by frame
    first, n = frames[0], len(plan.tokens)
    drafted = "".join("n" if i in plan.renoised else "d" for i in range(n))
    assert first.states == drafted + "n" * (8 - n)
    assert first.revision == drafted.replace("n", "r").replace("d", "k") + "." * (8 - n)
    assert [first.tokens[i] for i in range(n) if i not in plan.renoised] == \
        [t for i, t in enumerate(src.tok.token_strings(list(plan.tokens))) if i not in plan.renoised]
    assert len(frames) == len(steps)
    for frame, st in zip(frames, steps):
        assert frame.revision is not None and len(frame.revision) == len(frame.tokens)
        assert Frame.from_json(frame.to_json()).revision == frame.revision
        for i, (letter, state) in enumerate(zip(frame.revision, frame.states)):
            kept = "k" if i < n and st.ids[i] == plan.tokens[i] else "e"
            assert letter == ("." if i >= n else "r" if state == "n" else kept)
    assert set(frames[-1].revision) <= set("ke.")  # all accepted: nothing left open
    assert frames_of(source(tiny, **QUICK))[0].revision is None  # from nothing: no letters


def test_unsure_positions_are_the_least_likely_draft_tokens_from_one_forward_pass_counted_in_nfe(tiny: Path) -> None:
    from app.engine.draft import Revision

    src, _ = started(tiny)
    lm, ids = src.model, src.encode(PROMPT)
    inner = lm.model.model
    with forward_calls(inner.encoder) as encoder, forward_calls(inner.decoder) as decoder:
        plan = src.revise(Revision(DRAFT, share=0.4, where="unsure", seed=1), PROMPT)
        assert encoder[0] == decoder[0] == 1 and plan.nfe == 2
        last = frames_of(src)[-1]
    assert last.nfe == encoder[0] + decoder[0] and last.refreshes == encoder[0] - 1  # the pass is no refresh
    canvas = torch.randint(0, lm.vocab_size, (1, 8), generator=torch.Generator().manual_seed(1))
    canvas[0, :5] = torch.tensor(plan.tokens)
    with torch.inference_mode():
        logits = lm.model(input_ids=torch.tensor([ids]), position_ids=torch.arange(len(ids))[None],
                          decoder_input_ids=canvas,
                          decoder_position_ids=torch.arange(len(ids), len(ids) + 8)[None]).logits[0, :5]
    surprisal = -torch.log_softmax(logits, dim=-1)[torch.arange(5), torch.tensor(plan.tokens)]  # -log p(draft token)
    assert plan.renoised == tuple(sorted(torch.argsort(surprisal, descending=True)[:2].tolist()))


def test_a_draft_longer_than_a_canvas_keeps_one_canvas_and_says_so(tiny: Path) -> None:
    _, plan = started(tiny, text="there was a little cat who liked to play in the sun")
    assert len(plan.tokens) == 8 and "first canvas" in plan.note and "writes the other 4 afresh" in plan.note


def test_a_race_from_a_draft_records_diffusion_gemmas_plan_and_its_letters(tiny: Path, tmp_path: Path) -> None:
    """In a race started from a draft, the DiffusionGemma side plans by its own `revise` (not the masked sampler's,
    nor a `cannot`): the header keeps its plan, its first recorded frame is generate()'s seeded canvas."""
    from app.engine.draft import Revision
    from tests.test_revise_race import raced

    header, frames, _ = raced(tmp_path, f"hf-diffusion:{tiny}", "local-ar", Revision(DRAFT, share=0.4, seed=1),
                              {"left": {"device": "cpu", **QUICK}, "right": {"gen_length": 8}}, prompt=PROMPT)
    plan = header["sources"]["left"]["draft"]
    assert plan["mode"] == "revise" and plan["length"] == 5 and len(plan["renoised"]) == 2
    left = frames["left"]
    assert left[0]["revision"] == "".join("r" if i in plan["renoised"] else "k" for i in range(5)) + "..."
    assert all(len(f["revision"]) == len(f["tokens"]) for f in left) and left[-1]["final"]
