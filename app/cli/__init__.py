"""The command line's own modules: each command's --help (parsers.py) and `generate` (one source, no page)."""
