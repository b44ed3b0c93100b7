"""LLaDA2.x (inclusionAI's mixture-of-experts block diffusion, its 2.1 code vendored in tests/assets/llada2/) loads
under the pinned transformers through the hf-diffusion path, and Converge, driving diffusers' LLaDA2Pipeline, decodes
as the model's own generate() token for token at temperature 0, tokens it edits included; an edited token is drawn
as a change."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

from app.errors import UserError
from app.sources.base import make_source

torch = pytest.importorskip("torch", reason="torch is not installed")
transformers = pytest.importorskip("transformers", reason="transformers is not installed")
diffusers = pytest.importorskip("diffusers", reason="diffusers is not installed (requirements-test.txt)")

from tests.hf_families import (  # noqa: E402  (needs torch and transformers)
    LLADA2_EOS,
    LLADA2_MASK,
    build_llada2,
    counted_run,
    forward_calls,
    llada2_tokenizer,
    no_cache_offered,
    past_the_tokenizer,
)

PROMPT = "the cat had a red ball"
RUN = {"trust_remote_code": True, "device": "cpu", "gen_length": 24, "steps": 24, "block_length": 8,
       "temperature": 0.0, "threshold": 0.9, "stop_at_eos": False}


@pytest.fixture(scope="module")
def llada2(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Weights wide enough (std 1.5) that the model is sure of itself, so it edits tokens it wrote."""
    return build_llada2(tmp_path_factory.mktemp("llada2"), seed=0, std=1.5)


def _eager(src, impl: str = "eager") -> None:
    """Attention on the eager path: the model's own generate() builds its mask in bfloat16, which the sdpa path
    refuses beside float32 queries (the model is float32 on the CPU). `impl` "sdpa" puts back the path Converge
    loads the model with."""
    src.model.model.config._attn_implementation = impl


def _authors(src, prompt: list[int], editing_threshold: float) -> list[int]:
    """The answer of LLaDA2.1's own generate() (modeling_llada21_moe.py), up to its first end-of-text."""
    return src.model.model.generate(torch.tensor([prompt]), temperature=0.0, block_length=8, steps=8, gen_length=24,
                                   threshold=0.9, editing_threshold=editing_threshold, max_post_steps=16,
                                   eos_id=LLADA2_EOS, mask_id=LLADA2_MASK)[0].tolist()


def _edits(steps) -> list[tuple[int, int]]:
    """(step, position) wherever a written token was replaced by another, step to step (by token id: a token's
    display string can change with its neighbours' while its id stays)."""
    return [(k, i) for k in range(1, len(steps)) for i in range(len(steps[k].ids))
            if not steps[k - 1].masked[i] and steps[k - 1].ids[i] != steps[k].ids[i]]


def test_llada2_loads_with_its_own_code_mask_id_and_rotary(llada2: Path) -> None:
    from safetensors.torch import load_file

    from app.hf.llada2 import is_llada2
    from app.hf.models import load_masked

    model, tok = load_masked(str(llada2), trust_remote_code=True, device="cpu")
    assert type(model.model).__name__ == "LLaDA2MoeModelLM" and is_llada2(model.model)
    assert model.mask_id == tok.mask_id == LLADA2_MASK and model.eos_id == LLADA2_EOS and not model.shifted
    saved = load_file(str(llada2 / "model.safetensors"))
    state = model.model.state_dict()
    for key, value in saved.items():
        assert torch.equal(state[key], value), key
    rotary = model.model.model.rotary_emb.inv_freq  # partial rotary: half of an 8-wide head, theta 600000
    torch.testing.assert_close(rotary, 1.0 / (600000 ** (torch.arange(0, 4, 2, dtype=torch.float32) / 4)),
                               rtol=0, atol=0)


