"""The race box's choice of where the twins race: on this server (the Run handler) or in the visitor's browser.

When both sides are the built-in twins (local-diffusion against local-ar) and the page was launched with the static
site's folder (app/ui/site_files.py serves it), the race box offers "Run on: this server / your browser", "your
browser" by default on a served page, so that a class does not queue on the server's CPUs. The browser's Run has no
handler on the server (`fn=None`): app/ui/browser_race.js reads the prompt and the twins' settings in the browser,
loads the site's runtime and samplers from the page's origin, and draws the race in the page's player through
app/site/js/race.js `draw` (the static site's one implementation). Once the browser has taken the settings, it clicks
the hidden `#browser-began`, whose one small call (`began`, outside the queue) stops the session's race on the
server; settings it refuses leave the server's race alone. Choosing which Run button shows is done in the browser
too. Which twin settings the browser honours comes from app/sources/local.py `BROWSER_SETTINGS`, the list the static
site's race.js checks against (`spec_of` marks each input); other sources, and pins, keep the server's race.

Every run is saved: when a browser race ends (or Stop ends it, keeping the frames so far), browser_race.js hands its
frames, gzip-compressed, to the hidden box `#browser-kept`, and `keep` saves them in the visitor's own library like a
race run here: within the input's size limit, checked before any work, decompressed only up to a bound, each side's
settings validated by its own source against the bounds a race run here meets, each frame read as a recording line
is, under the same disk bounds (`make_room`) and the same caps on what a recording may cost to read. The recording's
header says where it ran (`ran_in`), and whatever shows it says "ran in a visitor's browser" (app/trace/frames.py
`origin`). It becomes the run the exports make files from. A page whose library is shared by every visitor saves none
unless the host allows uploads, since the frames are the visitor's word, not the server's run.
"""

from __future__ import annotations

import base64
import binascii
import json
import zlib
from typing import Any

import gradio as gr

from app.analysis.revision import plan as side_plan
from app.engine.draft import Revision
from app.errors import UserError
from app.race.run import recording_name
from app.serving.policy import Policy
from app.sources.local import BROWSER_SETTINGS, make_local_ar, make_local_diffusion
from app.trace.frames import SIDES, Frame, Recording, make_header, write_recording
from app.trace.reading import RecordingError, read_recording
from app.trace.store import RUN_MAX_BYTES, make_room, user_dir, written
from app.ui.draft_ui import LAST, LIBRARY, NOTHING, TYPED, WHERE
from app.ui.events import QUIET, READS
from app.ui.library_ui import library_view
from app.ui.sessions import as_visitor, remember, session_of, stop_session_race
from app.ui.site_files import SITE_ROUTE
from app.ui.visitor import Visitor

ON_SERVER, ON_BROWSER = "this server", "your browser"
TWINS = ("local-diffusion", "local-ar")
RACING = "Racing in your browser: the twins run on this device (onnxruntime-web), not on the server."
RAN = ("Ran in your browser: the twins ran on this device (onnxruntime-web); the run goes to the server when it ends, "
       "or at Stop with every frame made so far, to be saved in your library.")
# which Run button shows: the browser's only while both sides are the twins and "your browser" is chosen
SHOW_JS = (f"(left, right, on) => {{ const twins = left === {json.dumps(TWINS[0])} && right === {json.dumps(TWINS[1])};"
           f" const mine = twins && on === {json.dumps(ON_BROWSER)}; return [{{__type__: 'update', visible: twins}},"
           " {__type__: 'update', visible: !mine}, {__type__: 'update', visible: mine}]; }")
BEGAN_ID = "browser-began"  # the hidden button browser_race.js clicks once it races: `began` runs
KEPT_ID = "browser-kept"  # the hidden box browser_race.js writes a finished race into (app/ui/guard.py limits it)
RAN_IN = "the visitor's browser (onnxruntime-web, WebAssembly)"  # the header's `ran_in` for a race saved by `keep`
UNPACKED_BYTES = 8 * 2**20  # the most a race may take once decompressed: twice a race at the twins' longest answer
ENDS = ("done", "stopped")  # how a browser race's side may end
MAKERS = {TWINS[0]: make_local_diffusion, TWINS[1]: make_local_ar}
# the "Start from a draft" box's words (app/ui/draft_ui.py), by which browser_race.js reads its values: a draft typed
# races in the browser; the last race's side and a recording are the server's to read, so they race there
SERVER_DRAFT = ("The browser race starts from a draft you type; the last race's side or a recording is read on the "
                "server: pick Run on: this server to start from it.")
DRAFT_WORDS = {"nothing": NOTHING, "typed": TYPED, "elsewhere": [LAST, LIBRARY], "where": WHERE,
               "refused": SERVER_DRAFT}
NOT_SAVED = "The race ran in your browser but was not saved: "
TOO_LONG = "a number in it has more digits than any setting or frame may hold."


