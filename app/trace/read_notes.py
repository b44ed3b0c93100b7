"""What a read says about a damaged recording: the lines it skipped (and why the first was) and the lines it repaired,
named in one or two sentences (app/trace/frames.py's `read_recording` puts them in `Recording.warnings`)."""

from __future__ import annotations

MAX_NAMED_LINES = 5


def _numbers(numbers: list[int]) -> str:
    """'4', '4 and 9', '4, 9 and 12', or '4, 9, 12, 20, 31 and 7 more'."""
    shown = [str(n) for n in numbers[:MAX_NAMED_LINES]]
    if len(numbers) > MAX_NAMED_LINES:
        return f"{', '.join(shown)} and {len(numbers) - MAX_NAMED_LINES} more"
    return shown[0] if len(shown) == 1 else f"{', '.join(shown[:-1])} and {shown[-1]}"


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def read_warnings(name: str, bad: list[tuple[int, str]], repaired: list[int], total: int) -> list[str]:
    """What a read says about a damaged file: the lines skipped (and why the first was) and the lines repaired."""
    warnings: list[str] = []
    if bad:
        first_number, reason = bad[0]
        if len(bad) == 1:
            warnings.append(f"Line {first_number} of {name} is not valid ({reason}) and was skipped; "
                            f"{_n(total, 'frame')} loaded.")
        else:
            warnings.append(f"Lines {_numbers([n for n, _ in bad])} of {name} are not valid (line {first_number}: "
                            f"{reason}) and were skipped; {_n(total, 'frame')} loaded.")
    if repaired:
        warnings.append(f"{'Line' if len(repaired) == 1 else 'Lines'} {_numbers(repaired)} of {name} had bytes "
                        "that are not UTF-8; they show as \ufffd.")
    return warnings
