"""The turn's wall-clock limit (CHAT_TURN_TIMEOUT), over all its model steps."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TypeVar

from django.conf import settings
from django.utils.translation import gettext as _

from chat.llm import LLMError
from chat.llm.deadlines import Deadline

T = TypeVar("T")


@dataclass
class TurnBudget:
    """The turn's wall-clock limit (CHAT_TURN_TIMEOUT), over every model step of the turn.

    Each wait for the next chunk is bounded by what is left, so neither a slow model nor a server
    that only sends keep-alive pings can hold the conversation's lock and run slot past it.
    """

    deadline: float
    _timer: Deadline | None = None  # made by the first wait, in the turn's own task

    @classmethod
    def start(cls) -> TurnBudget:
        return cls(deadline=time.monotonic() + float(settings.CHAT_TURN_TIMEOUT))

    async def next_chunk(self, stream: AsyncIterator[T]) -> T | None:
        """The stream's next chunk, None at its end; LLMError(kind="timeout") when the time is up."""
        if self._timer is None:
            self._timer = Deadline(self.deadline)
        try:
            return await self._timer.wait(anext(stream))
        except StopAsyncIteration:
            return None
        except TimeoutError as exc:
            limit = float(settings.CHAT_TURN_TIMEOUT)
            message = _("The reply did not finish within the turn's time limit (%(seconds)s s).") % {
                "seconds": f"{limit:g}"
            }
            raise LLMError(message, kind="timeout") from exc

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
