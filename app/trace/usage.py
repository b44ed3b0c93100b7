"""What visitors' runs hold on disk, kept in memory as they are written and deleted, and what each client address
wrote in the last hour: the totals app/trace/store.py `make_room` checks, so that a check costs the writer's own
folder, never every owner's. Plain bookkeeping: nothing here touches the disk; store.py fills it from one scan and
keeps it up to date as runs are written, pruned, expired and deleted.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field


@dataclass
class Owner:
    """One owner's folder as last counted: its runs' bytes and count, the address tags it was written from, and when
    a run was last made room for there (so an empty folder is not removed under a writer)."""

    size: int = 0
    files: int = 0
    tags: set[str] = field(default_factory=set)
    used: float = 0.0


class Usage:
    """Bytes held per owner folder (by its name), per address tag (every owner written from it counts whole against
    it, as an owner's runs are one pile) and in all."""

    def __init__(self) -> None:
        self.owners: dict[str, Owner] = {}
        self.by_tag: dict[str, int] = {}
        self.total = 0

    def owner(self, name: str) -> Owner:
        """The entry of an owner folder, made empty when it is new."""
        return self.owners.setdefault(name, Owner())

    def held(self, tag: str | None) -> int:
        """Bytes of every owner written from an address tag (0 without one)."""
        return self.by_tag.get(tag, 0) if tag else 0

    def count(self, name: str, size: int, files: int) -> None:
        """An owner folder counted again: the totals move by the difference."""
        entry = self.owner(name)
        delta = size - entry.size
        entry.size, entry.files = size, files
        self.total += delta
        for tag in entry.tags:
            self._move(tag, delta)

    def tag(self, name: str, tag: str) -> bool:
        """Notes that an owner was written from an address tag; whether it is new to that owner."""
        entry = self.owner(name)
        if tag in entry.tags:
            return False
        entry.tags.add(tag)
        self._move(tag, entry.size)
        return True

    def drop(self, name: str) -> None:
        """An owner folder gone from the disk."""
        entry = self.owners.pop(name, None)
        if entry is not None:
            self.total -= entry.size
            for tag in entry.tags:
                self._move(tag, -entry.size)

    def _move(self, tag: str, delta: int) -> None:
        left = self.by_tag.get(tag, 0) + delta
        if left > 0:
            self.by_tag[tag] = left
        else:
            self.by_tag.pop(tag, None)  # an address holding nothing is forgotten, so the table stays bounded


class Window:
    """Bytes charged to each key within the last `seconds` (a sliding window): the hourly disk budget here, and the
    door's upload budget per address (app/ui/door.py)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._charges: dict[str, deque[tuple[float, int]]] = {}
        self._sums: dict[str, int] = {}

    def spent(self, key: str, now: float) -> int:
        """What `key` was charged within the window ending `now`."""
        charges = self._charges.get(key)
        while charges and now - charges[0][0] >= self.seconds:
            self._sums[key] -= charges.popleft()[1]
        if charges is not None and not charges:
            del self._charges[key], self._sums[key]
        return self._sums.get(key, 0)

    def charges(self, key: str, now: float) -> int:
        """How many charges `key` has within the window ending `now`."""
        self.spent(key, now)
        return len(self._charges.get(key, ()))

    def charge(self, key: str, size: int, now: float) -> None:
        self.spent(key, now)
        self._charges.setdefault(key, deque()).append((now, size))
        self._sums[key] = self._sums.get(key, 0) + size

    def forget_old(self, now: float) -> None:
        """Drops every key charged nothing within the window (the sweep calls it)."""
        for key in list(self._charges):
            self.spent(key, now)