def test_a_llada2_tokenizer_without_a_mask_token_gets_llada2s_mask_id_not_lladas(llada2: Path, tmp_path: Path) -> None:
    import json
    import shutil

    from app.hf.models import load_masked

    folder = tmp_path / "no-mask"
    shutil.copytree(llada2, folder)
    config = json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8"))
    del config["mask_token"]
    (folder / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    del config["mask_token_id"]
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    model, tok = load_masked(str(folder), trust_remote_code=True, device="cpu")
    assert tok.tok.mask_token_id is None and model.mask_id == tok.mask_id == LLADA2_MASK


def test_the_pipeline_alone_attends_past_the_block_so_it_disagrees_with_the_authors(llada2: Path) -> None:
    """Why app/hf/llada2.py wraps the model: given the pipeline's 2D mask, LLaDA2's code lets earlier blocks see
    later ones, and the answer is not its own generate()'s."""
    src = make_source(f"hf-diffusion:{llada2}", **RUN, editing_threshold=None)
    _eager(src)
    prompt = src.encode(PROMPT)
    pipe = diffusers.LLaDA2Pipeline(model=src.model.model, scheduler=diffusers.BlockRefinementScheduler())
    pipe.set_progress_bar_config(disable=True)
    alone = pipe(input_ids=torch.tensor([prompt]), gen_length=24, block_length=8, num_inference_steps=8,
                 temperature=0.0, threshold=0.9, editing_threshold=None, eos_early_stop=False,
                 mask_token_id=LLADA2_MASK, eos_token_id=LLADA2_EOS, output_type="seq").sequences[0].tolist()
    theirs = _authors(src, prompt, editing_threshold=1.0)
    _eager(src, "sdpa")
    assert alone != theirs


def test_the_pipelines_own_scheduler_ends_blocks_other_than_the_authors(llada2: Path) -> None:
    """Why app/hf/llada2.py brings its own scheduler: with the right mask but diffusers' scheduler, a block whose
    last mask is filled by its last budgeted pass gets no editing pass, and the answer differs from generate()'s."""
    from app.hf.llada2 import block_causal

    src = make_source(f"hf-diffusion:{llada2}", **RUN, editing_threshold=0.5)
    _eager(src)
    prompt = src.encode(PROMPT)
    pipe = diffusers.LLaDA2Pipeline(model=block_causal(src.model.model, 8),
                                    scheduler=diffusers.BlockRefinementScheduler())
    pipe.set_progress_bar_config(disable=True)
    stock = pipe(input_ids=torch.tensor([prompt]), gen_length=24, block_length=8, num_inference_steps=8,
                 temperature=0.0, threshold=0.9, editing_threshold=0.5, max_post_steps=16, eos_early_stop=False,
                 mask_token_id=LLADA2_MASK, eos_token_id=LLADA2_EOS, output_type="seq").sequences[0].tolist()
    theirs = _authors(src, prompt, editing_threshold=0.5)
    _eager(src, "sdpa")
    assert stock[:len(theirs)] != theirs


@pytest.mark.parametrize("editing", [0.5, None])
def test_llada2_decodes_as_its_own_generate_at_temperature_0(llada2: Path, editing: float | None) -> None:
    """With editing (LLaDA2.1, some tokens rewritten) and without (no token ever replaced), the answer is the
    authors' token for token (theirs stops after its first end-of-text), and so is the last frame's text. Ours runs on
    the sdpa attention Converge loads, theirs on the eager one its bfloat16 mask needs in float32."""
    from app.hf import llada2 as engine

    src = make_source(f"hf-diffusion:{llada2}", **RUN, editing_threshold=editing)
    prompt = src.encode(PROMPT)
    _eager(src, "sdpa")  # ours as Converge runs it
    steps = list(engine.run(src.model.model, LLADA2_MASK, LLADA2_EOS, prompt, src.opts, src.edit))
    _eager(src)
    theirs = _authors(src, prompt, editing_threshold=editing if editing is not None else 1.0)
    _eager(src, "sdpa")
    ours = steps[-1].ids.tolist()
    cut = ours.index(LLADA2_EOS) + 1 if LLADA2_EOS in ours else len(ours)
    assert steps[-1].done and ours[:cut] == theirs and len(set(theirs)) > 4
    assert [s.nfe for s in steps] == [0, *range(1, len(steps) - 1), len(steps) - 2]  # the last repeats, done
    frames = list(src.stream(PROMPT, threading.Event()))
    assert frames[0].masked == [True] * 24 and frames[-1].final
    assert frames[-1].text == src.tok.decode([i for i in theirs if i != LLADA2_EOS])
    assert bool(_edits(steps)) == (editing is not None)
    assert src.settings()["editing_threshold"] == editing and src.settings()["max_post_steps"] == 16


@pytest.fixture(scope="module")
def llada20(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_llada2(tmp_path_factory.mktemp("llada20"), seed=0, std=1.5, version="2.0")


def test_llada20_loads_under_transformers_5_and_decodes_as_its_own_generate(llada20: Path) -> None:
    """LLaDA2.0's code (model type llada2_moe, as on the Hub) imports a name transformers 5 removed; mended, it loads,
    and with editing off Converge spreads each block over steps x block / length passes (4 here, two tokens a pass)
    as 2.0's generate() does, token for token at temperature 0."""
    from app.hf import llada2 as engine

    src = make_source(f"hf-diffusion:{llada20}", **{**RUN, "steps": 12})
    assert type(src).__name__ == "BlockDiffusionSource" and src.model.model.config.model_type == "llada2_moe"
    assert src.edit.editing_threshold is None
    prompt = src.encode(PROMPT)
    steps = list(engine.run(src.model.model, LLADA2_MASK, LLADA2_EOS, prompt, src.opts, src.edit))
    _eager(src)
    theirs = src.model.model.generate(torch.tensor([prompt]), temperature=0.0, block_length=8, steps=4, gen_length=24,
                                      threshold=0.9, eos_id=LLADA2_EOS, mask_id=LLADA2_MASK)[0].tolist()
    _eager(src, "sdpa")
    ours = steps[-1].ids.tolist()
    cut = ours.index(LLADA2_EOS) + 1 if LLADA2_EOS in ours else len(ours)
    assert ours[:cut] == theirs and len(set(theirs)) > 4 and not _edits(steps)
    assert steps[-1].nfe < 24 and max(len(st.committed) for st in steps) >= 2  # fewer passes than tokens


def test_an_edited_token_is_drawn_as_a_change(llada2: Path) -> None:
    """Each token LLaDA2.1 rewrites is coded 2 (a different token) in its frame's row and styled "changed this
    frame", as a Mercury draft's rewritten word is."""
    from app.analysis.changes import SideAnalyzer
    from app.hf import llada2 as engine
    from app.sources.local import diffusion_frame
    from app.view.side import CHANGED, cell_styles

    src = make_source(f"hf-diffusion:{llada2}", **RUN, editing_threshold=0.5)
    prompt = src.encode(PROMPT)
    steps = list(engine.run(src.model.model, LLADA2_MASK, LLADA2_EOS, prompt, src.opts, src.edit))
    steps[-1].done = False  # keep the whole answer, uncut at end-of-text, so positions line up
    analyzer = SideAnalyzer()
    rows = [analyzer.add(diffusion_frame(src.tok, st, LLADA2_EOS, len(prompt), 0.0)) for st in steps]
    edited = _edits(steps)
    assert edited
    for k, i in edited:
        assert rows[k]["ch"][i] == 2 and cell_styles(rows[k], settled_all=False)[i] == CHANGED


def test_editing_settings_are_refused_for_a_model_that_does_not_edit(tmp_path: Path) -> None:
    """LLaDA's masked sampler takes no editing setting, not even at its LLaDA2 default: the page never sends one for
    it, and the CLI names the source and the setting."""
    from tests.hf_families import build_llada

    folder = build_llada(tmp_path)
    for given in ({"editing_threshold": 0.9}, {"max_post_steps": 16}):
        with pytest.raises(UserError, match=f"hf-diffusion:.* has no setting '{next(iter(given))}'"):
            make_source(f"hf-diffusion:{folder}", trust_remote_code=True, device="cpu", **given)
    src = make_source(f"hf-diffusion:{folder}", trust_remote_code=True, device="cpu")
    assert "editing_threshold" not in src.settings()


def test_a_cancelled_llada2_run_stops_with_its_pipeline(llada2: Path) -> None:
    cancel = threading.Event()
    src = make_source(f"hf-diffusion:{llada2}", **RUN, editing_threshold=0.5)
    seen = []
    for frame in src.stream(PROMPT, cancel):
        seen.append(frame)
        if len(seen) == 3:
            cancel.set()
    assert len(seen) == 3 and not seen[-1].final
    assert np.all([len(f.tokens) == 24 for f in seen])
    for worker in [t for t in threading.enumerate() if t.name == "llada2-pipeline"]:  # the pipeline stops too
        worker.join(120)
        assert not worker.is_alive()


def test_llada2_counts_each_call_of_its_network_as_one_pass_and_records_no_cache(llada2: Path) -> None:
    """The pipeline calls the model once a refinement pass and keeps no cache, so nfe is its calls and no cache is
    offered or recorded."""
    spec = f"hf-diffusion:{llada2}"
    calls, last, settings = counted_run(spec, PROMPT, **RUN, editing_threshold=0.5)
    assert calls == last.nfe > 0
    assert not {"prefix_cache", "dual_cache"} & set(settings)
    no_cache_offered(spec, **RUN)


def test_an_id_past_the_llada2_tokenizer_is_drawn_as_its_placeholder(llada2: Path, tmp_path: Path) -> None:
    """The model's 157184 output rows beside a tokenizer that ends at the mask (156896 entries): an id between, once
    the pipeline writes it, is drawn as `<id N>` in the cells and the text (the pipeline gives no candidates)."""
    import shutil

    from app.hf.models import unknown_token

    folder = shutil.copytree(llada2, tmp_path / "llada2")
    llada2_tokenizer(folder, LLADA2_MASK + 1)
    frames = past_the_tokenizer(f"hf-diffusion:{folder}", 157000, PROMPT, **RUN)
    assert unknown_token(157000) in frames[-1].tokens and unknown_token(157000) in frames[-1].text


DRAFT = "once upon a time there was a little cat who liked to play in the sun"  # 16 tokens of the 24


def _planned(llada2: Path, editing: float | None, where: str = "random") -> tuple:
    """A source, its plan from DRAFT (a third re-noised) and the prompt's ids."""
    from app.engine.draft import Revision

    src = make_source(f"hf-diffusion:{llada2}", **RUN, editing_threshold=editing)
    return src, src.revise(Revision(DRAFT, share=0.3, where=where, seed=2), PROMPT), src.encode(PROMPT)


@pytest.mark.parametrize("editing", [0.5, None])
def test_a_draft_is_in_each_blocks_window_before_its_first_pass_and_the_answer_is_the_pipelines(
        llada2: Path, editing: float | None) -> None:
    """Started from a draft, the model's first pass over each block reads the draft with masks at the re-noised
    positions (and past the draft), and the answer is LLaDA2Pipeline's called the same way, token for token."""
    from app.hf import llada2 as engine

    src, plan, prompt = _planned(llada2, editing)
    assert plan.mode == "revise" and len(plan.tokens) == 16 and len(plan.renoised) == 5
    model, p = src.model.model, len(prompt)
    read: list[list[int]] = []
    hook = model.register_forward_pre_hook(lambda _m, args: read.append(args[0][0].tolist()))
    try:
        steps = list(engine.run(model, LLADA2_MASK, LLADA2_EOS, prompt, src.opts, src.edit, draft=plan.tokens,
                                renoised=plan.renoised))
    finally:
        hook.remove()
    seeded = [LLADA2_MASK if i in plan.renoised else t for i, t in enumerate(plan.tokens)] + [LLADA2_MASK] * 8
    assert steps[0].ids.tolist() == seeded
    firsts = {len(window): window for window in reversed(read)}  # each window's first pass
    assert sorted(firsts) == [8, 16, 24, 32]
    for end, window in firsts.items():
        assert window[max(p, end - 8):end] == (seeded + [LLADA2_MASK] * 8)[max(0, end - 8 - p):end - p]
    pipe = diffusers.LLaDA2Pipeline(model=engine.block_causal(model, 8, {p + i: t for i, t in enumerate(plan.tokens)
                                                                         if i not in plan.renoised}),
                                    scheduler=engine.authors_scheduler(diffusers))
    pipe.set_progress_bar_config(disable=True)
    with torch.inference_mode():
        theirs = pipe(input_ids=torch.tensor([prompt]), use_chat_template=False, gen_length=24, block_length=8,
                      num_inference_steps=8, temperature=0.0, threshold=0.9, editing_threshold=editing,
                      max_post_steps=16, eos_early_stop=False, mask_token_id=LLADA2_MASK, eos_token_id=LLADA2_EOS,
                      output_type="seq", generator=torch.Generator().manual_seed(0)).sequences[0].tolist()
    assert steps[-1].ids.tolist() == theirs
    scratch = list(engine.run(model, LLADA2_MASK, LLADA2_EOS, prompt, src.opts, src.edit))
    assert scratch[-1].ids.tolist() != theirs
    if editing is None:  # nothing rewrites a written token: every kept draft token stands
        assert all(theirs[i] == t for i, t in enumerate(plan.tokens) if i not in plan.renoised)


def test_the_pipelines_callback_rewrites_a_window_only_after_its_first_pass_reads_it_masked(llada2: Path) -> None:
    """Why app/hf/llada2.py writes a draft into the window the pipeline hands its model: a draft returned as the
    callback's `block_x` on a block's first pass reaches the model a pass late (that pass read the block masked)."""
    from app.hf import llada2 as engine

    src, plan, prompt = _planned(llada2, None)
    model, p = src.model.model, len(prompt)
    read: list[list[int]] = []
    hook = model.register_forward_pre_hook(lambda _m, args: read.append(args[0][0].tolist()))

    def draft_in(_pipe, _step: int, _t: int, kw: dict) -> dict:
        window = kw["block_x"].clone()
        for i, t in enumerate(plan.tokens):
            if p + i < window.shape[1] and i not in plan.renoised:
                window[0, p + i] = t
        return {"block_x": window}

    pipe = diffusers.LLaDA2Pipeline(model=engine.block_causal(model, 8), scheduler=engine.authors_scheduler(diffusers))
    pipe.set_progress_bar_config(disable=True)
    try:
        with torch.inference_mode():
            pipe(input_ids=torch.tensor([prompt]), use_chat_template=False, gen_length=24, block_length=8,
                 num_inference_steps=8, temperature=0.0, threshold=0.9, editing_threshold=None, eos_early_stop=False,
                 mask_token_id=LLADA2_MASK, eos_token_id=LLADA2_EOS, output_type="seq",
                 callback_on_step_end=draft_in, callback_on_step_end_tensor_inputs=["block_x"])
    finally:
        hook.remove()
    assert read[0][p:] == [LLADA2_MASK] * (8 - p)  # the first pass: the block's answer positions all masked
    kept = [i for i in range(8 - p) if i not in plan.renoised]
    assert kept and [read[1][p + i] for i in kept] == [plan.tokens[i] for i in kept]  # the draft: a pass late


def test_a_llada2_draft_shows_masks_where_re_noised_and_every_frame_its_revision(llada2: Path) -> None:
    from app.trace.frames import Frame

    src, plan, _ = _planned(llada2, None)
    frames = list(src.stream(PROMPT, threading.Event()))
    first = frames[0]
    assert [i for i, m in enumerate(first.masked) if m] == [*plan.renoised, *range(16, 24)]
    assert first.revision == "".join("r" if i in plan.renoised else "k" for i in range(16)) + "." * 8
    for frame in frames:
        assert frame.revision is not None and len(frame.revision) == len(frame.tokens)
        assert Frame.from_json(frame.to_json()).revision == frame.revision
        assert all(letter == "r" for letter, m in zip(frame.revision, frame.masked) if m and letter != ".")
    last = frames[-1]
    assert "r" not in last.revision  # every re-noised position filled, and with editing off every kept token stands
    assert all(last.revision[i] == "k" for i in range(min(16, len(last.revision))) if i not in plan.renoised)


def test_llada2_unsure_positions_are_the_least_likely_draft_tokens_from_one_pass_counted_in_nfe(llada2: Path) -> None:
    from app.engine.draft import Revision
    from app.hf import llada2 as engine

    src, _, prompt = _planned(llada2, 0.5)
    with forward_calls(src.model.model) as calls:
        plan = src.revise(Revision(DRAFT, share=0.25, where="unsure", seed=2), PROMPT)
        assert calls[0] == 1 and plan.nfe == 1
        last = list(src.stream(PROMPT, threading.Event()))[-1]
    assert last.nfe == calls[0]
    seen = torch.full((1, 32), LLADA2_MASK)  # the prompt and the draft in whole blocks, read block-causally
    seen[0, :len(prompt) + 16] = torch.tensor(prompt + list(plan.tokens))
    with torch.inference_mode():
        logits = engine.block_causal(src.model.model, 8)(seen, position_ids=torch.arange(32)[None]).logits[0]
    surprisal = -torch.log_softmax(logits[len(prompt):len(prompt) + 16].float(), -1)[torch.arange(16),
                                                                                     torch.tensor(plan.tokens)]
    assert plan.renoised == tuple(sorted(torch.argsort(surprisal, descending=True, stable=True)[:4].tolist()))


def test_a_race_from_a_draft_records_llada2s_plan_and_its_letters(llada2: Path, tmp_path: Path) -> None:
    """In a race started from a draft, the LLaDA2.x side plans by its own `revise` and runs its pipeline from the
    draft: the header keeps its plan, its first recorded frame shows the draft masked where re-noised."""
    from app.engine.draft import Revision
    from tests.test_revise_race import raced

    header, frames, _ = raced(tmp_path, f"hf-diffusion:{llada2}", "local-ar", Revision(DRAFT, share=0.3, seed=2),
                              {"left": {**RUN, "editing_threshold": None}, "right": {"gen_length": 8}}, prompt=PROMPT)
    plan = header["sources"]["left"]["draft"]
    assert plan["mode"] == "revise" and plan["length"] == 16 and len(plan["renoised"]) == 5
    left = frames["left"]
    assert left[0]["revision"] == "".join("r" if i in plan["renoised"] else "k" for i in range(16)) + "." * 8
    assert [i for i, m in enumerate(left[0]["masked"]) if m] == [*plan["renoised"], *range(16, 24)]
    assert all(len(f["revision"]) == len(f["tokens"]) for f in left) and left[-1]["final"]
