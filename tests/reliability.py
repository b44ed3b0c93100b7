"""The reliability tally: what the hardening tests tried, counted as they run, for the Reliability table in
docs/figures.md.

Tests call `tally(kind, n)`; conftest prints the table at the end of the run (and writes it as JSON when
CONVERGE_RELIABILITY_OUT names a file), so the figures always come from the suite's own output.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

COUNTS: Counter[str] = Counter()

ROWS = (
    ("hostile_strings", "hostile strings in the catalogue (tests/hostile.py)"),
    ("hostile_paths", "paths each went through (prompt box, built-in models, wire-server output, recording, upload "
                      "and library, HTML export, GIF and MP4 export)"),
    ("hostile_inputs", "hostile inputs fed through a path"),
    ("browser_checks", "pages checked in Chromium for hostile text that ran"),
    ("executed", "hostile text that executed in those checks (a sentinel set, an element injected or a handler "
                 "attribute)"),
    ("fuzz_stream_cases", "fuzzed streams requested through the real openai SDK and read by Converge's own parser"),
    ("fuzz_recording_cases", "fuzzed recording files read back"),
    ("lost_frames", "well-formed frames lost"),
    ("faults_injected", "faults injected against the loopback server (one kills the recording process itself)"),
    ("other_side_finished", "races whose other side still finished (every race with a side left to finish)"),
    ("concurrent_sessions", "concurrent page sessions held"),
    ("stopped_under_load", "sessions stopped under load"),
    ("security_attacks", "attacks on a served page replayed (remote code from an uploaded folder, the host's key "
                         "sent to a "
                         "listener, network probes, replay: of outside paths, another visitor's library, uploads when "
                         "off, keys echoed into answers)"),
    ("security_breaches", "attacks that got through"),
    ("input_attacks", "oversized or mistyped inputs sent by fn_index to every handler of a served page "
                      "(a 5 MB value in each "
                      "input, 64 KB in all of a handler's at once, 50 MB prompt and 20 MB pins bombs)"),
    ("input_misses", "of those, answered with anything but one sentence within 5 s, or echoed into the reply or the "
                     "log"),
    ("shared_attacks", "attacks on what visitors share replayed (fresh sessions from one client filling the disk, "
                       "disk bounds on files, uploads while off and over budget, a one-client queue flood with another "
                       "visitor's page loads and race, a second race from one visitor and a refused write, both in "
                       "Chromium)"),
    ("shared_breaches", "of those, that got through (a run of another visitor deleted, an upload taken while off or "
                        "over budget, a page load or race of the other visitor refused)"),
    ("disk_attack_refused", "races of fresh sessions from one client shown but not saved once its address's disk share "
                            "was full (of 40; no other visitor's run deleted)"),
    ("flood_refused", "race requests of a one-client flood refused at the queue's door (of 72; one holds a slot)"),
    ("victim_refused", "another visitor's page loads and race refused during that flood (of 29 + 1)"),
    ("bounded_races", "never-ending races (keep-alive-forever SSE, replay with a frame at t = 1e9) stopped at the "
                      "limit"),
    ("slot_recoveries", "times every race slot was filled by them and another session's race still completed"),
    ("disconnects_ended", "races ended because their API client went away"),
    ("memory_bombs", "memory bombs refused (10^6 frames, 6 million tokens, a 60 MB line, over the token cap, "
                     "a million listed candidates)"),
    ("parser_crashes", "lines that break a JSON reader, skipped and named"),
    ("capped_exports", "video exports of a 6600 s recording refused at once"),
    ("cancelled_exports", "exports cancelled mid-way, leaving no file"),
    ("route_attacks", "requests sent to the routes outside the queue of a served page (each POST route three "
                      "oversized bodies and six multipart spellings, each queued handler around the queue, an "
                      "abandoned upload, an upload asked back by its path, each route budget's share of one address "
                      "and one more, joins leaving answers unread, the deep link, never-reading connections)"),
    ("route_breaches", "of those, taken (a body held or echoed, a file stored, a handler run) or leaving the server's "
                       "peak memory over its bound"),
    ("sentinel_keys", "sentinel API keys planted"),
    ("secret_scans", "files, test outputs, logs and pages searched for them"),
    ("leaks", "keys leaked"),
)


def tally(kind: str, n: int = 1) -> None:
    """Adds `n` to one figure of the table."""
    COUNTS[kind] += n


# figures each process sets to the same number (the keys planted, the catalogue's size), not a count of what it did
ONCE_PER_PROCESS = ("sentinel_keys", "hostile_strings", "hostile_paths")


def merge(counts: dict[str, int]) -> None:
    """Adds another process's tally (a worker of a parallel run): counts add up, a once-per-process figure does not."""
    for kind, n in counts.items():
        COUNTS[kind] = max(COUNTS[kind], n) if kind in ONCE_PER_PROCESS else COUNTS[kind] + n


NOT_RUN = "not run (no browser check ran: Chromium absent or its tests not selected)"


def table(counts: Counter[str] | None = None) -> str:
    """The figures gathered so far as a Markdown table (only the rows this run touched, zeros included). What ran in
    Chromium is counted only by browser checks that happened, so a run with hostile text and no browser says 'not
    run'."""
    counts = COUNTS if counts is None else counts
    lines = ["| what | count |", "| --- | ---: |"]
    for key, label in ROWS:
        if key in counts:
            lines.append(f"| {label} | {counts[key]:,} |")
        elif key == "executed" and "hostile_strings" in counts:
            lines.append(f"| {label} | {NOT_RUN} |")
    return "\n".join(lines)


def write(path: str | Path) -> None:
    Path(path).write_text(json.dumps(dict(COUNTS), indent=2, sort_keys=True) + "\n", encoding="utf-8")
