"""`python -m app site OUT_DIR`: a static folder in which the built-in twins race in the visitor's browser.

It holds index.html (the page, with its board), page.js, race.js (the samplers, the one JavaScript copy: the ES
modules of app/site/js/, numpy's seeded generator and the player's rows from token frames among them, bundled into one
classic script by app/view/bundle.py as the player is), player.js and player.css (the page's player, as the HTML export
inlines it), the twins' ONNX graphs and the referee's, which only a board loads (app/site/graph.py), twins.json (the
tokenizer's pieces, merges and bytes, the commit filter's weights, the sampler defaults the browser must match, the
analysis constants app/site/js/rows.js reads, the board's openings) and ort/ (onnxruntime-web's WebAssembly runtime,
pinned in app/site/package.json and installed with `npm ci` here when it is missing). Any static server can host it;
it asks no other host for anything.
"""

from __future__ import annotations

import base64
import contextlib
import gzip
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable, Iterator

from app.analysis.changes import EOS_TOKENS, TOKEN_UNITS
from app.analysis.states import CODE_NAMES
from app.board.notes import PROMPTS, site_data
from app.board.prompts import prompt_set
from app.engine.autoregressive import TWIN_AR
from app.engine.diffusion import TWIN_DIFFUSION, honoured
from app.engine.model import load_twin
from app.engine.options import declared, settings_spec
from app.engine.sampling import TOP_CANDIDATES
from app.engine.tokenizer import byte_chars
from app.errors import UserError
from app.site import graph
from app.sources.local import BROWSER_SETTINGS
from app.view.bundle import bundle
from app.view.payload import asset

SITE_DIR = Path(__file__).resolve().parent
INSTALL_LOCK = ".npm-install.lock"  # in the site folder: held while npm installs the runtime there
ORT_FILES = ("ort.wasm.min.js", "ort-wasm-simd-threaded.wasm", "ort-wasm-simd-threaded.mjs")
PAGE_FILES = ("index.html", "page.js")
RACE_DIR, RACE_ENTRY = SITE_DIR / "js", "race.js"  # the browser race's ES modules, bundled into the site's race.js
PLAYER_FILES = ("player.js", "player.css")  # the page's player (app/view/player/), as the HTML export inlines it
SCRIPTS = ('<script src="ort/ort.wasm.min.js"></script>\n<script src="race.js"></script>\n'
           '<script src="player.js"></script>\n<script src="page.js"></script>')
STYLE = '<link rel="stylesheet" href="player.css">'
FOLDER_CSP = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self' 'unsafe-inline'; " \
             "img-src 'self' data:; connect-src 'self'"
# one file from file://: its own inline scripts, the runtime's glue as a blob: module, nothing fetched from anywhere
SINGLE_CSP = "default-src 'none'; script-src 'unsafe-inline' 'wasm-unsafe-eval' blob:; style-src 'unsafe-inline'; " \
             "img-src data:"
SOURCES = {"diffusion": "local-diffusion", "ar": "local-ar"}  # each twin's source (its settings the browser honours)
TYPES = {bool: "bool", int: "int", float: "float", str: "str"}
INLINED = {"cv-wasm": "ort/ort-wasm-simd-threaded.wasm", "cv-glue": "ort/ort-wasm-simd-threaded.mjs",
           "cv-twins": "twins.json", "cv-diffusion": "diffusion.onnx", "cv-ar": "ar.onnx"}  # not referee.onnx
GRAPHS = ("diffusion", "ar", "referee")  # the referee's is fetched only when a board runs
BOARD = re.compile(r'<section id="cv-board-box".*?</section>', re.S)  # the page's board, which the single file lacks
NO_BOARD = ('<p id="cv-board-box" class="cv-note cv-site-only">The board is not in this single file, which leaves out '
            "the referee's graph it needs to stay small; the folder python -m app site OUT builds runs it.</p>")


def runtime_installed(site_dir: Path = SITE_DIR) -> bool:
    """Whether onnxruntime-web's files are here already (`runtime_dir` then needs no npm)."""
    return all((_dist(site_dir) / name).is_file() for name in ORT_FILES)


def _dist(site_dir: Path) -> Path:
    return site_dir / "node_modules" / "onnxruntime-web" / "dist"


def npm_error(done: subprocess.CompletedProcess[str]) -> str:
    """What npm said went wrong: its `npm error` (or older `npm ERR!`) lines, else the last line it wrote to stderr;
    never the last line of its output, which is a success line ("added 18 packages") when npm itself succeeded."""
    lines = [line.strip() for line in (done.stderr or "").splitlines() if line.strip()]
    errors = [re.sub(r"^npm (error|ERR!)\s*", "", line) for line in lines if re.match(r"npm (error|ERR!)", line)]
    errors = [e for e in errors if e]
    if errors:
        return "; ".join(errors[:3])
    if done.returncode:
        return lines[-1] if lines else f"npm exited with status {done.returncode} and said nothing"
    return "npm reported success, but onnxruntime-web's files are not there"


