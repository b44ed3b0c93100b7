"""The browser's samplers equal the Python twins without a browser: the Python twins race a table of prompts and
settings while each call of their network is recorded (its inputs and logits: golden vectors, written to a temporary
folder from the shipped twins), then Node replays the same races through app/site/js/ (the ES modules the site
bundles) over the recorded logits, with no ONNX and no Chromium (tests/node/parity.mjs). Each pass must ask for what
Python's asked, each frame must equal Python's, and the player's wire rows, metrics and settled series built in
JavaScript must equal app/view's from the same frames; the first pass or frame that differs is named. Skipped with
the reason where Node.js is missing."""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from app.bench.twins import EVAL_PROMPTS
from tests.fixtures import needs_twins

pytestmark = needs_twins
ROOT = Path(__file__).resolve().parent.parent
REPLAY = ROOT / "tests" / "node" / "parity.mjs"
LENGTH = 32  # each answer's length (unless a case gives its own): short, so the recorded logits stay a few megabytes
# each diffusion setting the browser honours moved from the twin's default at least once (and back at another), as
# the page gives them (0: off, or steps following the length); `ar`: the AR twin's
CASES: tuple[dict[str, Any], ...] = (
    {}, {"threshold": 0}, {"threshold": 0.5, "filter": 0}, {"filter": 0.3, "min_length": 24},
    {"block_length": 8, "steps": 16, "scoring": "confidence"},
    {"block_length": 32, "schedule": "dream", "scoring": "margin", "steps": 12},
    {"block_length": 16, "schedule": "dllm", "steps": 20, "no_repeat_ngram": 3, "ar": {"no_repeat_ngram": 3}},
    {"factor": 1.0, "eos_discount": 0.5, "no_repeat": False, "no_repeat_ngram": 0,
     "ar": {"no_repeat": False, "no_repeat_ngram": 0, "min_length": 0}},
    {"no_repeat_ngram": 2, "temperature": 0.7, "seed": 2,
     "ar": {"no_repeat_ngram": 2, "temperature": 0.7, "seed": 2, "min_length": 16}},
    {"min_gap": 3, "stop_at_eos": False, "filter": 0, "ar": {"stop_at_eos": False}},
    {"prefix_cache": False, "top_k": 5, "threshold": 0.5},
    {"dual_cache": False, "lookahead": 8, "schedule": "dream"},
    {"top_k": 5, "scoring": "margin", "schedule": "dllm", "min_gap": 2, "prefix_cache": False},
    {"steps": 0, "block_length": 16, "factor": 2.0, "threshold": 0.9, "dual_cache": False},
    {"temperature": 1.2, "seed": 11, "top_k": 50, "block_length": 16, "ar": {"temperature": 1.0, "top_k": 20}},
    {"scoring": "random", "seed": 5, "remask": 0.3, "ar": {"temperature": 0.7, "top_p": 0.9, "seed": 4}},
    {"remask": 0.3, "temperature": 0.5, "seed": 9999, "threshold": 0,
     "ar": {"temperature": 1.5, "top_k": 5, "top_p": 0.5, "seed": 9999}},
    {"scoring": "random", "seed": 1, "schedule": "dream", "ar": {"temperature": 0.9, "seed": 1, "stop_at_eos": False}},
    # where the AR twin's stutter guard bites: unguarded it writes a token twice
    {"ar": {"temperature": 1.0, "seed": 0}},
    # issue 53: races that start from a draft (both twins; app/site/js/draft.js): random positions, the least sure
    # (one pass on the masked twin, one a draft token on the AR twin), a span from the answer's start (the AR twin
    # keeps nothing), remasking that may reopen a draft token, and nothing re-noised (the masked twin takes no pass)
    {"draft": {"text": " She liked to play in the park with her red ball.", "share": 0.3, "where": "random",
               "seed": 3}},
    {"draft": {"text": " The dog ran to the big tree and sat down to eat.", "share": 0.4, "where": "unsure",
               "seed": 0}, "block_length": 8, "steps": 16, "ar": {"temperature": 0.7, "seed": 1}},
    {"draft": {"text": " Tom had a cat. The cat was very happy and sad.", "share": 1.0, "where": "0:6", "seed": 0},
     "remask": 0.3, "temperature": 0.5, "seed": 7, "threshold": 0},
    {"draft": {"text": " Lily found a shiny stone near the river.", "share": 0.5, "where": "3:9", "seed": 11},
     "schedule": "dllm", "steps": 20, "block_length": 16, "remask": 0.5, "scoring": "margin"},
    {"draft": {"text": " Once there was a small bird who could not fly.", "share": 0.0, "where": "random",
               "seed": 0}},
    # a draft as long as the answer (12 tokens), nothing re-noised: the masked twin ends in no pass, the AR twin at
    # its first frame
    {"draft": {"text": " Once there was a small bird who could not fly.", "share": 0.0, "where": "unsure", "seed": 0},
     "length": 12, "block_length": 12},
)


