"""Schema 2's states in analysis: change codes per position, alignment across insertions and deletions (by the lists,
never guessed), heatmap columns that stay aligned, and the settled series that counts neither noise nor drafts."""

from __future__ import annotations

from app.analysis import states as st
from app.analysis.changes import (
    SideAnalyzer,
    metrics,
    settled_against_final,
    settled_fraction_series,
    text_deletions,
    text_tokens,
)
from app.trace.frames import Frame

N, NEW, CHANGED, REMASKED, EDITED, RENOISED, INSERTED = range(7)


def uniform_frames() -> list[Frame]:
    """A uniform-state side: a canvas of noise, accepted tokens, an edit, a re-noise, an insertion with a deletion."""
    return [
        Frame(t=0.1, step=0, tokens=["x", "q", "z"], states="nnn"),
        Frame(t=0.2, step=1, tokens=["The", "q", "cat"], states="ana"),
        Frame(t=0.3, step=2, tokens=["The", "dog", "sat"], states="ada"),
        Frame(t=0.4, step=3, tokens=["The", "dog", "mat"], states="aaa"),
        Frame(t=0.5, step=4, tokens=["The", "dog", "w"], states="aan"),
        Frame(t=0.6, step=5, tokens=["The", "big", "dog", "sat"], states="adaa", inserted=[1, 3], deleted=[2]),
        Frame(t=0.7, step=6, tokens=["The", "big", "dog", "sat", "."], states="aaaaa", inserted=[4], final=True),
    ]


def rows(frames: list[Frame]) -> list[dict]:
    analyzer = SideAnalyzer()
    return [analyzer.add(f) for f in frames]


def test_each_position_gets_the_code_of_its_state_change() -> None:
    codes = [r["ch"] for r in rows(uniform_frames())]
    assert codes[0] == [N, N, N]  # noise is not news
    assert codes[1] == [NEW, N, NEW]  # accepted over noise
    assert codes[2] == [N, NEW, EDITED]  # a draft over noise; an accepted token replaced
    assert codes[3] == [N, NEW, EDITED]  # the draft accepted; edited again
    assert codes[4] == [N, N, RENOISED]  # accepted back to noise
    assert codes[5] == [N, INSERTED, N, INSERTED]
    assert codes[6] == [N, NEW, N, N, INSERTED]  # the draft "big" accepted


def test_a_rows_states_and_masks_come_from_the_frame() -> None:
    out = rows([Frame(t=0, step=0, tokens=["a", "b", "c"], states="mnd")])[0]
    assert out["st"] == "mnd" and out["m"] == [1, 0, 0] and out["tok"] == ["", "b", "c"]
    assert out["ch"] == [N, N, NEW]


def test_deleted_positions_are_listed_where_they_were_and_inserted_ones_pair_by_the_lists() -> None:
    out = rows(uniform_frames())
    assert out[5]["back"] == [0, -1, 1, -1]
    assert out[5]["del"] == [[2, 4, "w"]]
    deleted_mid = rows([Frame(t=0, step=0, tokens=list("abcd"), states="aaaa"),
                        Frame(t=1, step=1, tokens=list("acd"), states="aaa", deleted=[1])])
    assert deleted_mid[1]["back"] == [0, 2, 3] and deleted_mid[1]["del"] == [[1, 1, "b"]]
    assert deleted_mid[1]["ch"] == [N, N, N]  # c and d moved left, unchanged: aligned, not guessed as changes


def test_a_frame_without_lists_pairs_position_by_position_and_schema_1_rows_have_no_new_keys() -> None:
    assert st.previous_positions(3, 4, None, None) == [0, 1, 2, -1]
    old = rows([Frame(t=0, step=0, tokens=["a", ""], masked=[False, True]),
                Frame(t=1, step=1, tokens=["a", "b"], masked=[False, False])])
    assert all("st" not in r and "del" not in r and "back" not in r for r in old)
    assert old[1]["ch"] == [N, NEW]


def test_heatmap_columns_keep_a_position_in_its_column_across_insertions_and_deletions() -> None:
    cols, width = st.columns(rows(uniform_frames()))
    assert width == 6
    assert cols[0] == [0, 2, 5] and cols[4] == [0, 2, 5]
    assert cols[5] == [0, 1, 2, 3]  # "big" and "sat" inserted; "w" (column 5) deleted
    assert cols[6] == [0, 1, 2, 3, 4]
    plain, w = st.columns(rows([Frame(t=0, step=0, tokens=["a"]), Frame(t=1, step=1, tokens=["a", "b"])]))
    assert plain == [[0], [0, 1]] and w == 2


