"""A fair queue per model provider: at most LLM_MAX_CONCURRENCY requests at once, across every web and
worker process, chat ahead of background work.

A server people run at home often has a single slot, and a new request cuts off the one it is writing
(llama.cpp's default) or waits behind it past the first-token deadline. So every request to the provider
takes a ticket (`chat.models.ProviderTicket`) and waits until it is at the head of the queue and a slot
is free: chat turns first (priority CHAT, in the order they asked), then judge calls and background
summaries (BACKGROUND). The wait is the request's own: a turn shows "Waiting for the model (2 ahead)…",
Stop cancels it, and its first-token deadline starts only once the request is sent. A judge request
waits before every call, the pieces of a split batch included.

A slot is free only when the server is: a request given up at its deadline keeps its ticket until the
server is seen idle or must have finished it (chat.llm.server_load), so with LLM_MAX_CONCURRENCY=1 no
two requests are ever at the server at once, abandoned ones included.

Tickets are leases a dead process cannot hold: a waiting ticket is renewed at each look
(WAIT_LEASE_SECONDS), a sending one for as long as its call may take, and whoever looks next deletes a
ticket whose lease ran out or whose process is gone from this host (chat.process).

Without LLM_MAX_CONCURRENCY (0, the default) chat does not queue at all; background calls still take
turns, at most MEMORY_JUDGE_CONCURRENCY at once (an alias kept for one release, as is
MEMORY_YIELD_TO_CHAT=1, which stands for LLM_MAX_CONCURRENCY=1). Embeddings never queue here.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from collections.abc import AsyncGenerator, AsyncIterator, Iterator
from contextlib import aclosing, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from channels.db import database_sync_to_async
from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from chat.llm import server_load
from chat.llm.base import ChatModel, LLMError, StreamChunk, TextDelta
from chat.models import ProviderTicket
from chat.process import owner, owner_is_dead

logger = logging.getLogger(__name__)

Priority = ProviderTicket.Priority
POLL_SECONDS = 0.2
#: a waiting ticket not renewed for this long belongs to a process that stopped
WAIT_LEASE_SECONDS = 15.0
#: beyond a call's own time limit, how long its ticket outlives it (a late process is not a dead one)
LEASE_MARGIN_SECONDS = 30.0
BUSY = "The model is busy with other requests; this one gave up its place in the queue."

# The priority of the blocking calls made in this context (judge calls and summaries): CHAT while a user
# waits for them (a flush, a turn's own compaction), BACKGROUND otherwise (see `background`).
_priority: ContextVar[int] = ContextVar("model_queue_priority", default=Priority.CHAT)


@dataclass(frozen=True)
class Waiting:
    """A stream's chunk while its request waits: how many requests are ahead of it (at least 1; 0 once
    it is sent, after it waited)."""

    ahead: int


def limit() -> int:
    """Requests to the provider at once (0: no limit)."""
    value = max(0, int(settings.LLM_MAX_CONCURRENCY))
    return value or (1 if settings.MEMORY_YIELD_TO_CHAT else 0)


def background_limit() -> int:
    return max(1, int(settings.MEMORY_JUDGE_CONCURRENCY))


def provider_key() -> str:
    return hashlib.sha256((settings.OPENAI_BASE_URL or "default").encode()).hexdigest()[:16]


def queues(model: ChatModel, priority: int) -> bool:
    """Whether a request takes a ticket: not for the offline demo model, nor for chat without a limit."""
    return not model.is_demo and (priority == Priority.BACKGROUND or limit() > 0)


@contextmanager
def background() -> Iterator[None]:
    """Blocking calls made in this block wait behind chat (a background judge run or summary)."""
    token = _priority.set(Priority.BACKGROUND)
    try:
        yield
    finally:
        _priority.reset(token)


def _now() -> Any:
    return timezone.now()


def _enter(priority: int) -> int:
    now = _now()
    ticket = ProviderTicket.objects.create(
        provider=provider_key(),
        priority=priority,
        owner=owner(),
        created_at=now,
        expires_at=now + timedelta(seconds=WAIT_LEASE_SECONDS),
    )
    return ticket.pk


def _lock_queue() -> None:
    """On PostgreSQL, one look at a provider's queue at a time, until the transaction ends. Row locks
    would not do: a look that renewed its own ticket and then locked the others deadlocked with a second
    look doing the same the other way round. (SQLite's single writer already serialises the looks.)"""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [int(provider_key()[:15], 16)])


def _live_tickets(ticket_id: int, now: Any) -> list[ProviderTicket]:
    """The provider's queue in order, after deleting the tickets whose lease ran out or whose process is
    gone (never `ticket_id`'s own)."""
    rows = list(ProviderTicket.objects.filter(provider=provider_key()).order_by("priority", "id"))
    gone = {r.pk for r in rows if r.pk != ticket_id and (r.expires_at <= now or owner_is_dead(r.owner))}
    if gone:
        ProviderTicket.objects.filter(pk__in=gone).delete()
    return [r for r in rows if r.pk not in gone]


def _slot_free(mine: ProviderTicket, sending: list[ProviderTicket]) -> bool:
    """Whether a request of `mine`'s priority may be sent beside `sending`: within LLM_MAX_CONCURRENCY,
    and for background work also within MEMORY_JUDGE_CONCURRENCY."""
    if limit() and len(sending) >= limit():
        return False
    if mine.priority != Priority.BACKGROUND:
        return True
    return sum(r.priority == Priority.BACKGROUND for r in sending) < background_limit()


@transaction.atomic
def _try_grant(ticket_id: int, lease: float) -> int | None:
    """None once the ticket may send; else how many requests are ahead of it (sending or waiting)."""
    _lock_queue()
    now = _now()
    # A write first: on SQLite it takes the write lock at once, so two looks wait for each other instead
    # of failing to upgrade.
    if not ProviderTicket.objects.filter(pk=ticket_id).update(expires_at=now + timedelta(seconds=WAIT_LEASE_SECONDS)):
        raise _Lost  # deleted as stale while this process was stalled: take a new place
    rows = _live_tickets(ticket_id, now)
    mine = next(r for r in rows if r.pk == ticket_id)
    return None if mine.granted_at is not None else _grant(mine, rows, now, lease)


def _grant(mine: ProviderTicket, rows: list[ProviderTicket], now: Any, lease: float) -> int | None:
    """Grant `mine` when it is first in line and a slot is free (None); else how many are ahead of it."""
    sending = [r for r in rows if r.granted_at is not None]
    ahead = [r for r in rows if r.granted_at is None].index(mine)
    if ahead == 0 and _slot_free(mine, sending):
        mine.granted_at, mine.expires_at = now, now + timedelta(seconds=lease)
        mine.save(update_fields=["granted_at", "expires_at"])
        return None
    return len(sending) + ahead


class _Lost(Exception):
    pass


def _renew(ticket_id: int, lease: float) -> None:
    ProviderTicket.objects.filter(pk=ticket_id).update(expires_at=_now() + timedelta(seconds=lease))


def _leave(ticket_id: int) -> None:
    ProviderTicket.objects.filter(pk=ticket_id).delete()


def position(ticket_id: int, lease: float) -> int | None:
    """One look at the queue for `ticket_id`: None when it may send, else how many are ahead. Tests and
    the page's first look use it; a lost ticket counts as sending (its holder takes a new place)."""
    try:
        return _try_grant(ticket_id, lease)
    except _Lost:
        return None


def hold_after_abandon(
    model: ChatModel, *, ticket_id: int | None, lease: float, seconds: float, model_name: str = ""
) -> None:
    """Keep `ticket_id`'s place (renewed) while the server may still be working on a request given up
    on: until it is seen idle, or for `seconds` (see chat.llm.server_load)."""
    base_url = settings.OPENAI_BASE_URL
    if model.is_demo or not base_url or seconds <= 0:
        return  # the demo has no server; OpenAI's own service is not a single slot

    def renew() -> None:
        if ticket_id is not None:
            _renew(ticket_id, lease)

    why = server_load.wait_until_idle(base_url=base_url, seconds=seconds, renew=renew)
    logger.info("held the provider queue after an abandoned %s request until %s", model_name or "model", why)


@contextmanager
def slot(
    model: ChatModel,
    *,
    lease: float,
    wait: float,
    priority: int | None = None,
    max_tokens: int | None = None,
    model_name: str = "",
) -> Iterator[None]:
    """Hold a place to send one blocking request for the block. Raises LLMError(kind="busy") when none
    came within `wait` seconds. `priority` defaults to the context's (see `background`). A request the
    block gives up on (LLMError kind "timeout") keeps the place until the server is done with it, its
    `max_tokens` of `model_name` at the speed the server has shown."""
    priority = _priority.get() if priority is None else priority
    if not queues(model, priority):
        yield
        return
    ticket = _enter(priority)
    try:
        end = time.monotonic() + wait
        while True:
            try:
                if _try_grant(ticket, lease) is None:
                    break
            except _Lost:
                ticket = _enter(priority)
                continue
            if time.monotonic() >= end:
                raise LLMError(BUSY, kind="busy")
            time.sleep(POLL_SECONDS)
        sent = time.monotonic()
        try:
            yield
        except LLMError as exc:
            if exc.kind == "timeout":
                elapsed = time.monotonic() - sent
                limit = max(0.0, lease - LEASE_MARGIN_SECONDS)
                # The call asked for no more than the server writes within its limit (server_load.tokens_within).
                sent_tokens = server_load.tokens_within(model=model_name, max_tokens=max_tokens, seconds=limit)
                seconds = server_load.hold_seconds(
                    model=model_name, max_tokens=sent_tokens, elapsed=elapsed, time_limit=limit
                )
                if exc.writing:  # a stream closed while tokens arrived: the server stops at the next one
                    seconds = server_load.STREAM_CLOSED_HOLD_SECONDS
                hold_after_abandon(model, ticket_id=ticket, lease=lease, seconds=seconds, model_name=model_name)
            raise
    finally:
        _leave(ticket)


_enter_async = database_sync_to_async(_enter, thread_sensitive=False)
_try_grant_async = database_sync_to_async(_try_grant, thread_sensitive=False)
_renew_async = database_sync_to_async(_renew, thread_sensitive=False)
_leave_async = database_sync_to_async(_leave, thread_sensitive=False)
_hold_async = database_sync_to_async(hold_after_abandon, thread_sensitive=False)


def stream_lease() -> float:
    """How long a streaming request's ticket lasts without a chunk: the stream's own limits, then a margin."""
    return max(float(settings.LLM_FIRST_TOKEN_TIMEOUT), float(settings.LLM_STALL_TIMEOUT)) + LEASE_MARGIN_SECONDS


async def stream(model: ChatModel, /, **request: Any) -> AsyncIterator[StreamChunk | Waiting]:
    """`model.stream(**request)` once the chat request's turn has come; `Waiting` chunks before that,
    one each time the number ahead changes. Cancelling (Stop) while waiting leaves the queue at once."""
    if not queues(model, Priority.CHAT):
        async for chunk in model.stream(**request):
            yield chunk
        return
    lease = stream_lease()
    place = _Place(await _enter_async(Priority.CHAT))
    try:
        async with aclosing(_waiting(place, lease)) as waiting:
            async for ahead in waiting:
                yield ahead
        async with aclosing(_sent(model, place.ticket, lease, request)) as sent:
            async for chunk in sent:
                yield chunk
    finally:
        await asyncio.shield(_leave_async(place.ticket))


@dataclass
class _Place:
    ticket: int  # a new one when the old was lost


async def _waiting(place: _Place, lease: float) -> AsyncGenerator[Waiting, None]:
    """Until the place's ticket may send: a `Waiting` each time the number ahead changes."""
    shown: int | None = None
    while True:
        try:
            ahead = await _try_grant_async(place.ticket, lease)
        except _Lost:
            place.ticket = await _enter_async(Priority.CHAT)
            continue
        if ahead is None:
            if shown is not None:
                yield Waiting(0)  # sent at last: the page clears its waiting line
            return
        if ahead != shown:
            shown = ahead
            yield Waiting(ahead)
        await asyncio.sleep(POLL_SECONDS)


async def _sent(
    model: ChatModel, ticket: int, lease: float, request: dict[str, Any]
) -> AsyncGenerator[StreamChunk, None]:
    """The model's stream, the ticket renewed as it goes; a timeout holds the place as long as the server
    may still be busy with the request."""
    renewed = sent = time.monotonic()
    writing = False  # text arrived: closing the stream stops the server at its next token
    try:
        async for chunk in model.stream(**request):
            if time.monotonic() - renewed > lease / 3:
                renewed = time.monotonic()
                await _renew_async(ticket, lease)
            writing = writing or isinstance(chunk, TextDelta)
            yield chunk
    except LLMError as exc:
        if exc.kind == "timeout":
            seconds = server_load.STREAM_CLOSED_HOLD_SECONDS
            if not writing:
                seconds = server_load.hold_seconds(
                    model=settings.CHAT_MODEL,
                    max_tokens=request.get("max_tokens"),
                    elapsed=time.monotonic() - sent,
                    time_limit=float(settings.LLM_FIRST_TOKEN_TIMEOUT),
                )
            await _hold_async(model, ticket_id=ticket, lease=lease, seconds=seconds, model_name=settings.CHAT_MODEL)
        raise
