"""Where a turn's events go: to this process's pages directly, to other processes' through the channel layer.

Most pages that follow a reply are in the process that writes it (the page that sent the message is
connected to it). Sending them its events through Redis cost four round trips per message on the way
in, one at a time per process (channels_redis reads a process's messages one by one), which capped a
process at a few hundred messages a second under load. So:

- every chat page registers here (`watch`) and gets this process's turns straight into its inbox;
- the channel layer carries a turn's events only to pages in *other* processes (`remote_pages`): on the
  in-memory layer (one process) there are none; on Redis, the conversation group's members whose
  channel names are not this process's;
- a page ignores the channel layer's copy of a turn that runs here (`ran_here`), in case a layer that
  cannot tell pages apart (`remote_pages` is None) sends to the whole group.
"""

from __future__ import annotations

import asyncio
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

from channels.layers import InMemoryChannelLayer
from channels_redis.core import RedisChannelLayer

Page = Callable[[dict[str, Any]], None]  # takes an event without waiting (it goes into the page's inbox)

RAN_HERE_SECONDS = 300.0  # how long a finished turn's layer copies may still arrive and be ignored

_pages: dict[str, set[Page]] = {}
_ran_here: dict[int, float] = {}  # assistant message id → when its turn ended here (inf while it runs)
_lock = threading.Lock()


def watch(conversation_id: Any, page: Page) -> Callable[[], None]:
    """Give this process's turns in a conversation to `page`; returns the unwatch."""
    key = str(conversation_id)
    with _lock:
        _pages.setdefault(key, set()).add(page)

    def unwatch() -> None:
        with _lock:
            pages = _pages.get(key)
            if pages is not None:
                pages.discard(page)
                if not pages:
                    del _pages[key]

    return unwatch


def local_pages(conversation_id: Any) -> list[Page]:
    with _lock:
        return list(_pages.get(str(conversation_id), ()))


def turn_started_here(message_id: int) -> None:
    now = time.monotonic()
    with _lock:
        if len(_ran_here) > 1000:  # forget turns long over
            for old in [m for m, ended in _ran_here.items() if ended < now - RAN_HERE_SECONDS]:
                del _ran_here[old]
        _ran_here[message_id] = float("inf")


def turn_ended_here(message_id: int) -> None:
    with _lock:
        if message_id in _ran_here:
            _ran_here[message_id] = time.monotonic()


def ran_here(message_id: Any) -> bool:
    """Whether that reply is (or lately was) written by this process: its pages here got it directly."""
    ended = _ran_here.get(message_id) if isinstance(message_id, int) else None
    return ended is not None and ended >= time.monotonic() - RAN_HERE_SECONDS


async def remote_pages(layer: Any, group: str) -> list[str] | None:
    """The channel names of `group`'s pages in other processes; None when this layer cannot tell (then
    the whole group gets the event). Raises what the layer raises when it is unreachable."""
    if isinstance(layer, InMemoryChannelLayer):
        return []  # one process: every page is one of ours
    if not isinstance(layer, RedisChannelLayer):
        return None
    loop = asyncio.get_running_loop()
    lookups = _lookups.setdefault(loop, {}).get(id(layer))
    if lookups is None or lookups.layer is not layer:
        lookups = _lookups[loop][id(layer)] = _Lookups(layer)
    return await lookups.members(group)


class _Lookups:
    """The lookups an event loop makes at the same moment, sent together: one pipelined round trip per
    Redis host. Turns that start together look up their groups together, and one at a time each took a
    connection of its own from the pool: a hundred turns opened a hundred Redis connections, and opening
    them cost a tenth of the process's CPU in such a burst."""

    def __init__(self, layer: Any) -> None:
        self.layer = layer
        self.waiting: dict[str, list[asyncio.Future[list[str]]]] = {}
        self.sending: set[asyncio.Task[None]] = set()

    async def members(self, group: str) -> list[str]:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[list[str]] = loop.create_future()
        if not self.waiting:  # the first since the last send: the send runs once the current callbacks have
            task = loop.create_task(self._send())
            self.sending.add(task)
            task.add_done_callback(self.sending.discard)
        self.waiting.setdefault(group, []).append(future)
        return list(await future)

    async def _send(self) -> None:
        waiting, self.waiting = self.waiting, {}
        try:
            hosts: dict[int, list[str]] = {}
            for group in waiting:
                hosts.setdefault(self.layer.consistent_hash(group), []).append(group)
            for index, groups in hosts.items():
                await self._ask(index, groups, waiting)
        finally:  # cancelled (the loop is closing): no caller waits for ever
            for futures in waiting.values():
                for future in futures:
                    future.cancel()

    async def _ask(self, index: int, groups: list[str], waiting: dict[str, list[asyncio.Future[list[str]]]]) -> None:
        """One round trip to one Redis host for all of its groups."""
        layer = self.layer
        # channels_redis keeps a group as a sorted set of channel names scored by when they joined, and
        # names a process's channels "specific.<its client_prefix>!…" (channels_redis 4, pinned in
        # requirements.txt).
        since, ours = time.time() - layer.group_expiry, f"specific.{layer.client_prefix}!"
        try:
            async with layer.connection(index).pipeline(transaction=False) as pipe:
                for group in groups:
                    pipe.zrangebyscore(layer._group_key(group), min=since, max="+inf")
                results = await pipe.execute()
        except Exception as exc:
            for group in groups:
                _settle(waiting[group], error=exc)
            return
        for group, members in zip(groups, results, strict=True):
            names = [m.decode() if isinstance(m, bytes) else str(m) for m in members]
            _settle(waiting[group], result=[name for name in names if not name.startswith(ours)])


def _settle(
    futures: list[asyncio.Future[list[str]]], *, result: list[str] | None = None, error: Exception | None = None
) -> None:
    for future in futures:
        if future.done():  # its caller gave up (a timeout)
            continue
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result or [])


_lookups: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[int, _Lookups]] = weakref.WeakKeyDictionary()
