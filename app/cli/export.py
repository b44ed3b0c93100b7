"""`python -m app export FILE --format mp4|gif|html --out OUT`: a recorded race as a video or a self-contained page."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Callable

from app.cli.parsers import command_parser
from app.errors import UserError
from app.view.pace import HOLD, PACE

FORMATS = ("mp4", "gif", "html")


def _parser() -> argparse.ArgumentParser:
    parser = command_parser("export", "Export a recorded race as a video (MP4, GIF) or an HTML page.")
    parser.add_argument("recording", help="a recording (.jsonl) saved by a race or `python -m app record`")
    parser.add_argument("--format", choices=FORMATS, help="default: from --out's extension, else mp4")
    parser.add_argument("--out", help="file to write (default: the recording's name with the format's extension)")
    parser.add_argument("--fps", type=float, default=30, help="video frames per second (GIF: at most 50)")
    parser.add_argument("--pace", type=float, default=None,
                        help=f"watch pace in seconds, as the player's: a race of local models that ended sooner is "
                             f"stretched to last this long (default {PACE:g}; 0 is real time; a race with an API side "
                             f"keeps its real timing)")
    parser.add_argument("--speed", type=float, default=None,
                        help="playback speed against real time: 2 plays twice as fast (given alone, it replaces the "
                             "watch pace)")
    parser.add_argument("--width", type=int, default=1280, help="video width in pixels")
    parser.add_argument("--height", type=int, default=720, help="video height in pixels")
    parser.add_argument("--hold", type=float, default=HOLD,
                        help=f"seconds to hold the final state at the end of a video (default {HOLD:g})")
    loop = parser.add_mutually_exclusive_group()
    loop.add_argument("--loop", dest="loop", action="store_true", default=True,
                      help="a GIF that plays again and again (the default)")
    loop.add_argument("--once", dest="loop", action="store_false", help="a GIF that plays once and stays on its end")
    parser.add_argument("--clock", choices=("time", "passes"), default="time",
                        help="what the timeline counts: seconds, or forward passes (network calls; a side without "
                             "them keeps its seconds)")
    return parser


def main(argv: list[str]) -> int:
    """Runs the export; prints where the file went, or one clear sentence on stderr (exit 1) when it cannot."""
    args = _parser().parse_args(argv)
    suffix = Path(args.out).suffix.lower().lstrip(".") if args.out else ""
    fmt = args.format or (suffix if suffix in FORMATS else "mp4")
    if suffix in FORMATS and suffix != fmt:
        print(f"--out ends in .{suffix} but --format is {fmt}; make them agree.", file=sys.stderr)
        return 2
    out = Path(args.out) if args.out else Path(args.recording).with_suffix(f".{fmt}")
    try:
        if fmt == "html":
            return _html(args.recording, out, args.clock)
        try:
            from app.export.video import export_video
        except ImportError as e:
            print(f"Video export needs Pillow ({e.name} is not installed): pip install pillow==12.3.0.",
                  file=sys.stderr)
            return 2
        pace = args.pace if args.pace is not None else 0.0 if args.speed is not None else PACE
        export_video(args.recording, out, fmt=fmt, fps=args.fps, speed=1.0 if args.speed is None else args.speed,
                     size=(args.width, args.height), hold=args.hold, clock=args.clock, pace=pace, loop=args.loop,
                     progress=_terminal_progress() if sys.stderr.isatty() else None)
    except UserError as e:
        print(str(e), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("Export stopped; no file was written.", file=sys.stderr)
        return 130
    print(f"wrote {out}")
    return 0


def progress_bar(done: int, total: int, width: int = 30) -> str:
    """One line of text progress: `[#########.....................]  30% frame 12/40`."""
    filled = width * done // total if total else width
    percent = 100 * done // total if total else 100
    return f"[{'#' * filled}{'.' * (width - filled)}] {percent:3d}% frame {done}/{total}"


def _terminal_progress() -> Callable[[int, int], None]:
    """A progress callback that redraws the bar on stderr in place, once per whole percent, ending with a newline."""
    shown = [-1]

    def progress(done: int, total: int) -> None:
        percent = 100 * done // total if total else 100
        if percent != shown[0] or done == total:
            shown[0] = percent
            print("\r" + progress_bar(done, total), end="\n" if done == total else "", file=sys.stderr, flush=True)
    return progress


def _html(recording: str, out: Path, clock: str = "time") -> int:
    try:
        from app.export.html import export_html
    except ModuleNotFoundError as e:
        if e.name != "app.export.html":
            raise
        print("HTML export is not part of this build yet (app/export/html.py is missing); use --format mp4 or gif.",
              file=sys.stderr)
        return 2
    export_html(recording, out, clock=clock)
    print(f"wrote {out}")
    return 0
