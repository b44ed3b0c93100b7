"""`python -m app site OUT_DIR [--single-file]`: write the static site (or one HTML file) in which the built-in twins
race in the visitor's browser."""

from __future__ import annotations

import argparse
import sys

from app.cli.parsers import command_parser
from app.errors import UserError

DESCRIPTION = "Write a static site where the built-in twins race in the visitor's browser (no server)."


def _parser() -> argparse.ArgumentParser:
    parser = command_parser("site", DESCRIPTION)
    parser.add_argument("out", metavar="OUT_DIR",
                        help="folder to write: index.html, the twins' ONNX graphs, the samplers and onnxruntime-web "
                             "(any static server can host it); with --single-file, the HTML file to write")
    parser.add_argument("--single-file", action="store_true",
                        help="write one HTML file with everything inlined, which races from file:// with no network")
    return parser


def main(argv: list[str]) -> int:
    """Builds the site; prints where it went and its size, or one clear sentence on stderr (exit 1)."""
    args = _parser().parse_args(argv)
    from app.site.build import build_single, build_site

    try:
        out = build_single(args.out) if args.single_file else build_site(args.out)
    except UserError as e:
        print(str(e), file=sys.stderr)
        return 1
    except ImportError as e:
        print(f"Building the site needs the onnx package ({e.name} is missing): pip install -r requirements.txt.",
              file=sys.stderr)
        return 2
    if args.single_file:
        print(f"wrote {out} ({out.stat().st_size / 1e6:.1f} MB): open it in a browser, no server or network needed")
        return 0
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    print(f"wrote {out}/ ({size / 1e6:.1f} MB): serve it with any static server, e.g. "
          f"python -m http.server -d {out}, and open index.html")
    return 0