def default_place(policy: Policy) -> str:
    """Where the twins race unless the visitor picks: in the browser on a served page, on this machine otherwise."""
    return ON_BROWSER if policy.served else ON_SERVER


def place_box(policy: Policy, twins: bool) -> tuple[Any, Any]:
    """The "Run on" choice and the browser's Run button, where they are called (beside the server's Run)."""
    place = gr.Radio([ON_SERVER, ON_BROWSER], value=default_place(policy), label="Run on", elem_id="run-on",
                     visible=twins)
    mine = twins and default_place(policy) == ON_BROWSER
    browser_run = gr.Button("Run", variant="primary", elem_id="run-browser", visible=mine)
    return place, browser_run


def spec_of(controls: dict[str, Any]) -> dict[str, Any]:
    """What browser_race.js reads: the site's address, the captions, the hidden button it clicks as a race begins,
    the hidden box it hands a finished race to, and for each twin's setting (in the order the Run button passes them)
    its side, name, label, default, whether an empty box means the default and whether the browser's samplers honour
    it (app/sources/local.py `BROWSER_SETTINGS`, the list the static site's race.js checks against), and the draft
    box's words (`DRAFT_WORDS`), whose values follow the settings."""
    inputs = [{"side": side, "name": name, "label": str(spec.get("label", name)), "default": spec.get("default"),
               "own": bool(spec.get("own")), "offered": name in BROWSER_SETTINGS[kind]}
              for side, kind in zip(("left", "right"), TWINS)
              for prefix, name, spec, _ in controls[side].settings if prefix == kind]
    return {"base": SITE_ROUTE.lstrip("/"), "racing": RACING, "ran": RAN, "inputs": inputs, "began": BEGAN_ID,
            "kept": KEPT_ID, "draft": DRAFT_WORDS}


def wire_place(box: Any) -> None:
    """Shows the right Run button as the sides and the choice change, and races in the browser on its Run: all in
    the browser, no handler on the server."""
    left, right = box.controls["left"], box.controls["right"]
    shown = {"fn": None, "inputs": [left.kind, right.kind, box.place], "outputs": [box.place, box.run_btn,
                                                                                   box.browser_run],
             "js": SHOW_JS, **QUIET, "queue": False}
    for component in (left.kind, right.kind, box.place):
        component.change(**shown)
    settings = [c for side, kind in zip(("left", "right"), TWINS)
                for prefix, _, _, c in box.controls[side].settings if prefix == kind]
    race_js = f"(...values) => {{ window.ConvergeBrowserRace.run({json.dumps(spec_of(box.controls))}, values); }}"
    drafts = box.draft.inputs() if getattr(box, "draft", None) is not None else []
    box.browser_run.click(fn=None, inputs=[box.prompt, box.pins, left.kind, right.kind, *settings, *drafts],
                          js=race_js, **QUIET, queue=False)


def kept_box() -> Any:
    """The hidden box through which browser_race.js hands a finished browser race to `keep`, where it is called."""
    return gr.Textbox(visible="hidden", elem_id=KEPT_ID, label="A race run in your browser")


def began_button() -> Any:
    """The hidden button browser_race.js clicks once the browser has taken the settings and races, where it is
    called."""
    return gr.Button("A race began in your browser", visible="hidden", elem_id=BEGAN_ID)


