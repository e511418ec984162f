"""Wall-clock deadlines for the many short waits of a streamed reply."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable
from typing import TypeVar

T = TypeVar("T")


class Deadline:
    """A time.monotonic() deadline for the reads of a stream, as cheap per read as a flag.

    asyncio.timeout() around every read of a streamed reply costs a timer per chunk (several per token,
    through the layers of a turn), and a generator must not yield inside one (its cancel would hit the
    consumer's code): this keeps one timer, which cancels the task only while it waits in `wait`; past
    the deadline, `wait` raises TimeoutError. Create it in the task that waits.
    """

    def __init__(self, when: float) -> None:
        self.loop = asyncio.get_running_loop()
        self.task = asyncio.current_task()
        self.cancelling = self.task.cancelling() if self.task else 0
        self.expired = self.waiting = False
        self.handle: asyncio.TimerHandle | None = None
        self.end = when
        # With `stall_after`: also expire when `progress()` was not called for `stall` seconds.
        self.stall: float | None = None
        self.last_progress = 0.0
        self.stalled = False  # expired by the stall limit rather than by `end`
        self.move(when)

    def move(self, when: float) -> None:
        self.end = when
        self._arm(when)

    def stall_after(self, seconds: float) -> None:
        """From now on, also expire when no `progress()` is reported for `seconds` (a provider that
        sends only keep-alives). Still one timer: it is re-armed when it fires, not at every progress."""
        self.stall = seconds
        self.progress()
        self._arm(min(self.end, self.last_progress + seconds))

    def progress(self) -> None:
        """Something worth waiting for arrived (a token): the stall limit counts from now."""
        self.last_progress = time.monotonic()

    def _arm(self, when: float) -> None:
        self.cancel()
        self.handle = self.loop.call_at(self.loop.time() + (when - time.monotonic()), self._expire)

    def cancel(self) -> None:
        if self.handle is not None:
            self.handle.cancel()
            self.handle = None

    def _expire(self) -> None:
        self.handle = None
        if self.stall is not None:
            quiet_until = self.last_progress + self.stall
            limit = min(self.end, quiet_until)
            if time.monotonic() + 0.001 < limit:  # progress since the timer was set: wait on
                self._arm(limit)
                return
            self.stalled = quiet_until < self.end
        self.expired = True
        if self.waiting and self.task is not None:
            self.task.cancel()

    async def wait(self, awaitable: Awaitable[T]) -> T:
        if self.expired:
            self.cancel()
            close = getattr(awaitable, "close", None)
            if close is not None:  # a coroutine that will never run: closed, not left to warn
                close()
            raise TimeoutError
        self.waiting = True
        try:
            return await awaitable
        except asyncio.CancelledError:
            # Ours (and no one else's: a Stop cancels too) becomes the timeout.
            if self.expired and self.task is not None and self.task.uncancel() <= self.cancelling:
                raise TimeoutError from None
            raise
        finally:
            self.waiting = False
            if self.expired:
                self.cancel()
