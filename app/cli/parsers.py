"""How every `python -m app ...` command describes itself: one parser factory, so each `--help` shows its defaults."""

from __future__ import annotations

import argparse


class DefaultsFormatter(argparse.ArgumentDefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter):
    """Appends "(default: X)" to an option's help unless the help already names its default or there is none to show
    (a flag, a required option, an option whose default is unset); descriptions and epilogs keep their line breaks."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if "default" in text or action.default in (None, []) or action.required or action.nargs == 0:
            return text
        return super()._get_help_string(action) or ""


def command_parser(command: str, description: str, epilog: str | None = None) -> argparse.ArgumentParser:
    """The parser of `python -m app COMMAND` ("" for the page itself), showing each option's default in --help."""
    prog = f"python -m app {command}".rstrip()
    return argparse.ArgumentParser(prog=prog, description=description, epilog=epilog,
                                   formatter_class=DefaultsFormatter)
