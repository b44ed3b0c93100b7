"""`python -m app stats RECORDING [--csv FILE]`: a recording's metrics per side, and its per-frame figures as CSV.

The tables are app.analysis.tables'; this module is only the command around them, so the analysis room imports
nothing of the command line.
"""

from __future__ import annotations

import sys

from app.analysis.tables import metrics_table, write_frames_csv
from app.cli.parsers import command_parser
from app.trace.reading import RecordingError, read_recording


def main(argv: list[str]) -> int:
    """`python -m app stats`: prints the metrics table; --csv writes the per-frame table. Errors are one sentence."""
    parser = command_parser("stats", "Print a recording's metrics per side and, with --csv, write its per-frame "
                                     "figures as CSV.")
    parser.add_argument("recording", help="a recording (.jsonl) saved by a race or `python -m app record`")
    parser.add_argument("--csv", metavar="FILE", help="write the per-frame table here")
    args = parser.parse_args(argv)
    try:
        rec = read_recording(args.recording)
    except RecordingError as e:
        print(str(e), file=sys.stderr)
        return 1
    except OSError as e:
        print(f"Cannot read {args.recording}: {e.strerror or e}.", file=sys.stderr)
        return 1
    for warning in rec.warnings:
        print(warning, file=sys.stderr)
    print(metrics_table(rec).to_string())
    if args.csv:
        try:
            print(f"wrote {write_frames_csv(rec, args.csv)}")
        except OSError as e:
            print(f"Cannot write {args.csv}: {e.strerror or e}.", file=sys.stderr)
            return 1
    return 0
