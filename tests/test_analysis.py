"""Behaviour of app.analysis.changes: display tokens, change codes, alignment to the final frame, metrics."""

from __future__ import annotations

import json
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from app.analysis.changes import (
    CHANGED,
    NEW,
    REMASKED,
    UNCHANGED,
    SideAnalyzer,
    change_matrix,
    display_tokens,
    metrics,
    settled_against_final,
    settled_fraction_series,
    visible_count,
)
from app.bench.pipeline import _truth, mercury_like_stream
from app.bench.pipeline import bench as bench_pipeline
from app.trace.frames import Frame

M = ""  # a masked position's display string


def tok_frame(t: float, step: int, tokens: list[str], masked: list[bool] | None = None, **kw) -> Frame:
    return Frame(t=t, step=step, tokens=tokens, masked=masked, **kw)


def text_frame(t: float, step: int, text: str, **kw) -> Frame:
    return Frame(t=t, step=step, text=text, **kw)


def test_display_tokens_split_words_whitespace_runs_and_symbols_and_drop_markers():
    f = text_frame(0, 0, "Hi,  there<|think_end|>!\n")
    assert display_tokens(f) == ["Hi", ",", "  ", "there", "!", "\n"]
    assert f.text == "Hi,  there<|think_end|>!\n"  # the raw text stays as recorded


def test_display_tokens_of_token_frames_show_masked_positions_as_empty():
    f = tok_frame(0, 0, ["a", "[MASK]", "c"], [False, True, False])
    assert display_tokens(f) == ["a", "", "c"]


def test_unchanged_frames_give_all_zero_codes():
    masked = [False, True, False]
    for a, b in [(tok_frame(0, 0, ["x", M, "z"], masked), tok_frame(1, 1, ["x", M, "z"], masked)),
                 (text_frame(0, 0, "I wYll r%ad"), text_frame(1, 1, "I wYll r%ad"))]:
        rows = change_matrix([a, b])
        assert rows[1] == [UNCHANGED] * len(display_tokens(b))


def test_masked_to_token_is_code_1():
    rows = change_matrix([tok_frame(0, 0, [M, M], [True, True]), tok_frame(1, 1, ["a", M], [False, True])])
    assert rows[1] == [NEW, UNCHANGED]


def test_token_to_token_change_is_code_2():
    rows = change_matrix([tok_frame(0, 0, ["a", "b"], [False, False]), tok_frame(1, 1, ["a", "c"], [False, False])])
    assert rows[1] == [UNCHANGED, CHANGED]


def test_token_to_mask_is_code_3():
    rows = change_matrix([tok_frame(0, 0, ["a", "b"], [False, False]), tok_frame(1, 1, ["a", M], [False, True])])
    assert rows[1] == [UNCHANGED, REMASKED]


def test_first_frame_marks_tokens_new_and_masks_unchanged():
    rows = change_matrix([tok_frame(0, 0, ["a", M], [False, True])])
    assert rows[0] == [NEW, UNCHANGED]


def test_length_growth_marks_new_positions_1():
    assert change_matrix([text_frame(0, 0, "Hello"), text_frame(1, 1, "Hello world")])[1] == [UNCHANGED, NEW, NEW]
    assert change_matrix([tok_frame(0, 0, ["a"]), tok_frame(1, 1, ["a", "b"])])[1] == [UNCHANGED, NEW]
    # a word that grows while typing is changed, what follows it is new
    assert change_matrix([text_frame(0, 0, "Hello wor"), text_frame(1, 1, "Hello world, hi")])[1] == \
        [UNCHANGED, UNCHANGED, CHANGED, NEW, NEW, NEW]


MERCURY = ["X wYll r%ad t#e f!le", "I will r%ad t#e f!le.", "I will read t#e f!le. Tq3n", "I will read the file. Then"]


def test_mercury_noise_settling_left_to_right_gives_a_settled_prefix_that_grows():
    frames = [text_frame(0.1 * i, i, s) for i, s in enumerate(MERCURY)]
    frames[-1].final = True
    analyzer = SideAnalyzer()
    prefixes = [analyzer.add(f)["sp"] for f in frames]
    assert prefixes == [0, 0, 4, 6]
    leading = [next((i for i, ok in enumerate(row) if not ok), len(row)) for row in settled_against_final(frames)]
    assert leading == [0, 4, 6, len(display_tokens(frames[-1]))]


def test_alignment_to_final_finds_settled_tokens_behind_noise_that_changes_token_counts():
    frames = [text_frame(0.1 * i, i, s) for i, s in enumerate(MERCURY)]
    toks = display_tokens(frames[1])  # I, ' ', will, ' ', r, %, ad, ' ', t, #, e, ' ', f, !, le, .
    settled = settled_against_final(frames)[1]
    assert [x for x, ok in zip(toks, settled) if ok] == ["I", " ", "will", " ", " ", " ", "."]
    assert settled[toks.index("t") + 3] and not settled[toks.index("t")]


