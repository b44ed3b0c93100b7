"""`--start-from TEXT|@RECORDING[#side] --renoise SHARE [--renoise-where random|unsure|START:END]`: the flags of
`generate` and `record` that start a run from a draft (issue 53), read into the race's one `Revision`."""

from __future__ import annotations

import argparse

from app.engine.draft import Revision
from app.errors import UserError
from app.sources.revise import recorded_answer

DEFAULT_SHARE = 0.3  # what --start-from re-noises when --renoise is left out


def add_flags(p: argparse.ArgumentParser) -> None:
    """Adds the draft flags to a command's parser."""
    p.add_argument("--start-from", default=None, metavar="TEXT|@RECORDING[#side]",
                   help="start from a draft instead of nothing: TEXT as typed, or @RECORDING[#side] for the final "
                        "answer of that side (default left) of a recording (a file, or a library id like "
                        "example/NAME.jsonl); @@ starts a typed draft with @. A diffusion side revises it in place; an "
                        "AR side keeps it up to the first re-noised position and writes the rest again")
    p.add_argument("--renoise", default=None, metavar="SHARE",
                   help=f"with --start-from: the share of the draft's tokens to re-noise, 0 to 1 or 0%% to 100%% "
                        f"(default: {DEFAULT_SHARE:g})")
    p.add_argument("--renoise-where", default="random", metavar="random|unsure|START:END",
                   help="with --start-from: which tokens to re-noise: random (drawn with --renoise-seed), unsure "
                        "(those the model finds least likely, from one forward pass over the draft) or the share of a "
                        "span of answer tokens START:END (END exclusive)")
    p.add_argument("--renoise-seed", default="0", metavar="N", help="with --start-from: the seed of random positions")


def parse_share(text: str) -> float:
    """A share written 0.3 or 30% as a number from 0 to 1; a UserError naming the fix for anything else."""
    raw = str(text).strip()
    percent = raw.endswith("%")
    try:
        value = float(raw[:-1] if percent else raw)
    except ValueError:
        raise UserError(f"--renoise {text!r} is not a share: write it like 0.3 or 30%.") from None
    value = value / 100 if percent else value
    if not 0.0 <= value <= 1.0 or value != value:
        raise UserError(f"--renoise {text!r} is not between 0 and 1 (0% and 100%): pick a share in that range.")
    return value


def revision_of(args: argparse.Namespace) -> Revision | None:
    """The revision the flags ask for, None without --start-from; a UserError naming the fix for bad flags."""
    given = args.renoise is not None or args.renoise_where != "random" or args.renoise_seed != "0"
    if args.start_from is None:
        if given:
            raise UserError("--renoise, --renoise-where and --renoise-seed need --start-from: give the draft to start "
                            "from (TEXT or @RECORDING).")
        return None
    text = args.start_from
    if text.startswith("@@"):
        text = text[1:]
    elif text.startswith("@"):
        text = recorded_answer(text[1:])
    if not str(args.renoise_seed).isdigit():
        raise UserError(f"--renoise-seed {args.renoise_seed!r} is not a whole number from 0: write it like 7.")
    share = DEFAULT_SHARE if args.renoise is None else parse_share(args.renoise)
    return Revision(text, share=share, where=args.renoise_where, seed=int(args.renoise_seed))
