"""Running a whole turn in a test, without the runner."""

from __future__ import annotations

from contextlib import aclosing

from chat.turn.agent import Turn
from chat.turn.events import TurnEvent


async def run_to_end(turn: Turn) -> TurnEvent:
    """Run the whole turn; returns the final "done" or "error" event."""
    last = TurnEvent("error")
    async with aclosing(turn.events()) as events:
        async for event in events:
            last = event
    return last
