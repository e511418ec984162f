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
        self.move(when)

    def move(self, when: float) -> None:
        self.cancel()
        self.handle = self.loop.call_at(self.loop.time() + (when - time.monotonic()), self._expire)

    def cancel(self) -> None:
        if self.handle is not None:
            self.handle.cancel()
            self.handle = None

    def _expire(self) -> None:
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
