"""`python -m app [--host ...]`: the page, launched with who may do what (a loopback page is Local, anything else
Served), and the browser race's site built beside it."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from app.cli import commands_help
from app.cli.parsers import command_parser


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


def main(argv: list[str]) -> int:
    """Launches the page with the options given; returns when the server stops."""
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
