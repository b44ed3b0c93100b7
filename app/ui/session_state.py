"""Gradio's per-session state for the page, kept small: a session shares the page's blocks and their config and keeps
only the blocks its updates replaced, within a count of sessions and an idle lifetime.

Gradio 6.31 keeps one SessionState per session hash (gradio/state_holder.py), made on the session's first call:
a copy of the page's config for every one of its blocks (about 560 kB for this page), then a copy of each block an
update replaced, until `state_session_capacity` newer sessions push it out. Nothing expires a session by time (only
gr.State values go, an hour after their tab closed), and the queue API opens sessions without end, so one client
could leave about 570 kB on the server with each request. `PageBlocks` is gr.Blocks with Gradio's state holder
swapped for `LeanStateHolder` the moment a server takes the page (StateHolder.set_blocks tells the page which holder
it has), and its launch defaults to SESSIONS sessions.
"""

from __future__ import annotations

import datetime
from collections import ChainMap
from typing import Any, Iterator

import gradio as gr
from gradio.blocks import BlocksConfig
from gradio.state_holder import SessionState, StateHolder

# Sessions kept at once (Gradio's default is 10,000). An opened page's session now holds about 20 kB (the library
# table, picker and player it replaced: +58 MB resident for 3,000 in tests/test_session_memory.py), so these stay
# within about 100 MB. A visitor's session is pushed out only after this many newer ones (its handlers then act for
# a fresh owner, with an empty library, until the page is reloaded): three minutes at the probe rate
# (2,845 sessions in 100 s), far longer for a page opened by people.
SESSIONS = 5_000
# Seconds a session is kept untouched (Gradio keeps it until pushed out): a tab left open through a working day keeps
# its state; the sessions of clients that never come back (API callers never close theirs) go after it.
IDLE = 12 * 3600
SENT_NOT_KEPT = "_sent_not_kept"  # the attribute naming the props of a page's gr.HTML that sessions do not keep


def sent_not_kept(block: gr.HTML, *props: str) -> gr.HTML:
    """Marks custom props of a gr.HTML as sent with each update and not kept in the session's copy of the block.

    Gradio sends an update's props from the update itself (gradio.blocks.postprocess_update_dict) but also rebuilds
    the block with them for the session; such a prop only ever arrives whole in an update, so the copy needs none."""
    setattr(block, SENT_NOT_KEPT, props)
    return block


def forget(block: Any, prop: str) -> None:
    """Clears a custom prop from a session's copy of a gr.HTML: its props and the constructor arguments Gradio rebuilds
    the block from on the session's next update."""
    if prop in getattr(block, "props", {}):
        block.props[prop] = None
    for given in getattr(block, "_constructor_args", []):
        given.pop(prop, None)


class _Shared:
    """What SessionState.__init__ reads of the page, arranged so that it copies nothing: the page's config with
    blocks that fall through to the page's own, and no block whose config it would copy."""

    def __init__(self, page: gr.Blocks) -> None:
        self.default_config = BlocksConfig(page)
        self.default_config.blocks = ChainMap({}, page.default_config.blocks)
        self.default_config.fns, self.default_config.fn_id = page.default_config.fns, page.default_config.fn_id
        self.blocks: dict[int, Any] = {}


class LeanSessionState(SessionState):
    """A session's state that keeps only what the session changed: the blocks its updates replaced (written into the
    first map of a ChainMap over the page's blocks) and its gr.State values.

    Gradio also keeps each changed block's config with its latest value (`config_values`), read only by its deep-link
    route (a snapshot of the page as the session sees it; this page offers no deep link); that copy is not kept here,
    so a snapshot shows the session's blocks with the page's values."""

    def __init__(self, page: gr.Blocks) -> None:
        super().__init__(_Shared(page))
        self.page_blocks = page.blocks

    def __setitem__(self, key: int, value: Any) -> None:
        """Gradio's own, less the config: a gr.State value with its time, else the block that replaces the page's."""
        block = self.blocks_config.blocks.get(key)
        if isinstance(block, gr.State):
            self._state_ttl[key] = (block.time_to_live, datetime.datetime.now())
            self.state_data[key] = value
        else:
            for prop in getattr(self.page_blocks.get(key), SENT_NOT_KEPT, ()):
                forget(value, prop)
            self.blocks_config.blocks[key] = value

    def _update_config(self, key: int) -> None:
        """Not kept (see the class)."""

    def _update_value_in_config(self, key: int, value: Any) -> None:
        """Not kept (see the class)."""

    @property
    def components(self) -> Iterator[dict]:
        """Every block's config as this session has it, made when asked (for Gradio's deep-link route)."""
        for key in self.page_blocks:
            config = self.blocks_config.config_for_block(key, [], self.blocks_config.blocks[key])
            if config:
                yield config


class LeanStateHolder(StateHolder):
    """Gradio's state holder making lean sessions, which also drops a session untouched for IDLE seconds.

    The holder a server made is switched to this class in place (it adds no fields), so the server's routes and the
    page share it as before."""

    idle = IDLE

    def __getitem__(self, session_id: str) -> SessionState:
        if session_id not in self.session_data:
            self.session_data[session_id] = LeanSessionState(self.blocks)
        return super().__getitem__(session_id)

    def update(self, session_id: str) -> None:
        """Gradio's bookkeeping (the session moved last, the oldest past capacity dropped), then the sessions
        untouched for `idle` seconds dropped, oldest first."""
        super().update(session_id)
        cutoff = datetime.datetime.now() - datetime.timedelta(seconds=self.idle)
        with self.lock:
            while self.session_data:
                oldest = next(iter(self.session_data))
                used = self.time_last_used.get(oldest)
                if oldest == session_id or (used is not None and used > cutoff):
                    break
                del self.session_data[oldest]
                self.time_last_used.pop(oldest, None)


class PageBlocks(gr.Blocks):
    """gr.Blocks whose sessions are lean (LeanStateHolder) and bounded to SESSIONS unless its launch says otherwise."""

    @property
    def state_holder(self) -> StateHolder:
        try:
            return self.__dict__["_state_holder"]
        except KeyError:
            raise AttributeError("state_holder") from None

    @state_holder.setter
    def state_holder(self, holder: StateHolder) -> None:
        if type(holder) is StateHolder:
            holder.__class__ = LeanStateHolder
        self.__dict__["_state_holder"] = holder

    def launch(self, *args: Any, **kwargs: Any) -> Any:
        """gr.Blocks.launch with `state_session_capacity` defaulting to SESSIONS."""
        kwargs.setdefault("state_session_capacity", SESSIONS)
        return super().launch(*args, **kwargs)
