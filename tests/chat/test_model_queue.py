"""The provider's fair queue (chat.model_queue, LLM_MAX_CONCURRENCY): chat first, then background work,
leases a dead process cannot hold, Stop while waiting; and, against the fake single-slot server, no
reply cut by another request."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.db import connection
from django.utils import timezone

from chat import model_queue
from chat.llm import ChatModel, TextDelta, get_chat_model
from chat.models import ProviderTicket
from chat.turn.agent import Turn

pytestmark = pytest.mark.django_db(transaction=True)

CHAT, BACKGROUND = model_queue.Priority.CHAT, model_queue.Priority.BACKGROUND


class Provider(ChatModel):
    """A stand-in provider for the queue's own tests: three words, then the end."""

    async def stream(self, **request: Any) -> AsyncIterator[Any]:  # type: ignore[override]
        for word in ("one ", "two ", "three"):
            yield TextDelta(word)

    def complete_json(self, **request: Any) -> str:  # type: ignore[override]
        return "{}"


def test_the_page_is_told_how_many_are_ahead_and_the_line_goes_once_sent() -> None:
    from chat.fragments import waiting_html

    assert "Waiting for the model (2 ahead)…" in waiting_html(7, 2)
    assert 'id="message-7-activity"' in waiting_html(0 + 7, 0) and "Waiting" not in waiting_html(7, 0)


def test_without_a_limit_chat_does_not_queue_but_background_work_does(settings: Any) -> None:
    settings.LLM_MAX_CONCURRENCY, settings.MEMORY_YIELD_TO_CHAT = 0, False
    assert not model_queue.queues(Provider(), CHAT)
    assert model_queue.queues(Provider(), BACKGROUND)
    settings.LLM_MAX_CONCURRENCY = 1
    assert model_queue.queues(Provider(), CHAT)


def test_yield_to_chat_is_read_as_one_request_at_a_time(settings: Any) -> None:
    settings.LLM_MAX_CONCURRENCY, settings.MEMORY_YIELD_TO_CHAT = 0, True
    assert model_queue.limit() == 1
    settings.LLM_MAX_CONCURRENCY = 3
    assert model_queue.limit() == 3


def test_chat_goes_ahead_of_background_work_and_each_waiter_knows_how_many_are_ahead(settings: Any) -> None:
    settings.LLM_MAX_CONCURRENCY = 1
    sending = model_queue._enter(CHAT)
    assert model_queue.position(sending, 60) is None
    judge = model_queue._enter(BACKGROUND)
    chat = model_queue._enter(CHAT)  # asked later, served first

    assert model_queue.position(judge, 60) == 2
    assert model_queue.position(chat, 60) == 1
    model_queue._leave(sending)
    assert model_queue.position(judge, 60) == 1
    assert model_queue.position(chat, 60) is None
    model_queue._leave(chat)
    assert model_queue.position(judge, 60) is None


def test_many_processes_looking_at_the_queue_at_once_never_deadlock(settings: Any) -> None:
    """Each look renews its own ticket, then reads the queue: with row locks, two looks on PostgreSQL
    locked each other's rows in opposite orders and one died of a deadlock (a turn ended in an error)."""
    settings.LLM_MAX_CONCURRENCY = 1
    tickets = [model_queue._enter(CHAT) for _ in range(6)]

    def look(ticket: int) -> int:
        try:
            for _ in range(25):
                model_queue.position(ticket, 60)
            return 0
        finally:
            connection.close()

    with ThreadPoolExecutor(len(tickets)) as pool:
        assert sum(pool.map(look, tickets)) == 0  # map re-raises a look's error here
    assert [model_queue.position(t, 60) for t in tickets] == [None, 1, 2, 3, 4, 5]


def test_background_work_alone_takes_at_most_memory_judge_concurrency_slots(settings: Any) -> None:
    settings.LLM_MAX_CONCURRENCY, settings.MEMORY_YIELD_TO_CHAT, settings.MEMORY_JUDGE_CONCURRENCY = 0, False, 1
    first, second = model_queue._enter(BACKGROUND), model_queue._enter(BACKGROUND)
    assert model_queue.position(first, 60) is None
    assert model_queue.position(second, 60) == 1
    settings.MEMORY_JUDGE_CONCURRENCY = 2
    assert model_queue.position(second, 60) is None


