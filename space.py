"""Hugging Face Spaces entry point (README front matter: `app_file: space.py`; `app/` is the package, so not app.py).

It launches the page through the normal command line, `python -m app`: on a Space (SPACE_ID set) the page binds to
0.0.0.0 as Spaces expects, and every other launch rule applies as it does locally.
"""

import sys

from app.__main__ import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
