"""The Redis cache (rate-limit counters) shares one connection pool per process across requests."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
import redis
from asgiref.sync import sync_to_async
from django.core.cache import caches

pytestmark = pytest.mark.redis


def test_concurrent_requests_reuse_the_processes_redis_connections(settings: Any, counted_redis: str) -> None:
    settings.CACHES = {"default": {"BACKEND": "core.cache.SharedRedisCache", "LOCATION": counted_redis}}
    server = redis.Redis.from_url(counted_redis)
    prefix = uuid.uuid4().hex
    pools: set[int] = set()
    clients: list[Any] = []  # kept, so that no id is reused

    def request(number: int) -> Any:
        # What a request's rate-limit check does, in a context of its own as under ASGI.
        cache = caches["default"]
        cache.set(f"{prefix}:{number}", number, timeout=30)
        pools.add(id(cache._cache._get_connection_pool(write=True)))  # type: ignore[attr-defined]
        clients.append(cache._cache.get_client(write=True))  # type: ignore[attr-defined]
        return cache.get(f"{prefix}:{number}")

    async def requests() -> list[Any]:
        return await asyncio.gather(*[sync_to_async(request, thread_sensitive=False)(n) for n in range(40)])

    before = server.info("stats")["total_connections_received"]
    assert asyncio.run(requests()) == list(range(40))
    opened = server.info("stats")["total_connections_received"] - before

    assert len(pools) == 1
    assert len({id(client) for client in clients}) == 1  # one redis-py client for the pool, not one per command
    # At most one connection per thread that ran a request at the same time, not one per request.
    assert opened <= 12