def _dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def test_a_killed_process_holds_no_place_in_the_queue(settings: Any) -> None:
    settings.LLM_MAX_CONCURRENCY = 1
    now = timezone.now()
    ProviderTicket.objects.create(
        provider=model_queue.provider_key(),
        priority=CHAT,
        owner=f"{socket.gethostname()}:{_dead_pid()}:deadbeef",
        created_at=now,
        granted_at=now,
        expires_at=now + timedelta(hours=1),  # its lease would last: its process is gone
    )
    mine = model_queue._enter(CHAT)
    assert model_queue.position(mine, 60) is None
    assert ProviderTicket.objects.count() == 1


def test_a_lease_another_host_stopped_renewing_runs_out(settings: Any) -> None:
    settings.LLM_MAX_CONCURRENCY = 1
    now = timezone.now()
    stale = ProviderTicket.objects.create(
        provider=model_queue.provider_key(),
        priority=CHAT,
        owner="elsewhere:1:cafe",
        created_at=now,
        granted_at=now,
        expires_at=now + timedelta(seconds=30),
    )
    mine = model_queue._enter(CHAT)
    assert model_queue.position(mine, 60) == 1  # another machine's live lease is respected
    ProviderTicket.objects.filter(pk=stale.pk).update(expires_at=now - timedelta(seconds=1))
    assert model_queue.position(mine, 60) is None


async def test_a_waiting_stream_says_how_many_are_ahead_then_streams(settings: Any) -> None:
    settings.LLM_MAX_CONCURRENCY = 1
    holder = await sync_to_async(model_queue._enter)(CHAT)
    assert await sync_to_async(model_queue.position)(holder, 60) is None

    async def release_soon() -> None:
        await asyncio.sleep(0.5)
        await sync_to_async(model_queue._leave)(holder)

    releasing = asyncio.create_task(release_soon())
    chunks = [c async for c in model_queue.stream(Provider(), messages=[])]
    await releasing

    assert chunks[:2] == [model_queue.Waiting(1), model_queue.Waiting(0)]
    assert "".join(c.text for c in chunks if isinstance(c, TextDelta)) == "one two three"
    assert await sync_to_async(ProviderTicket.objects.count)() == 0


async def test_stop_while_waiting_leaves_the_queue(settings: Any) -> None:
    settings.LLM_MAX_CONCURRENCY = 1
    holder = await sync_to_async(model_queue._enter)(CHAT)
    await sync_to_async(model_queue.position)(holder, 60)

    async def consume() -> None:
        async for _ in model_queue.stream(Provider(), messages=[]):
            pass

    task = asyncio.create_task(consume())
    await asyncio.sleep(0.5)
    assert await sync_to_async(ProviderTicket.objects.count)() == 2
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    left = await sync_to_async(lambda: list(ProviderTicket.objects.values_list("pk", flat=True)))()
    assert left == [holder]


async def test_a_turn_waiting_for_the_model_says_how_many_are_ahead_then_streams(
    fake_model: Any, user: Any, conversation: Any, settings: Any
) -> None:
    settings.LLM_MAX_CONCURRENCY = 1
    fake_model.reply("Hello ", "there")
    holder = await sync_to_async(model_queue._enter)(CHAT)
    await sync_to_async(model_queue.position)(holder, 60)

    async def release_soon() -> None:
        await asyncio.sleep(0.5)
        await sync_to_async(model_queue._leave)(holder)

    releasing = asyncio.create_task(release_soon())
    turn = await Turn.begin(user=user, conversation=conversation, content="Hi")
    events = [(e.type, e.text) async for e in turn.events()]
    await releasing

    types = [kind for kind, _ in events]
    assert ("waiting", "1") in events and ("waiting", "0") in events
    assert types.index("waiting") < types.index("delta") and types[-1] == "done"


async def test_the_first_token_deadline_starts_when_the_request_is_sent_not_while_it_waits(
    fake_openai: Any, settings: Any
) -> None:
    settings.LLM_MAX_CONCURRENCY, settings.LLM_FIRST_TOKEN_TIMEOUT = 1, 0.5
    holder = await sync_to_async(model_queue._enter)(CHAT)
    await sync_to_async(model_queue.position)(holder, 60)

    async def release_later() -> None:
        await asyncio.sleep(1.5)  # three times the first-token deadline in the queue
        await sync_to_async(model_queue._leave)(holder)

    releasing = asyncio.create_task(release_later())
    chunks = [c async for c in model_queue.stream(get_chat_model(), messages=[{"role": "user", "content": "Hi"}])]
    await releasing

    assert model_queue.Waiting(1) in chunks
    assert "".join(c.text for c in chunks if isinstance(c, TextDelta)) == "ok"
