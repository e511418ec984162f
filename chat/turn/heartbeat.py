"""The heartbeat: one database trip a second for all of this process's running turns.

Every HEARTBEAT_SECONDS (chat.turn.leases) it renews the leases of an event loop's running turns and saves
their text so far, in one transaction for all of them (`leases.turns_heartbeat`), and sends each page the
text it saved. It is also how a Stop asked in another process, or a lost lease, reaches a turn: its task
is cancelled. One per event loop, started by the runner with a turn; it ends when no turn runs.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import weakref
from typing import Any

from channels.db import database_sync_to_async

from chat.turn import leases
from chat.turn.registry import running_turns

logger = logging.getLogger(__name__)

_hearts: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Task[None]] = weakref.WeakKeyDictionary()


def ensure() -> None:
    """Start this event loop's heartbeat unless it runs."""
    loop = asyncio.get_running_loop()
    heart = _hearts.get(loop)
    if heart is None or heart.done():
        _hearts[loop] = loop.create_task(_heartbeat(), name="turn-heartbeat", context=contextvars.Context())


async def _heartbeat() -> None:
    loop = asyncio.get_running_loop()
    beat = database_sync_to_async(leases.turns_heartbeat, thread_sensitive=False)
    while True:
        await asyncio.sleep(leases.HEARTBEAT_SECONDS)
        turns = _beating(loop)
        if not turns:
            return
        texts = {r.key: r.turn.text for r in turns}
        try:
            beats = await beat([_pulse(r, texts[r.key]) for r in turns])
        except Exception:  # the database is away for a moment: a lease outlasts a few misses
            logger.warning("could not renew the leases of running turns", exc_info=True)
            continue
        for running in turns:
            _beaten(running, texts[running.key], beats.get(running.turn.started.conversation.pk))


def _beating(loop: asyncio.AbstractEventLoop) -> list[Any]:
    """The loop's running turns (chat.turn.runner.RunningTurn) that hold a lease: not those already saved,
    which released theirs."""
    return [
        r
        for r in running_turns.all()
        if r.loop is loop and r.task is not None and not r.task.done() and not r.turn.saved
    ]


def _pulse(running: Any, text: str) -> leases.Pulse:
    started = running.turn.started
    return leases.Pulse(
        conversation_id=started.conversation.pk,
        lock_token=started.lock_token,
        message_id=running.message_id,
        content=text if text != running.saved_text else None,
    )


def _beaten(running: Any, text: str, result: leases.Beat | None) -> None:
    if text != running.saved_text:
        running.saved_text = text
        running.fanout.send({"type": "turn.text", "message_id": running.message_id, "text": text})
    # Not once the turn is saved: it released the lease itself (and a late cancel would report a complete
    # reply as stopped).
    if result is not None and (result.stop or not result.held) and not running.turn.saved:
        running.task.cancel()
