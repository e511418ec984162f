"""The one way anything is pushed to open pages: `send_event` (after Zulip's), through the channel layer.

    send_event({"type": "chat.notice", "html": ...}, user_id=user.pk)      # every chat page of a user
    await send_event_async(message, group=fanout.conversation_group(pk), ...)  # a turn's (chat/turn/fanout.py)

A page joins its user's group (`user_group`) and its conversation's group (chat.consumers); what goes
to the pages in the process that runs a turn does not come through here (chat/turn/pages.py).

The rule when the channel layer is down (Redis unreachable): a push never fails its caller and never
waits more than LAYER_TIMEOUT_SECONDS. A send that raises marks the layer down for LAYER_RETRY_SECONDS,
and so do LAYER_SLOW_LIMIT timeouts in a row (one timeout is a loaded machine, not an outage); while
it is down, events a page catches up on by itself (`skippable`: a reply's text) are not even tried.
The pages fall back to polling and to what they show on the next load. The outcome says what happened:
a caller that must know about a missed push (chat.extensions.notify_user) looks at it.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

logger = logging.getLogger(__name__)

LAYER_TIMEOUT_SECONDS = 2.0
LAYER_RETRY_SECONDS = 5.0  # after a failed send, skippable events skip the channel layer this long
LAYER_SLOW_LIMIT = 3  # timeouts in a row that count as the layer being down

_down_until = 0.0  # time.monotonic() until which the layer counts as down
_slow = 0  # sends in a row that timed out


class Outcome(enum.Enum):
    SENT = "sent"  # handed to the channel layer
    NOBODY = "nobody"  # no channel layer, or no page to send it to
    DOWN = "down"  # the layer failed, timed out, or is down lately (logged): pages poll


def user_group(user_id: int) -> str:
    """The channel layer group of one user's open chat pages (chat.consumers.ChatConsumer joins it)."""
    return f"user-{user_id}"


def layer_down() -> bool:
    """Whether the channel layer failed lately (see the module docstring)."""
    return time.monotonic() < _down_until


def layer_reset() -> None:
    """Forget a past outage: the next push tries the layer whatever happened before."""
    global _down_until, _slow
    _down_until, _slow = 0.0, 0


# Who in a group gets an event: a list of channel names, or None for the whole group.
Lookup = Callable[[Any], Awaitable["list[str] | None"]]


async def send_event_async(
    event: dict[str, Any],
    *,
    group: str,
    lookup: Lookup | None = None,
    prepare: Callable[[], bool] | None = None,
    skippable: bool = False,
) -> Outcome:
    """Deliver `event` to the pages in `group`, under the rule of the module docstring. `lookup(layer)`
    names the group's pages that get it (default: the whole group); `prepare()` runs once some page
    gets it (e.g. renders its HTML) and may say False: then it goes nowhere."""
    global _down_until, _slow
    if skippable and layer_down():
        return Outcome.DOWN
    layer = get_channel_layer()
    if layer is None:
        return Outcome.NOBODY
    try:
        async with asyncio.timeout(LAYER_TIMEOUT_SECONDS):
            outcome = await _deliver(layer, event, group=group, lookup=lookup, prepare=prepare)
        _slow = 0
        return outcome
    except TimeoutError:
        # Slow is not down: a machine at full load can take this long. Only repeated timeouts in a row
        # (an unreachable host) count as the layer being away.
        _slow += 1
        if _slow >= LAYER_SLOW_LIMIT:
            _down_until = time.monotonic() + LAYER_RETRY_SECONDS
            logger.warning("channel layer not answering; open pages fall back to polling")
        return Outcome.DOWN
    except Exception as exc:
        _down_until = time.monotonic() + LAYER_RETRY_SECONDS
        logger.warning("channel layer unavailable (%r); open pages fall back to polling", exc)
        return Outcome.DOWN


async def _deliver(
    layer: Any, event: dict[str, Any], *, group: str, lookup: Lookup | None, prepare: Callable[[], bool] | None
) -> Outcome:
    channels = await lookup(layer) if lookup is not None else None
    if channels == [] or (prepare is not None and not prepare()):
        return Outcome.NOBODY
    if channels is None:
        await layer.group_send(group, event)
    else:
        for channel in channels:
            await layer.send(channel, event)
    return Outcome.SENT


def send_event(event: dict[str, Any], *, user_id: int) -> Outcome:
    """`send_event_async` from synchronous code (a view's or a task's on-commit callback), to every open
    chat page of the user. Call it after commit."""
    outcome: Outcome = async_to_sync(send_event_async)(event, group=user_group(user_id))
    return outcome
