"""A named registry: what other apps plug into an app's extension point when they load (in their AppConfig).

Registering a name again replaces its entry, in the place it was first registered: an app that loads
twice (tests reload some) does not run twice.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Generic, TypeVar

logger = logging.getLogger(__name__)

T = TypeVar("T")


class Registry(Generic[T]):
    def __init__(self, what: str) -> None:
        self.what = what  # what an entry is, for the log line of one that fails
        self._entries: dict[str, T] = {}

    def register(self, name: str, entry: T) -> None:
        self._entries[name] = entry

    def entries(self) -> list[T]:
        return list(self._entries.values())

    def each_logged(self, call: Callable[[T], object]) -> None:
        """`call(entry)` for every entry; a failing one is logged and skipped (another app's extra must
        not break the app that asks)."""
        for entry in self.entries():
            try:
                call(entry)
            except Exception:
                logger.exception("%s failed", self.what)

    @contextmanager
    def registered(self, name: str, entry: T) -> Iterator[None]:
        """A test seam: `entry` registered under `name` for the block's duration, then the registry as it was."""
        before = self._entries.get(name)
        self._entries[name] = entry
        try:
            yield
        finally:
            if before is None:
                self._entries.pop(name, None)
            else:
                self._entries[name] = before