def test_noise_churn_is_changed_and_draft_growth_is_new():
    row = change_matrix([text_frame(0, 0, "Ab c#d"), text_frame(1, 1, "Ab e!d fg")])[1]
    # "Ab", " " settled; "e" replaces "c" at the same offset; "!" replaces "#"; "d" unchanged; " fg" grows the draft
    assert row == [UNCHANGED, UNCHANGED, CHANGED, CHANGED, UNCHANGED, NEW, NEW]


def test_settled_against_final_is_all_true_for_the_final_frame():
    frames, _ = mercury_like_stream(200, seed=3)
    assert all(settled_against_final(frames)[-1])
    toks = [tok_frame(0, 0, [M, M, M], [True] * 3),
            tok_frame(1, 1, ["a", M, "<|endoftext|>"], [False, True, False], final=True)]
    assert settled_against_final(toks)[-1] == [True, True, True]


def test_alignment_to_final_finds_every_settled_token_of_a_mercury_like_stream():
    frames, sources = mercury_like_stream(300, seed=5)
    starts = {m.span(): k for k, m in enumerate(re.finditer(r"\w+|\s+|[^\w\s]", frames[-1].text))}
    cells = extra = 0
    for f, src, settled in zip(frames, sources, settled_against_final(frames)):
        truth = _truth(f.text, src, starts)
        assert all(ok for j, ok in zip(truth, settled) if j >= 0)
        extra += sum(ok and j < 0 for j, ok in zip(truth, settled))  # noise that happens to equal the final token there
        cells += len(settled)
    assert extra < 0.01 * cells


def test_settled_fraction_series_rises_to_one_on_a_mercury_like_stream():
    frames, _ = mercury_like_stream(300, seed=2)
    series = settled_fraction_series(frames)
    assert [t for t, _ in series] == [f.t for f in frames]
    assert series[0][1] < 0.2 and series[-1][1] == 1.0
    assert series[len(series) // 2][1] > series[0][1]


def hand_built_trace() -> list[Frame]:
    eos = "<|endoftext|>"
    return [
        tok_frame(0.0, 0, [M] * 6, [True] * 6, nfe=0),
        tok_frame(0.5, 1, [M, M, M, M, eos, eos], [True] * 4 + [False] * 2, nfe=1),  # EOS flooding first: not visible
        tok_frame(1.0, 2, ["Once", M, " upon", M, eos, eos], [False, True, False, True, False, False], nfe=2,
                  confidence=[0.91234, 0.1, 0.8, 0.2, 0.99, 0.99]),
        tok_frame(1.5, 3, ["Once", " a", " upon", "\n", eos, eos], [False] * 6, nfe=3),
        tok_frame(2.0, 4, ["Once", " a", " upon", "\n", eos, eos], [False] * 6, nfe=4, final=True),
    ]


def test_metrics_on_a_hand_built_trace():
    m = metrics(hand_built_trace())
    assert m["ttft"] == 1.0
    assert m["t_final"] == 2.0 and m["frames"] == 5
    assert m["tokens"] == 3  # "Once", " a", " upon"; the newline is whitespace, the EOS and padding are not counted
    assert m["tokens_per_s"] == 1.5
    assert m["nfe"] == 4 and m["tokens_per_nfe"] == 0.75
    assert m["final_settled_at"] == 1.5


def test_tokens_after_eos_are_not_counted():
    eos = "<|endoftext|>"
    frames = [tok_frame(1.0, 0, ["Hi", "!", eos, "junk", "more", eos], final=True)]
    assert metrics(frames)["tokens"] == 2
    assert settled_fraction_series(frames) == [(1.0, 1.0)]


def test_metrics_for_text_and_stopped_runs():
    frames = [text_frame(0.2, 0, "   "), text_frame(0.4, 1, "Hq, yoz"),
              text_frame(0.6, 2, "Hi, you", usage={"completion_tokens": 3}), text_frame(0.8, 3, "Hi, you", final=True)]
    m = metrics(frames)
    assert (m["ttft"], m["tokens"], m["final_settled_at"], m["usage_tokens"], m["nfe"]) == (0.4, 3, 0.6, 3, None)
    stopped = metrics(frames[:3])
    assert stopped["final_settled_at"] is None and stopped["t_final"] == 0.6
    assert metrics([])["frames"] == 0


def test_rows_carry_what_the_player_draws():
    analyzer = SideAnalyzer()
    rows = [analyzer.add(f) for f in hand_built_trace()]
    row = rows[2]
    assert set(row) >= {"i", "t", "step", "tok", "m", "ch", "conf", "nfe", "final"}
    assert row["i"] == 2 and row["tok"] == ["Once", "", " upon", "", "<|endoftext|>", "<|endoftext|>"]
    assert row["m"] == [0, 1, 0, 1, 0, 0] and row["ch"] == [NEW, UNCHANGED, NEW, UNCHANGED, UNCHANGED, UNCHANGED]
    assert row["conf"][0] == 0.912 and rows[0]["conf"] is None
    assert rows[-1]["final"] and rows[-1]["ch"] == [UNCHANGED] * 6
    json.dumps(rows, allow_nan=False)
    assert [r["ch"] for r in rows] == change_matrix(hand_built_trace())


noisy_text = st.lists(st.sampled_from(list("ab cZ9.,!%#\n\té字") + ["<|think_end|>"]), max_size=60).map("".join)


@settings(max_examples=300, deadline=None)
@given(st.lists(noisy_text, min_size=1, max_size=8))
def test_side_analyzer_never_raises_and_rows_have_equal_lengths_for_random_text_frames(texts):
    frames = [text_frame(0.1 * i, i, s, final=i == len(texts) - 1) for i, s in enumerate(texts)]
    analyzer = SideAnalyzer()
    for f in frames:
        row = analyzer.add(f)
        assert len(row["tok"]) == len(row["ch"]) and set(row["ch"]) <= {UNCHANGED, NEW, CHANGED}
        assert "".join(row["tok"]) == f.text.replace("<|think_end|>", "")
    settled = settled_against_final(frames)
    assert [len(s) for s in settled] == [len(display_tokens(f)) for f in frames] and all(settled[-1])
    assert all(0.0 <= x <= 1.0 for _, x in settled_fraction_series(frames))
    metrics(frames)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.tuples(st.sampled_from(["a", "b", " c", "<|endoftext|>"]), st.booleans()), max_size=10),
                min_size=1, max_size=6))