class Recorded:
    """A twin's model whose every call of the network is written down: which call (refresh, logits, prefill,
    decode), its inputs, and its logits appended to `blob` (float32). Anything else is the model's own."""

    def __init__(self, model: Any, blob: list[np.ndarray]) -> None:
        self._model, self._blob = model, blob
        self.calls: list[dict[str, Any]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._model, name)

    def _log(self, op: str, ids: Any, logits: Any, **more: Any) -> None:
        rows = np.asarray(logits, dtype=np.float32)[..., : self._model.vocab_size]
        self.calls.append({"op": op, "ids": [int(i) for i in np.atleast_1d(ids)], "offset": sum(b.size for b in
                           self._blob), "rows": 1 if rows.ndim == 1 else len(rows), **more})
        self._blob.append(np.ascontiguousarray(rows).ravel())

    def refresh(self, ids: np.ndarray, start: int, stop: int | None = None) -> tuple[Any, np.ndarray]:
        cache, logits = self._model.refresh(ids, start, stop)
        self._log("refresh", ids, logits, start=start, stop=stop)
        return cache, logits

    def logits(self, ids: np.ndarray, cache: Any = None, start: int = 0, stop: int | None = None) -> np.ndarray:
        logits = self._model.logits(ids, cache, start, stop)
        self._log("logits", ids, logits, start=start, stop=stop, cached=cache is not None)
        return logits

    def prefill(self, ids: np.ndarray) -> tuple[Any, np.ndarray]:
        cache, logits = self._model.prefill(ids)
        self._log("prefill", ids, logits)
        return cache, logits

    def decode(self, cache: Any, token: int) -> np.ndarray:
        logits = self._model.decode(cache, token)
        self._log("decode", [token], logits)
        return logits


def side_of(source: Any, prompt: str, blob: list[np.ndarray], draft: dict[str, Any] | None = None) -> dict[str, Any]:
    """One side raced by its Python source with its network recorded (from `draft`, a Revision's fields, when
    given: its plan made first, as the race makes it): the calls, the frames as a recording has them, the side's
    plan as the header keeps it and as the player draws it (`entry`), and the player's wire rows, metrics and
    settled series that app/view makes of those frames."""
    from app.analysis.changes import SideAnalyzer
    from app.engine.draft import Revision
    from app.view.payload import wire_rows
    from app.view.side import draft_entry, summary

    source.model = Recorded(source.model, blob)
    if draft is not None:
        source.revise(Revision(**draft), prompt)
    frames = list(source.stream(prompt, threading.Event()))
    analyzer = SideAnalyzer()
    made = {"rows": wire_rows([analyzer.add(f) for f in frames]), **summary(frames)}
    plan = source.draft_json()
    return json.loads(json.dumps({"calls": source.model.calls, "frames": [f.to_json() for f in frames],
                                  "draft": plan, "entry": draft_entry({"draft": plan}), **made}))


def golden(folder: Path) -> int:
    """Writes the golden vectors into `folder`: twins.json (as the site writes it), cases.json (each race's prompt,
    options as the browser API takes them, and each side's calls, frames and rows) and logits.f32; returns how many
    calls of the network were recorded."""
    from app.site.build import twins_data
    from app.sources.local import make_local_ar, make_local_diffusion

    blob: list[np.ndarray] = []
    cases: list[dict[str, Any]] = []
    for n, varied in enumerate(CASES):
        prompt = EVAL_PROMPTS[n % len(EVAL_PROMPTS)]
        diffusion = {k: v for k, v in varied.items() if k not in ("ar", "draft", "length")}
        draft, length = varied.get("draft"), varied.get("length", LENGTH)
        left = side_of(make_local_diffusion(gen_length=length, **diffusion), prompt, blob, draft)
        right = side_of(make_local_ar(gen_length=length, **varied.get("ar", {})), prompt, blob, draft)
        cases.append({"prompt": prompt, "options": {"length": LENGTH, **varied}, "left": left, "right": right})
    (folder / "twins.json").write_text(json.dumps(twins_data()), encoding="utf-8")
    (folder / "cases.json").write_text(json.dumps(cases), encoding="utf-8")
    np.concatenate(blob).astype("<f4").tofile(folder / "logits.f32")
    return sum(len(c[s]["calls"]) for c in cases for s in ("left", "right"))


@pytest.fixture(scope="module")
def vectors(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    """The golden vectors, made once for the module from the shipped twins."""
    folder = tmp_path_factory.mktemp("golden")
    return folder, golden(folder)


def replay(folder: Path, *only: str) -> subprocess.CompletedProcess[str]:
    """tests/node/parity.mjs over the vectors in `folder` (`only`: the cases to replay, by number)."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("Node.js is not installed to replay the golden vectors through app/site/js/")
    return subprocess.run([node, str(REPLAY), str(folder), *only], capture_output=True, text=True, timeout=300)


def test_the_browsers_samplers_replay_the_python_twins_pass_for_pass_in_node(vectors: tuple[Path, int]) -> None:
    """Every race of the table, both sides, from nothing and from drafts: the same calls of the network, the same
    frames (their revision letters too), the same plans, the same wire rows."""
    folder, calls = vectors
    done = replay(folder)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip() == f"replayed {len(CASES)} races, {calls} passes, every frame and row equal", done.stdout


def test_the_replay_names_the_first_pass_that_differs(vectors: tuple[Path, int], tmp_path: Path) -> None:
    """A logit changed in the recording (the first pass's likeliest token made unlikely) makes the JavaScript
    sampler choose otherwise: the replay fails, naming the race, the side and the pass where it went apart."""
    folder, _ = vectors
    for name in ("twins.json", "cases.json"):
        shutil.copyfile(folder / name, tmp_path / name)
    logits = np.fromfile(folder / "logits.f32", dtype="<f4")
    first = json.loads((folder / "cases.json").read_text(encoding="utf-8"))[0]["right"]["calls"][0]
    vocab = json.loads((folder / "twins.json").read_text(encoding="utf-8"))["config"]["ar"]["vocab_size"]
    row = logits[first["offset"]: first["offset"] + vocab]  # the prefill's one row: a view, changed in place
    row[int(np.argmax(row))] = -1e9
    logits.tofile(tmp_path / "logits.f32")
    done = replay(tmp_path, "0")
    assert done.returncode != 0
    assert "race 0, right side, pass 1" in done.stdout + done.stderr, done.stdout + done.stderr
