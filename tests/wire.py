"""The player's compact rows read back in Python, to check what app/view/payload.py `wire_rows` sends."""

from __future__ import annotations

from typing import Any


def expand_rows(wire: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The inverse of `wire_rows`: the tests' reading of the wire format, which the app itself reads only in
    app/view/player/timeline.js (`expand`)."""
    out: list[dict[str, Any]] = []
    for w in wire:
        tok = (out[-1]["tok"][:w["keep"]] if w["keep"] else []) + w["tok"]
        cf = None
        if "cf" in w:  # the first cfk confidences are the row before's
            cf = (out[-1]["cf"][:w["cfk"]] if w.get("cfk") else []) + w["cf"]
        ch = [0] * w["n"]
        for k in range(0, len(w["cs"]), 2):
            ch[w["cs"][k]] = w["cs"][k + 1]
        out.append({"i": w["i"], "t": w["t"], "step": w["step"], "tok": tok, "m": w.get("m"), "ch": ch,
                    "nfe": w.get("nfe"), "final": w.get("final", False), "sp": w["sp"], "cf": cf,
                    "cd": w.get("cd"), "pin": w.get("pin"), "note": w.get("note"), "by": w.get("by")})
    return out