def test_side_analyzer_rows_have_equal_lengths_for_random_token_frames(states):
    frames = [tok_frame(float(i), i, [t for t, _ in s], [m for _, m in s], confidence=[0.5] * len(s))
              for i, s in enumerate(states)]
    analyzer = SideAnalyzer()
    for f in frames:
        row = analyzer.add(f)
        assert len(row["tok"]) == len(row["ch"]) == len(row["m"]) == len(row["conf"])
        assert all(c != REMASKED or m for c, m in zip(row["ch"], row["m"]))
    assert all(settled_against_final(frames)[-1])
    metrics(frames)


def test_bench_pipeline_reports_the_chosen_aligner_beside_its_alternatives():
    out = bench_pipeline(n_tokens=120, passes=1, baseline_budget_s=0.05)
    for key in ("frame_ms_p50", "frame_ms_p99", "difflib_frame_ms_p50", "speedup_vs_difflib_p50",
                "positional_frame_ms_p50", "difflib_middle_frame_ms_p50", "rapidfuzz_frame_ms_p50"):
        assert key in out
    agreement = out["settled_agreement"]
    assert agreement[out["aligner"]] == max(agreement.values())
    json.dumps(out, allow_nan=False)


def test_metrics_name_each_sides_token_unit_and_give_the_time_per_token():
    local = hand_built_trace()
    local[-1].usage = {"completion_tokens": 4}  # the sampler's own count: the newline piece counts too
    m = metrics(local)
    assert (m["answer_tokens"], m["token_unit"]) == (4, "tokenizer pieces")
    assert m["time_per_token"] == 0.5 and m["tokens_per_s"] == 2.0 and m["tokens_per_nfe"] == 1.0
    stopped = metrics(local[:-1])  # stopped before its last frame, which carries the count: still the pieces shown
    assert stopped["usage_tokens"] is None and stopped["token_unit"].startswith("tokenizer pieces (those shown")
    assert stopped["answer_tokens"] == visible_count(local[-2])
    api = [text_frame(0.2, 0, "Hi"), text_frame(0.8, 1, "Hi, you", final=True, usage={"completion_tokens": 3})]
    assert (metrics(api)["answer_tokens"], metrics(api)["token_unit"]) == (3, "completion_tokens (provider's count)")
    plain = metrics([text_frame(0.5, 0, "Hi, you", final=True)])
    assert plain["answer_tokens"] == 3 and plain["token_unit"].startswith("words and symbols")
    assert plain["time_per_token"] == 0.5 / 3


def test_metrics_count_the_cache_refreshes_among_the_passes():
    frames = hand_built_trace()
    for f in frames:
        f.refreshes = min(f.nfe, 2)
    m = metrics(frames)
    assert (m["nfe"], m["refreshes"]) == (4, 2)
    assert metrics([text_frame(0.5, 0, "Hi", final=True)])["refreshes"] is None
