"""Pinned text (infilling): text a user fixes at answer positions before a diffusion run.

A pin is written "POSITION:TEXT" (POSITION counts answer tokens from 0). The diffusion sampler takes
the pins as token ids that are given from the first step: never masked, committed or remasked. Only a
masked-diffusion model can use them, since it sees both sides of every masked position.
"""

from __future__ import annotations

from typing import Any

from app.errors import UserError, counted

PINS_REFUSAL = ("Pins need a source that writes around them, the built-in diffusion twin or a masked diffusion model: "
                "remove the pins or pick one on a side.")  # pins given while neither side takes them
AR_PINS = ("{source} takes no pins, because an autoregressive model cannot see text that comes after what it writes: "
           "remove the pins or pin on the diffusion side.")  # an autoregressive source given pins


def parse_pin(spec: str) -> tuple[int, str]:
    """One "POSITION:TEXT" as (position, text); a UserError naming the fix when it is not that."""
    head, sep, text = str(spec).partition(":")
    if not sep or not head.strip().isdigit():
        raise UserError(f"Pin {spec!r} is not POSITION:TEXT: write it like 40:the end (a position counted from 0).")
    if not text:
        raise UserError(f"Pin {spec!r} has no text after the colon: write the text to pin, like 40:the end.")
    return int(head), text


def resolve_pins(tok: Any, specs: tuple[str, ...] | list[str], gen_length: int) -> dict[int, int]:
    """The pins as {answer position: token id}; a UserError naming the fix for pins that do not fit."""
    ids: dict[int, int] = {}
    total = 0
    for spec in specs:
        pos, text = parse_pin(spec)
        tokens = list(tok.encode(text))
        if not tokens or tok.decode(tokens) != text:
            raise UserError(f"Pinned text {text!r} does not tokenize to whole positions: "
                            "use plain text this model's tokenizer spells exactly, or drop that pin.")
        total += len(tokens)
        if total > gen_length:
            raise UserError(f"The pins are {counted(total, 'token')} but the answer is {gen_length}: "
                            "shorten the pins or raise the answer length.")
        if pos + len(tokens) > gen_length:
            raise UserError(f"Pin {spec!r} ({counted(len(tokens), 'token')} at {pos}) falls outside the answer of "
                            f"{gen_length} tokens: pin it at {gen_length - len(tokens)} or earlier.")
        for i, t in enumerate(tokens):
            if pos + i in ids:
                raise UserError(f"Pin {spec!r} overlaps another pin at position {pos + i}: "
                                "move one of them so they do not share positions.")
            ids[pos + i] = int(t)
    return ids