def test_a_position_is_settled_from_its_acceptance_with_its_final_token_and_never_as_noise_or_draft() -> None:
    settled = settled_against_final(uniform_frames())
    assert settled[0] == [False, False, False]  # noise
    assert settled[1] == [True, False, False]  # "The" accepted and kept; "cat" is edited later
    assert settled[2] == [True, False, False]  # "dog" is only a draft
    assert settled[3] == [True, True, False]  # "mat" is re-noised later
    assert settled[5] == [True, False, True, True]  # "big" still a draft
    series = settled_fraction_series(uniform_frames())
    assert [round(v, 2) for _, v in series] == [0.0, 0.2, 0.2, 0.4, 0.4, 0.6, 1.0]


def test_metrics_do_not_count_noise_as_visible() -> None:
    m = metrics(uniform_frames())
    assert m["ttft"] == 0.2 and m["tokens"] == 5 and m["final_settled_at"] == 0.7
    noisy_end = uniform_frames()[:5]
    assert metrics(noisy_end)["tokens"] == 2


def test_a_text_snapshot_that_shrinks_deletes_what_lies_past_its_new_text() -> None:
    short, long = text_tokens("I will read the file."), text_tokens("I will read the whole file.")
    assert text_deletions(short, long) == []
    assert text_deletions(long, short) == [[8, 8, "whole"], [9, 8, " "]]  # they stood before "file"
    assert text_deletions(text_tokens("I wYll r%ad"), text_tokens("I will read")) == []  # noise settled, none dropped


def mercury() -> list[Frame]:
    return [Frame(t=0.1, step=1, text="I wYll r%ad"), Frame(t=0.2, step=2, text="I will read the file."),
            Frame(t=0.3, step=3, text="I will read it.", final=True)]


def test_text_rows_draw_what_a_snapshot_dropped_where_it_stood() -> None:
    out = rows(mercury())
    assert [len(r["tok"]) for r in out] == [len(text_tokens(f.text or "")) for f in mercury()]
    assert "del" not in out[0] and "del" not in out[1]
    assert out[2]["del"] == [[7, 7, " "], [8, 7, "file"]]  # "it" took the place of "the"; " file" was dropped
    assert "st" not in out[2] and "back" not in out[2]  # a text side keeps a column a display token
    assert settled_fraction_series(mercury())[-1][1] == 1.0


def test_a_schema_1_recordings_text_rows_play_as_they_always_did() -> None:
    analyzer = SideAnalyzer(schema=1)
    assert all("del" not in analyzer.add(f) for f in mercury())


def test_the_frames_table_counts_a_text_snapshots_deletions_by_the_recordings_schema() -> None:
    from app.analysis.tables import frames_table
    from app.trace.frames import Recording, make_header

    header = make_header("p", {"left": {"name": "mercury", "settings": {}}})
    rec = Recording(header=header, frames={"left": mercury(), "right": []}, ends={}, warnings=[])
    assert frames_table(rec).deleted.tolist() == [0, 0, 2]
    old = Recording(header={**header, "schema": 1}, frames=rec.frames, ends={}, warnings=[])
    assert frames_table(old).deleted.tolist() == [0, 0, 0]


def test_the_frames_table_counts_each_kind_of_change() -> None:
    from app.analysis.tables import frames_table
    from app.trace.frames import Recording, make_header

    rec = Recording(header=make_header("p", {"left": {"name": "uniform", "settings": {}}}),
                    frames={"left": uniform_frames(), "right": []}, ends={}, warnings=[])
    table = frames_table(rec)
    assert table.edited.tolist() == [0, 0, 1, 1, 0, 0, 0] and table.renoised.tolist() == [0, 0, 0, 0, 1, 0, 0]
    assert table.inserted.tolist() == [0, 0, 0, 0, 0, 2, 1] and table.deleted.tolist() == [0, 0, 0, 0, 0, 1, 0]


def old_dropped(prev: list[str], back: list[int], deleted: list[int] | None, now: int) -> list[list]:
    """dropped() as it was before issue 49: a scan to the end of the previous frame for each deleted position."""
    if not deleted:
        return []
    after = {j: i for i, j in enumerate(back) if j >= 0}
    return [[j, next((after[k] for k in range(j + 1, len(prev)) if k in after), now), prev[j]]
            for j in sorted(p for p in set(deleted) if p < len(prev))]


def test_deletions_are_placed_in_one_pass_as_the_scan_to_the_end_placed_them() -> None:
    import random

    rng = random.Random(49)
    for _ in range(3000):
        before = rng.randint(0, 12)
        prev = [f"t{j}" for j in range(before)]
        deleted = rng.sample(range(before + 3), rng.randint(0, before + 2)) + rng.sample(range(before + 1), 1)
        inserted = rng.sample(range(before + 4), rng.randint(0, 4))
        now = before - len({d for d in deleted if d < before}) + len(inserted)
        now = max(0, now + rng.randint(-2, 2))
        back = st.previous_positions(before, now, inserted, deleted)
        assert st.dropped(prev, back, deleted, now) == old_dropped(prev, back, deleted, now)
