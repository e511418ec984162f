"""Failed bearer-token authentications, counted per client address in fixed windows.

Counters live in Django's cache: Redis when REDIS_URL is set (shared by every process), else the
process's own memory. Sign-ins with a password are throttled by django-axes (settings, "Login throttling").
"""

from __future__ import annotations

import math
import time

from django.conf import settings
from django.core.cache import cache
from django.http import HttpRequest


def _now() -> float:
    """The current time in seconds; a seam for tests."""
    return time.time()


def _window() -> tuple[str, float]:
    size = max(1, settings.API_AUTH_FAILURE_WINDOW)
    start = math.floor(_now() / size) * size
    return str(int(start)), start + size


def _key(request: HttpRequest, window: str) -> str:
    return f"api-auth-failures:{request.META.get('REMOTE_ADDR', '')}:{window}"


def bearer_retry_after(request: HttpRequest) -> int | None:
    """Seconds until this address may try a token again, or None when it may now."""
    window, end = _window()
    if cache.get(_key(request, window), 0) < settings.API_AUTH_FAILURE_LIMIT:
        return None
    return max(1, math.ceil(end - _now()))


def bearer_failure_record(request: HttpRequest) -> None:
    window, end = _window()
    key = _key(request, window)
    cache.add(key, 0, timeout=math.ceil(end - _now()) + 1)
    try:
        cache.incr(key)
    except ValueError:  # expired between add and incr
        cache.set(key, 1, timeout=settings.API_AUTH_FAILURE_WINDOW)
