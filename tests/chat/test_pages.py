"""Which pages a turn's events go to through Redis: those of a conversation's group in other processes."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
import redis
from channels_redis.core import RedisChannelLayer

from chat.turn import pages

pytestmark = pytest.mark.redis


@pytest.fixture
def layers(counted_redis: str) -> tuple[RedisChannelLayer, RedisChannelLayer]:
    """Two processes' layers on one Redis: `here` (ours) and `there` (another web process)."""
    prefix = f"test-pages-{uuid.uuid4().hex}"
    return RedisChannelLayer(hosts=[counted_redis], prefix=prefix), RedisChannelLayer(
        hosts=[counted_redis], prefix=prefix
    )


def test_turns_starting_together_look_up_their_pages_in_one_connection(
    counted_redis: str, layers: tuple[RedisChannelLayer, RedisChannelLayer]
) -> None:
    here, there = layers
    server = redis.Redis.from_url(counted_redis)
    groups = [f"conversation-{n}" for n in range(60)]

    async def scenario() -> tuple[list[list[str] | None], dict[str, set[str]], int]:
        expected: dict[str, set[str]] = {}
        for n, group in enumerate(groups):
            await here.group_add(group, await here.new_channel())  # our own page: never listed
            expected[group] = set()
            for _ in range(n % 3):  # 0, 1 or 2 pages in the other process
                channel = await there.new_channel()
                await there.group_add(group, channel)
                expected[group].add(channel)
        before = server.info("stats")["total_connections_received"]
        found = await asyncio.gather(*[pages.remote_pages(here, group) for group in groups])
        opened = server.info("stats")["total_connections_received"] - before
        await here.flush()
        await there.flush()
        return found, expected, opened

    found, expected, opened = asyncio.run(scenario())

    assert [set(names or []) for names in found] == [expected[group] for group in groups]
    # One round trip for all of them; one at a time, each took (and opened) a pool connection of its own.
    assert opened <= 1


def test_a_lookup_whose_caller_gave_up_does_not_disturb_the_others(
    layers: tuple[RedisChannelLayer, RedisChannelLayer],
) -> None:
    here, there = layers

    async def scenario() -> tuple[str, list[str] | None, bool]:
        channel = await there.new_channel()
        await there.group_add("conversation-a", channel)
        impatient = asyncio.ensure_future(pages.remote_pages(here, "conversation-b"))
        patient = asyncio.ensure_future(pages.remote_pages(here, "conversation-a"))
        await asyncio.sleep(0)  # both are waiting for the same round trip
        impatient.cancel()
        found = await patient
        await here.flush()
        await there.flush()
        return channel, found, impatient.cancelled()

    channel, found, cancelled = asyncio.run(scenario())

    assert found == [channel]
    assert cancelled


def test_an_unreachable_redis_fails_every_waiting_lookup(settings: Any) -> None:
    from tests.processes import free_port

    port = free_port(range(18900, 18999))
    down = RedisChannelLayer(hosts=[f"redis://127.0.0.1:{port}/0"], prefix=f"test-pages-{uuid.uuid4().hex}")

    async def scenario() -> list[Any]:
        lookups = [pages.remote_pages(down, "conversation-a"), pages.remote_pages(down, "conversation-b")]
        return list(await asyncio.gather(*lookups, return_exceptions=True))

    results = asyncio.run(scenario())

    assert len(results) == 2 and all(isinstance(result, redis.ConnectionError) for result in results)
