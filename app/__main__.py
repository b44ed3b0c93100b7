"""Command line: `python -m app` launches the page; `record`, `generate`, `export` and `bench` run headless."""

from __future__ import annotations

import argparse
import json
import sys


def launch_parser() -> argparse.ArgumentParser:
    """The page's options: this machine only unless --host says otherwise, no public link unless --share."""
    parser = argparse.ArgumentParser(prog="python -m app", description="Launch the Converge page.")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    parser.add_argument("--port", type=int, default=7860)
    parser.add_argument("--share", action="store_true", help="opt in to a public Gradio share link (prints a warning)")
    parser.add_argument("--race-limit", type=float, default=None, metavar="SECONDS",
                        help="stop every race after this many seconds (default: CONVERGE_RACE_LIMIT, else 900 on "
                             "this machine and 180 when served with --host or --share)")
    return parser


def served(host: str, share: bool) -> bool:
    """Whether the page is served to other machines (any address but loopback, or a share link)."""
    return share or host not in ("127.0.0.1", "localhost", "::1")


def launch(argv: list[str]) -> int:
    parser = launch_parser()
    args = parser.parse_args(argv)
    from app import limits

    try:
        seconds = limits.configure(args.race_limit, served=served(args.host, args.share))
    except ValueError as e:
        parser.error(str(e))
    print(f"Races stop after {limits.limit_text(seconds)} (--race-limit SECONDS or {limits.ENV} changes it).",
          file=sys.stderr)
    from app.ui.layout import launch as launch_ui

    launch_ui(host=args.host, port=args.port, share=args.share)
    return 0


def record(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m app record", description="Run a race headless and save the recording.")
    parser.add_argument("--left", default="local-diffusion", help="source for the left side (default local-diffusion)")
    parser.add_argument("--right", default="local-ar", help="source for the right side (default local-ar)")
    parser.add_argument("--prompt", required=True)
    parser.add_argument("--out", required=True, help="recording file to write (.jsonl)")
    parser.add_argument("--left-settings", default="{}", help="JSON object of settings for the left source")
    parser.add_argument("--right-settings", default="{}", help="JSON object of settings for the right source")
    args = parser.parse_args(argv)
    from app.race import record as run_record

    try:
        settings = {"left": json.loads(args.left_settings), "right": json.loads(args.right_settings)}
    except ValueError as e:
        print(f"Settings must be JSON objects: {e}.", file=sys.stderr)
        return 2
    final = run_record(args.prompt, args.left, args.right, args.out, settings=settings)
    failed = False
    for side, entry in final["sides"].items():
        m = entry.get("metrics") or {}
        line = f"{side}: {entry['spec']} {entry['status']}, {m.get('frames', 0)} frames"
        if m.get("t_final") is not None:
            line += f", {m['t_final']:.2f} s"
        if entry.get("message"):
            line += f" ({entry['message']})"
            failed = failed or entry["status"] == "error"
        print(line)
    print(f"saved {args.out}")
    return 1 if failed else 0


def generate(argv: list[str]) -> int:
    from app.generate import main

    return main(argv)


def export(argv: list[str]) -> int:
    from app.export.cli import main

    return main(argv)


def bench(argv: list[str]) -> int:
    from app.bench import main

    return main(argv)


COMMANDS = {"record": record, "generate": generate, "export": export, "bench": bench}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in COMMANDS:
        return COMMANDS[argv[0]](argv[1:])
    return launch(argv)


if __name__ == "__main__":
    sys.exit(main())
