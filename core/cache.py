"""Django's Redis cache with one client, and so one connection pool, per process.

Django keeps a cache backend instance per thread and async context (`caches` is an asgiref Local).
Under ASGI every request runs in a context of its own, so with the stock backend each request built a
new client, a new connection pool and a new Redis connection (a TCP handshake and redis-py's set-up,
about a tenth of an API request's CPU), and left the old one for the garbage collector. redis-py's
pools are thread-safe: every instance of this backend with the same settings uses one. So are its
clients, and Django's makes one for every command (building redis-py's table of reply parsers each time):
here each pool has one.
"""

from __future__ import annotations

import threading
from typing import Any

from django.core.cache.backends.redis import RedisCache, RedisCacheClient
from django.utils.functional import cached_property

_clients: dict[str, RedisCacheClient] = {}
_lock = threading.Lock()


class _ClientPerPool(RedisCacheClient):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._redis_clients: dict[int, Any] = {}  # pool index → its one redis-py client

    def get_client(self, key: Any = None, *, write: bool = False) -> Any:
        index = self._get_connection_pool_index(write)  # type: ignore[attr-defined]
        client = self._redis_clients.get(index)
        if client is None:
            made = self._client(connection_pool=self._get_connection_pool(write))  # type: ignore[attr-defined]
            client = self._redis_clients.setdefault(index, made)
        return client


class SharedRedisCache(RedisCache):
    def __init__(self, server: str | list[str], params: dict[str, Any]) -> None:
        super().__init__(server, params)
        self._class = _ClientPerPool
        self._shared_key = repr((server, sorted(params.get("OPTIONS", {}).items())))

    @cached_property
    def _cache(self) -> RedisCacheClient:
        with _lock:
            client = _clients.get(self._shared_key)
            if client is None:
                client = _clients[self._shared_key] = super()._cache
        return client
