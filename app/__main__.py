"""Command line: `python -m app` launches the page; `record`, `pairs`, `generate`, `export`, `stats`, `site` and
`bench` run headless (COMMANDS lists each with its one line of help)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from app.cli.parsers import command_parser
from app.errors import counted


def default_host() -> str:
    """127.0.0.1 (this machine only), except on a Hugging Face Space (SPACE_ID set), which must answer on 0.0.0.0."""
    return "0.0.0.0" if os.environ.get("SPACE_ID") else "127.0.0.1"


def launch_parser() -> argparse.ArgumentParser:
    """The page's options: this machine only unless --host says otherwise, no public link unless --share, and what
    visitors of a served page may do."""
    from app.serving.policy import CAPABILITIES, ENV_ALLOW, ENV_BASE_URLS, ENV_HF_MODELS
    from app.trace.store import KEEP_DAYS

    capabilities = "\n".join(f"  {name}: {what}" for name, what in CAPABILITIES.items())
    trust = ("A page bound to a loopback address is Local: everything is on. With --host anything else, --share, or "
             "on a Hugging Face Space (SPACE_ID set) it is Served: these capabilities are off for visitors until "
             f"--allow turns one back on:\n{capabilities}\n"
             f"Environment (comma-separated, for Spaces): {ENV_ALLOW}, {ENV_HF_MODELS}, {ENV_BASE_URLS}.")
    parser = command_parser("", "Launch the Converge page.", epilog=f"{trust}\n\n{commands_help()}")
    parser.add_argument("--host", default=default_host(),
                        help="address to bind: this machine only, or 0.0.0.0 when running on a Hugging Face Space")
    parser.add_argument("--port", type=int, default=7860, help="port to serve the page on")
    parser.add_argument("--share", action="store_true", help="opt in to a public Gradio share link (prints a warning)")
    parser.add_argument("--allow", action="append", default=[], choices=list(CAPABILITIES), metavar="CAPABILITY",
                        help="turn a capability back on for visitors of a served page (repeatable; listed below)")
    parser.add_argument("--hf-model", action="append", default=[], metavar="ID_OR_PATH",
                        help="a Hugging Face model visitors of a served page may run (repeatable)")
    parser.add_argument("--allow-base-url", action="append", default=[], metavar="URL",
                        help="an OpenAI-compatible base URL visitors of a served page may use, with their own key "
                             "(repeatable)")
    parser.add_argument("--race-limit", type=float, default=None, metavar="SECONDS",
                        help="stop every race after this many seconds (default: CONVERGE_RACE_LIMIT, else 900 on "
                             "this machine and 180 when served)")
    parser.add_argument("--keep-runs-days", type=float, default=KEEP_DAYS, metavar="DAYS",
                        help="delete a visitor's saved run of a served page once it is this many days old (runs in "
                             "recordings/visitors/ only; the shared library and the examples are never deleted)")
    parser.add_argument("--no-browser-race", action="store_true",
                        help="do not build and serve the static site, so the twins race only on this server (by "
                             "default the page offers to race them in the visitor's browser; docs/site.md)")
    return parser


def browser_site(install: bool) -> Path | None:
    """The static site (`python -m app site`) built into a fresh temporary folder, removed at exit, for the page's
    browser race; None, with one line on stderr, where it cannot be built (no npm, no onnx). With `install` (a served
    page, whose class races in the browser by default) onnxruntime-web is installed with npm when missing; a local
    page, which races on this machine by default, never waits on npm at start-up."""
    import atexit
    import shutil
    import tempfile

    try:
        from app.site.build import build_site, runtime_installed

        if not (install or runtime_installed()):
            print("The twins race only on this server: onnxruntime-web is not installed for the browser race "
                  "(`python -m app site site/` installs it with npm once).", file=sys.stderr)
            return None
        folder = Path(tempfile.mkdtemp(prefix="converge-site-"))
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        return build_site(folder / "site")
    except ImportError as e:
        why = f"the onnx package ({e.name}) is missing"
    except Exception as e:  # UserError (npm), or anything else: the page still serves its own races
        why = str(e).rstrip(".")
    print(f"The twins race only on this server: the browser race's site could not be built ({why}).",
          file=sys.stderr)
    return None


def launch(argv: list[str]) -> int:
    parser = launch_parser()
    args = parser.parse_args(argv)
    from app.race import limits
    from app.serving.policy import from_launch
    from app.trace import store

    try:
        policy = from_launch(args.host, args.share, args.allow, args.hf_model, args.allow_base_url)
        seconds = limits.configure(args.race_limit, served=policy.served)
        store.configure(args.keep_runs_days)
    except ValueError as e:
        parser.error(str(e))
    store.start_sweeper()  # visitors' runs past their age and empty owner folders go, every few minutes
    print(f"Races stop after {limits.limit_text(seconds)} (--race-limit SECONDS or {limits.ENV} changes it).",
          file=sys.stderr)
    from app.ui.layout import launch as launch_ui

    site = None if args.no_browser_race else browser_site(install=policy.served)
    launch_ui(host=args.host, port=args.port, share=args.share, policy=policy, site=site)
    return 0


def record(argv: list[str]) -> int:
    parser = command_parser("record", COMMANDS["record"][1])
    parser.add_argument("--left", default=None, help="source for the left side (default: local-diffusion)")
    parser.add_argument("--right", default=None, help="source for the right side (default: local-ar)")
    parser.add_argument("--pair", default=None, metavar="NAME",
                        help="race a pair of real models (python -m app pairs lists them); --left/--right and their "
                             "settings override its parts. Checks the memory before anything is downloaded")
    parser.add_argument("--prompt", required=True, help="the prompt both sides answer")
    parser.add_argument("--out", required=True, help="recording file to write (.jsonl)")
    parser.add_argument("--left-settings", default="{}", help="JSON object of settings for the left source")
    parser.add_argument("--right-settings", default="{}", help="JSON object of settings for the right source")
    parser.add_argument("--pin", action="append", default=[], metavar="POSITION:TEXT",
                        help="fix TEXT at answer position POSITION of the left (diffusion) side (repeatable)")
    args = parser.parse_args(argv)
    from app.view.live import record as run_record

    try:
        settings = {"left": json.loads(args.left_settings), "right": json.loads(args.right_settings)}
    except ValueError as e:
        print(f"Settings must be JSON objects: {e}.", file=sys.stderr)
        return 2
    left, right = args.left or "local-diffusion", args.right or "local-ar"
    if args.pair:
        from app.errors import UserError
        from app.sources.pairs import check_machine, pair

        try:
            chosen = pair(args.pair)
            check_machine(chosen)
        except UserError as e:
            print(e, file=sys.stderr)
            return 2
        left, right = args.left or chosen.left, args.right or chosen.right
        settings = {"left": {**(chosen.left_settings if not args.left else {}), **settings["left"]},
                    "right": {**(chosen.right_settings if not args.right else {}), **settings["right"]}}
    if args.pin:
        settings["left"]["pins"] = args.pin
    if refused(left, right, settings):
        return 2
    from app.hf.download import watch

    with watch(lambda line: print(line, file=sys.stderr, flush=True)):  # a model's first download, as it goes
        final = run_record(args.prompt, left, right, args.out, settings=settings)
    failed = False
    for side, entry in final["sides"].items():
        m = entry.get("metrics") or {}
        line = f"{side}: {entry['spec']} {entry['status']}, {counted(m.get('frames', 0), 'frame')}"
        if m.get("t_final") is not None:
            line += f", {m['t_final']:.2f} s"
        if entry.get("message"):
            line += f" ({entry['message']})"
            failed = failed or entry["status"] == "error"
        print(line)
    print(f"saved {args.out}")
    return 1 if failed else 0


def refused(left: str, right: str, settings: dict[str, dict[str, object]]) -> bool:
    """Whether a setting of either side is one its source does not honour, or a pin is not POSITION:TEXT, said in one
    sentence on stderr before anything loads or a file is written."""
    from app.errors import UserError
    from app.sources.base import honoured
    from app.sources.local import as_pins

    try:
        for spec, given in ((left, settings["left"]), (right, settings["right"])):
            honoured(spec, given)
            as_pins(given.get("pins") or ())
    except UserError as e:
        print(e, file=sys.stderr)
        return True
    return False


def pairs(argv: list[str]) -> int:
    parser = command_parser("pairs", COMMANDS["pairs"][1])
    parser.add_argument("--json", action="store_true", help="print the pairs as JSON, with this machine's verdict")
    args = parser.parse_args(argv)
    from app.errors import UserError
    from app.sources.pairs import PAIRS, check_machine

    rows = []
    for p in PAIRS.values():
        try:
            check_machine(p)
            fits = None
        except UserError as e:
            fits = str(e)
        rows.append({**p.to_json(), "fits_here": fits is None, "why_not": fits})
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    for r in rows:
        size = f"{r['download_gb']:g} GB download, {r['memory_gb']:g} GB memory" if r["memory_gb"] else "no download"
        print(f"{r['name']}: {r['title']} [{r['device']}; {size}]\n  left {r['left']}, right {r['right']}\n"
              f"  {r['note']}" + (f"\n  not here: {r['why_not']}" if r["why_not"] else ""))
    return 0


def generate(argv: list[str]) -> int:
    from app.cli.generate import main

    return main(argv)


def export(argv: list[str]) -> int:
    from app.export.cli import main

    return main(argv)


def stats(argv: list[str]) -> int:
    from app.cli.stats import main

    return main(argv)


def site(argv: list[str]) -> int:
    from app.site.cli import main

    return main(argv)


def bench(argv: list[str]) -> int:
    from app.bench import main

    return main(argv)


# each subcommand and the one line `python -m app --help` shows for it
COMMANDS = {
    "record": (record, "Run a race headless and save the recording."),
    "pairs": (pairs, "List the pairs of real models to race (record --pair NAME), their size and the device they "
                     "suit."),
    "generate": (generate, "Run one source on one prompt and print its answer (or JSON with its figures)."),
    "export": (export, "Export a recorded race as a video (MP4, GIF) or a self-contained HTML page."),
    "stats": (stats, "Print a recording's metrics per side; --csv writes its per-frame figures."),
    "site": (site, "Write a static site where the built-in twins race in the visitor's browser (no server)."),
    "bench": (bench, "Measure every speed and quality figure the docs quote (docs/figures.md)."),
}


def commands_help() -> str:
    """The epilog of `python -m app --help`: every subcommand with its one line."""
    width = max(map(len, COMMANDS))
    lines = [f"  {name.ljust(width)}  {line}" for name, (_, line) in COMMANDS.items()]
    return "commands (python -m app COMMAND --help for its options):\n" + "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in COMMANDS:
        return COMMANDS[argv[0]][0](argv[1:])
    return launch(argv)


if __name__ == "__main__":
    sys.exit(main())
