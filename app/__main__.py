"""Command line: `python -m app` launches the page; `record`, `generate`, `export` and `bench` run headless."""

from __future__ import annotations

import argparse
import json
import sys


def launch_parser() -> argparse.ArgumentParser:
    """The page's options: this machine only unless --host says otherwise, no public link unless --share, and what
    visitors of a served page may do."""
    from app.policy import CAPABILITIES, ENV_ALLOW, ENV_BASE_URLS, ENV_HF_MODELS

    capabilities = "\n".join(f"  {name}: {what}" for name, what in CAPABILITIES.items())
    parser = argparse.ArgumentParser(
        prog="python -m app", description="Launch the Converge page.", formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="A page bound to a loopback address is Local: everything is on. With --host anything else, --share, or "
               "on a Hugging Face Space (SPACE_ID set) it is Served: these capabilities are off for visitors until "
               f"--allow turns one back on:\n{capabilities}\n"
               f"Environment (comma-separated, for Spaces): {ENV_ALLOW}, {ENV_HF_MODELS}, {ENV_BASE_URLS}.")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    parser.add_argument("--port", type=int, default=7860)
    parser.add_argument("--share", action="store_true", help="opt in to a public Gradio share link (prints a warning)")
    parser.add_argument("--allow", action="append", default=[], choices=list(CAPABILITIES), metavar="CAPABILITY",
                        help="turn a capability back on for visitors of a served page (repeatable; listed below)")
    parser.add_argument("--hf-model", action="append", default=[], metavar="ID_OR_PATH",
                        help="a Hugging Face model visitors of a served page may run (repeatable)")
    parser.add_argument("--allow-base-url", action="append", default=[], metavar="URL",
                        help="an OpenAI-compatible base URL visitors of a served page may use, with their own key "
                             "(repeatable)")
    return parser


def launch(argv: list[str]) -> int:
    parser = launch_parser()
    args = parser.parse_args(argv)
    from app.policy import from_launch

    try:
        policy = from_launch(args.host, args.share, args.allow, args.hf_model, args.allow_base_url)
    except ValueError as e:
        parser.error(str(e))
    from app.ui.layout import launch as launch_ui

    launch_ui(host=args.host, port=args.port, share=args.share, policy=policy)
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
