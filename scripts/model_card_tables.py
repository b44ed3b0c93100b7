"""Prints the model card's loss-curve and held-out tables from the twins' training logs (`<twin>.json`).

    python -m scripts.model_card_tables [assets/models] [--every 10]

Every `--every`-th logged training point is printed (and always the last), so the card's figures are
read from the logs rather than copied by hand.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from app.ui import about


def held_out_text(h: dict[str, Any]) -> str:
    """One held-out cell: the AR next-token CE, or the diffusion twin's CE at each masking rate and its nELBO."""
    if "ce" in h:
        return f"next-token CE {h['ce']:.3f}"
    parts = [f"CE@t={k.split('=')[1]} {v:.2f}" for k, v in h.items() if k.startswith("masked_ce@")]
    return ", ".join(parts + [f"nelbo_estimate {h['nelbo_estimate']:.2f}"])


def tables(folder: Path, every: int) -> str:
    """The two markdown tables for both twins, each run of a twin that was trained in several runs on its own rows."""
    curve = ["| twin | step | tokens seen | training loss | masked-token CE | wall s |",
             "| --- | ---: | ---: | ---: | ---: | ---: |"]
    held = ["| twin | step | tokens seen | held-out (nats/token) |", "| --- | ---: | ---: | --- |"]
    runs = []  # each twin's runs, oldest first: a run that continued another keeps it under previous_run
    for twin in ("ar", "diffusion"):
        chain = [r for r in reversed(about.chain(json.loads((folder / f"{twin}.json").read_text())["training"]))
                 if "loss_curve" in r]  # a fork checkpoint logs no run of its own
        runs += [(twin if len(chain) == 1 else f"{twin} run {i + 1}", t) for i, t in enumerate(chain)]
    for twin, t in runs:
        points = t["loss_curve"]
        for i, p in enumerate(points):
            if i % every == 0 or i == len(points) - 1:
                ce = "" if twin.startswith("ar") else f"{p['masked_ce']:.3f}"
                curve.append(f"| {twin} | {p['step']} | {p['tokens']:,} | {p['loss']:.3f} | {ce} "
                             f"| {p['seconds']:.0f} |")
        fork = t.get("fork_checkpoint")
        rows = [*t["held_out_curve"], *([{"step": fork["tokens"] // (t["batch"] * t["seq"]), "tokens": fork["tokens"],
                                          **fork["held_out"]}] if fork else [])]
        last_step = t["tokens_seen_total"] // (t["batch"] * t["seq"])
        rows.append({"step": last_step, "tokens": t["tokens_seen_total"], **t["held_out"]})
        for r in sorted(rows, key=lambda r: r["step"]):
            h = {k: v for k, v in r.items() if k not in ("step", "tokens")}
            held.append(f"| {twin} | {r['step']} | {r['tokens']:,} | {held_out_text(h)} |")
    return "\n".join(curve) + "\n\n" + "\n".join(held)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", nargs="?", default="assets/models")
    ap.add_argument("--every", type=int, default=10)
    args = ap.parse_args()
    print(tables(Path(args.folder), args.every))


if __name__ == "__main__":
    main()