def unpack(packed: str) -> dict[str, Any]:
    """The race browser_race.js packed (base64 of gzip-compressed JSON), decompressed only up to UNPACKED_BYTES;
    UserError when it is not one."""
    try:
        inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)  # gzip's header
        data = inflate.decompress(base64.b64decode(packed, validate=True), UNPACKED_BYTES)
        if inflate.unconsumed_tail or not inflate.eof:
            raise UserError(NOT_SAVED + "it is larger than the server keeps.")
        race = json.loads(data.decode("utf-8"))
    except (binascii.Error, zlib.error, UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        raise UserError(NOT_SAVED + "what the page sent could not be read.") from None
    except ValueError:  # json's own refusal of a number of over 4,300 digits (Python's int conversion limit)
        raise UserError(NOT_SAVED + TOO_LONG) from None
    if not isinstance(race, dict) or not isinstance(race.get("prompt"), str) or not isinstance(race.get("sides"), dict):
        raise UserError(NOT_SAVED + "what the page sent is not a race.")
    return race


def revision_sent(race: dict[str, Any]) -> Revision | None:
    """The draft a browser race says it started from (`draft`: Revision's fields), checked as one typed here is;
    None for a race from nothing; UserError naming what is wrong."""
    given = race.get("draft")
    if given is None:
        return None
    if not isinstance(given, dict) or set(given) - {"text", "share", "where", "seed"} \
            or not isinstance(given.get("text"), str) or not isinstance(given.get("where", "random"), str) \
            or not all(isinstance(given.get(k, 0), (int, float)) and not isinstance(given.get(k), bool)
                       for k in ("share", "seed")):
        raise UserError(NOT_SAVED + "the draft it says it started from is not one.")
    try:
        return Revision(**given)
    except UserError as e:
        raise UserError(NOT_SAVED + str(e)) from None


def recording_of(race: dict[str, Any]) -> Recording:
    """The Recording of an unpacked browser race: each side's settings as its own source validates and records them
    (pins run on the server only) and within the bounds a race run here meets (`fits`: the prompt and the answer
    length within the twins' context), its frames read as recording lines, its end; for a race from a draft, the
    draft asked (`revision_sent`) and each side's plan as app/analysis/revision.py `plan` trims it; UserError naming
    what is wrong."""
    draft = revision_sent(race)
    sources: dict[str, Any] = {}
    frames: dict[str, list[Frame]] = {}
    ends: dict[str, dict[str, Any]] = {}
    for side, spec in zip(SIDES, TWINS):
        given = race["sides"].get(side)
        if not isinstance(given, dict) or not isinstance(given.get("settings"), dict) \
                or not isinstance(given.get("frames"), list) or given.get("status") not in ENDS:
            raise UserError(NOT_SAVED + f"its {side} side is missing.")
        if given["settings"].get("pins"):
            raise UserError(NOT_SAVED + "pinned text runs on the server only.")
        source = MAKERS[spec](**given["settings"])
        source.fits(race["prompt"])  # the bounds a race run here meets: the answer within the twins' context
        sources[side] = {"name": spec, "settings": source.settings()}
        if draft is not None and (plan := side_plan({"draft": given.get("draft")})) is not None:
            sources[side]["draft"] = plan
        most = source.model.max_len  # a side makes a frame a pass, each of at most a token a position
        if len(given["frames"]) > most or any(isinstance(f, dict) and len(f.get("tokens") or ()) > most
                                              for f in given["frames"]):
            raise UserError(NOT_SAVED + f"its {side} side has more than a race of the twins can make.")
        try:
            frames[side] = [Frame.from_json(f if isinstance(f, dict) else {}) for f in given["frames"]]
        except (ValueError, TypeError) as e:
            raise UserError(NOT_SAVED + f"a {side} frame is not one ({e}).") from None
        ends[side] = {"status": given["status"], "t": frames[side][-1].t if frames[side] else None}
    header = {**make_header(race["prompt"], sources, draft=draft.to_json() if draft else None), "ran_in": RAN_IN}
    return Recording(header, frames, ends, [])


def keep(visitor: Visitor, packed: str | None) -> tuple[Any, ...]:
    """Saves a race run in the visitor's browser in their own library (the library's table, picker and ids, the
    run the exports use, the status line); nothing when the page shares one library and refuses uploads."""
    if not packed:
        return (gr.skip(),) * 5
    policy = visitor.policy
    if not (policy.owner_scoped or policy.can("upload")):
        return (gr.skip(),) * 4 + (NOT_SAVED + "this page keeps one library for every visitor, and takes no "
                                   "visitor's files into it.",)
    try:
        rec = recording_of(unpack(packed))
        make_room(visitor.owner, visitor.address)
        path = write_recording(rec, user_dir(visitor.owner) / recording_name(*TWINS))
    except (UserError, OSError) as e:
        return (gr.skip(),) * 4 + (str(e) if isinstance(e, UserError) else NOT_SAVED + f"{e.strerror or e}.",)
    try:
        read_recording(path, RUN_MAX_BYTES)  # the caps any recording is read under, so it can be shown again
    except RecordingError as e:
        path.unlink(missing_ok=True)
        return (gr.skip(),) * 4 + (NOT_SAVED + str(e),)
    finally:
        written(visitor.owner, visitor.address, path)  # counted, and charged to the address's hourly budget
    return (*library_view(visitor, f"user/{path.name}"), str(path), f"Saved the race run in your browser as "
            f"{path.name}.")


def wire_keep(began_btn: Any, kept: Any, policy: Policy, owner: Any, view: list[Any], current: Any,
              status: Any) -> None:
    """A browser race that begins tells the server (`began_btn`: the session's race on the server, if any, stops,
    and the exports no longer offer the run before); its end comes back through `kept` and is saved (`keep`)."""
    began_btn.click(began, inputs=None, outputs=[current], queue=False, **QUIET)
    kept.change(as_visitor(policy, keep), inputs=[owner, kept], outputs=[*view, current, status], **READS, **QUIET)


def began(request: gr.Request) -> None:
    """A browser race began in this session: the server's race stops, and Stop leaves the player to the browser."""
    stop_session_race(session_of(request))
    remember(session_of(request), {"race": None, "path": "", "run": "", "shown": True})
    return None
