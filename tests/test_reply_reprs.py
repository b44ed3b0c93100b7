"""No reply of a served page carries a Python repr (a heap address, a function, a partial): the page-load handler's
reply, read as the raw HTTP body a browser gets, and a recording loaded into the player through the queue.

Gradio 6.31 takes a name written in quotes in a gr.HTML's js_on_load for a custom event (gradio/components/html.py
`__getattr__`), and an update of a prop of that name then carried the event's repr beside the prop
(`functools.partial(<function EventListener._setup.<locals>.event_trigger at 0x...>, <gradio.components.html.HTML
object at 0x...>)`), in every reply that moved the player (app/ui/player_glue.js)."""

from __future__ import annotations

import json
import re
import urllib.request
import uuid
from pathlib import Path

from tests.served import call, config, served_process
from tests.test_security_inputs import handler_of, with_value
from tests.test_session_memory import handler_index

REPR = re.compile(r"0x[0-9a-fA-F]{6,}|<function|functools\.partial|<gradio\.| object at ")


def test_no_reply_carries_a_heap_address_or_a_python_repr(tmp_path: Path) -> None:
    with served_process(tmp_path / "server.log", tmp_path / "recordings") as (url, _):
        cfg = config(url)
        session = uuid.uuid4().hex
        body = json.dumps({"data": [None], "fn_index": handler_index(cfg, "load"), "session_hash": session,
                           "event_data": None, "trigger_id": None}).encode()
        request = urllib.request.Request(url + "gradio_api/run/predict", data=body,
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=120) as r:
            raw = r.read().decode("utf-8")
        opened = json.loads(raw)["data"]
        assert any(isinstance(d, dict) and "payload" in d.get("props", {}) for d in opened)  # it moved the player
        assert REPR.findall(raw) == []
        first = opened[3]["value"]  # the library's picker: the first example, which the player shows
        assert first.startswith("example/")
        index, data = handler_of(cfg, "library-load", "click")
        done, _ = call(url, index, with_value(cfg, index, data, "library-pick", first), session=session)
        assert done.get("success") is True
        assert REPR.findall(json.dumps(done)) == []
