"""The "race" bench section: each twin's own clock in a race read the way the page reads it, against the twin alone.

The page consumes a race through `live_updates(race, interval=UPDATE_INTERVAL)` and turns every update into the
player's payload (`live_payload`, then its JSON, `player_json`, as the page's `to_player` sends it) in the
consumer's thread, beside the two sides: that work is part of the conditions a race runs under, so the bench does
exactly the same (only the browser and the network are left out). "Alone" races the twin against a replay of the
other twin's recorded run (a replay costs no CPU), consumed the same way. A figure is a side's time to its final
frame on its own clock; the median and the worst of `repeats` runs are reported, with the updates and payload
bytes the consumer built per race.
"""

from __future__ import annotations

import statistics
import tempfile
from pathlib import Path
from typing import Any

from app.race.run import Race
from app.trace.reading import read_recording
from app.ui.live import live_updates
from app.view.payload import UPDATE_INTERVAL, live_payload, new_run_id, player_json

PROMPT = "Once upon a time, there was a little girl named Lily."


def consume_like_page(race: Race) -> tuple[int, int]:
    """Runs `race` to its end as the page's Run handler does; returns (updates, payload bytes) built."""
    run, updates, size = new_run_id(), 0, 0
    for seq, snapshot in enumerate(live_updates(race, interval=UPDATE_INTERVAL)):
        size += len(player_json(live_payload(snapshot, run, seq)))
        updates += 1
    return updates, size


def _t_final(path: Path, side: str) -> float:
    return read_recording(path).frames[side][-1].t


def bench(prompt: str = PROMPT, repeats: int = 3) -> dict[str, Any]:
    """`python -m app bench --only race`: each twin's time to final in a race and alone, both read like the page."""
    runs: dict[str, list[float]] = {"diffusion_in_race": [], "ar_in_race": [], "diffusion_alone": [], "ar_alone": []}
    consumer: dict[str, list[int]] = {"updates": [], "payload_bytes": []}
    with tempfile.TemporaryDirectory() as tmp:
        first = Path(tmp) / "race-0.jsonl"
        consume_like_page(Race(prompt, "local-diffusion", "local-ar", out=first))  # warm-up; the replays play it
        for k in range(repeats):
            race = Path(tmp) / f"race-{k + 1}.jsonl"
            updates, size = consume_like_page(Race(prompt, "local-diffusion", "local-ar", out=race))
            consumer["updates"].append(updates)
            consumer["payload_bytes"].append(size)
            runs["diffusion_in_race"].append(_t_final(race, "left"))
            runs["ar_in_race"].append(_t_final(race, "right"))
            alone = Path(tmp) / f"alone-{k}.jsonl"
            consume_like_page(Race(prompt, "local-diffusion", f"replay:{first}#right", out=alone))
            runs["diffusion_alone"].append(_t_final(alone, "left"))
            consume_like_page(Race(prompt, f"replay:{first}", "local-ar", out=alone))
            runs["ar_alone"].append(_t_final(alone, "right"))
    med = {k: round(statistics.median(v), 3) for k, v in runs.items()}
    worst = {k: round(max(v), 3) for k, v in runs.items()}
    return {"consumer": {"interval_s": UPDATE_INTERVAL, "builds": "live_payload + to_player JSON, as the page",
                         "updates_per_race": consumer["updates"], "payload_bytes_per_race": consumer["payload_bytes"]},
            "seconds_median": med, "seconds_worst": worst,
            "runs": {k: [round(x, 3) for x in v] for k, v in runs.items()},
            "diffusion_slowdown_in_race": round(med["diffusion_in_race"] / med["diffusion_alone"], 2),
            "ar_slowdown_in_race": round(med["ar_in_race"] / med["ar_alone"], 2),
            "settings": "both twins at their defaults, 128 tokens; 'alone' races the twin against a replay"}