@contextlib.contextmanager
def _install_lock(site_dir: Path, say: Callable[[str], None]) -> Iterator[None]:
    """Holds the site folder's install lock, so two processes never run `npm ci` in it at once; says so when it
    waits for another. (No lock where the system has no flock.)"""
    try:
        import fcntl
    except ImportError:
        yield
        return
    with open(site_dir / INSTALL_LOCK, "w") as held:
        try:
            fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            say("Waiting for another process to finish installing onnxruntime-web ...")
            fcntl.flock(held, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(held, fcntl.LOCK_UN)


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def runtime_dir(site_dir: Path = SITE_DIR, say: Callable[[str], None] = _stderr) -> Path:
    """onnxruntime-web's dist folder, installed from package-lock.json with `npm ci` the first time (a fresh
    machine, CI), said before it starts and done once: a second process waits for the first and then finds it
    there. UserError naming the fix when npm is missing, or quoting npm's error when the install fails."""
    if runtime_installed(site_dir):
        return _dist(site_dir)
    npm = shutil.which("npm")
    if npm is None:
        raise UserError("Building the site needs onnxruntime-web from npm, and npm is not installed: install Node.js "
                        "20 (with npm), then run the command again.")
    with _install_lock(site_dir, say):
        if runtime_installed(site_dir):  # another process installed it while this one waited
            return _dist(site_dir)
        say(f"Installing onnxruntime-web, the browser race's runtime, with `npm ci` into {site_dir / 'node_modules'} "
            "(once; about 20 s) ...")
        done = subprocess.run([npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund"], cwd=site_dir,
                              capture_output=True, text=True, timeout=600)
        if done.returncode or not runtime_installed(site_dir):
            raise UserError(f"`npm ci` in {site_dir} could not install onnxruntime-web: {npm_error(done)}.")
    return _dist(site_dir)


def _tokenizer(tok: Any, repeatable: Any) -> dict[str, Any]:
    """What the browser's encoder and decoder read: pieces by id, merges in rank order, each token's bytes, the
    byte alphabet, the special ids and which tokens may repeat (the stutter guard's `wordless`)."""
    model = json.loads(Path(tok.path).read_text(encoding="utf-8"))["model"]
    pieces = [""] * tok.vocab_size
    for piece, i in model["vocab"].items():
        pieces[i] = piece
    merges = [m if isinstance(m, list) else m.split(" ") for m in model["merges"]]
    return {"pieces": pieces, "merges": merges, "byte_chars": byte_chars(),
            "bytes": [list(tok.token_bytes(i)) for i in range(tok.vocab_size)],
            "eos_id": tok.eos_id, "mask_id": tok.mask_id, "pad_id": tok.pad_id,
            "repeatable": [bool(r) for r in repeatable]}


def declarations(kind: str, defaults: Any) -> dict[str, dict[str, Any]]:
    """Each setting of twin `kind` ("diffusion" or "ar") that the browser honours (app/sources/local.py
    `BROWSER_SETTINGS`), as race.js and the page read it: its type and declaration (app/engine/options.py `Option`:
    range, choices, presets, off, follows, replaces, clamp) and its page control as `settings_spec` makes it from
    `defaults` (label, choices, min, max, step, help as info)."""
    shown = settings_spec(defaults)
    out: dict[str, dict[str, Any]] = {}
    for name in BROWSER_SETTINGS[SOURCES[kind]]:
        value_type, o = declared(type(defaults))[name]
        out[name] = {"type": TYPES[value_type], "name": o.name, "min": o.min, "max": o.max, "step": o.step,
                     "choices": list(o.choices) if o.choices else None,
                     "presets": list(o.presets) if o.presets else None, "off": o.off, "follows": o.follows,
                     "replaces": o.replaces, "clamp": o.clamp, "control": shown[name]}
    return out


def twins_data() -> dict[str, Any]:
    """twins.json: the tokenizer, each twin's shape (and the referee's), the commit filter's weights, both samplers'
    defaults and the declarations of the settings the browser honours (`declarations`: the page's controls and
    race.js's checks), how many candidates a frame keeps per position (as app/engine/sampling.py `top_candidates`) and
    what the board reads (app/board/notes.py `site_data`: the page's board's openings, columns and side names)."""
    diffusion, tok = load_twin("diffusion")
    ar, _ = load_twin("ar")
    judge = diffusion.commit_filter
    weights = {k: getattr(judge, k).tolist() for k in ("mean", "scale", "w1", "b1", "w2", "b2")}
    referee, _ = load_twin("referee")
    config = {kind: vars(m.net.config) for kind, m in (("diffusion", diffusion), ("ar", ar), ("referee", referee))}
    defaults: dict[str, Any] = {"diffusion": honoured(diffusion, TWIN_DIFFUSION), "ar": TWIN_AR}
    settings = {kind: s.to_json() for kind, s in defaults.items()}
    offered = {kind: declarations(kind, s) for kind, s in defaults.items()}
    return {"tokenizer": _tokenizer(tok, diffusion.repeatable), "config": config, "filter": weights,
            "settings": settings, "declared": offered, "top_candidates": TOP_CANDIDATES,
            "analysis": {"eos_tokens": sorted(EOS_TOKENS), "token_units": TOKEN_UNITS,
                         "codes": list(CODE_NAMES)},
            "board": site_data([p.text for p in prompt_set("stories")[:PROMPTS]])}


def race_script() -> str:
    """The site's race.js: the browser race's ES modules (app/site/js/) bundled from RACE_ENTRY (app/view/bundle.py)
    inside one strict function, so none of their names but the two the entry hands the window is global."""
    return "(function () {\n\"use strict\";\n" + bundle(RACE_DIR, RACE_ENTRY) + "})();\n"


def build_site(out: str | Path) -> Path:
    """Writes the static site into folder `out` (created; files already there are replaced); returns it."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise UserError(f"{out} is a file; give the site a folder name such as site/.")
    ort_dir = runtime_dir()
    (out / "ort").mkdir(parents=True, exist_ok=True)
    for name in ORT_FILES:
        shutil.copyfile(ort_dir / name, out / "ort" / name)
    for name in PAGE_FILES:
        shutil.copyfile(SITE_DIR / name, out / name)
    (out / "race.js").write_text(race_script(), encoding="utf-8")
    for name in PLAYER_FILES:
        (out / name).write_text(asset(name), encoding="utf-8")
    for kind in GRAPHS:
        model, _ = load_twin(kind)
        graph.write(model.net, out / f"{kind}.onnx", f"converge-{kind}-twin")
    (out / "twins.json").write_text(json.dumps(twins_data(), separators=(",", ":")), encoding="utf-8")
    return out


def _script(text: str) -> str:
    """An inline <script> holding `text`, which must not close it early."""
    if "</script" in text.lower():
        raise ValueError("a script to inline contains </script")
    return f"<script>\n{text}\n</script>"


def build_single(out: str | Path, site: Path | None = None) -> Path:
    """Writes the whole site as one HTML file `out` that races from file:// with no network: the scripts inline,
    the runtime's WebAssembly, the twins' graphs and twins.json as gzip-compressed base64 blocks (single.js reads
    them). It leaves out the board, and so the referee's graph, saying so where the board would be (NO_BOARD).
    `site`: a folder `build_site` already wrote, read instead of building one afresh."""
    out = Path(out)
    if out.is_dir():
        raise UserError(f"{out} is a folder; give --single-file a file name such as converge.html.")
    if not out.parent.is_dir():
        raise UserError(f"Cannot write {out}: the folder {out.parent} does not exist.")
    with tempfile.TemporaryDirectory() as tmp:
        site = site if site is not None else build_site(Path(tmp) / "site")
        blocks = [f'<script type="application/octet-stream" id="{key}">'
                  f"{base64.b64encode(gzip.compress((site / name).read_bytes(), 6)).decode()}</script>"
                  for key, name in INLINED.items()]
        scripts = [_script(path.read_text(encoding="utf-8"))
                   for path in (site / "ort" / "ort.wasm.min.js", SITE_DIR / "single.js", site / "race.js",
                                site / "player.js", site / "page.js")]
        style = (site / "player.css").read_text(encoding="utf-8")
        page = (site / "index.html").read_text(encoding="utf-8")
    if SCRIPTS not in page or FOLDER_CSP not in page or STYLE not in page or "</style" in style.lower() \
            or len(BOARD.findall(page)) != 1:
        raise ValueError("index.html's scripts, style, board or policy changed; update app/site/build.py")
    page = BOARD.sub(lambda _: NO_BOARD, page)
    page = page.replace(FOLDER_CSP, SINGLE_CSP).replace(SCRIPTS, "\n".join(blocks + scripts))
    page = page.replace(STYLE, f"<style>\n{style}\n</style>")
    out.write_text(page, encoding="utf-8")
    return out
