"""Counters of failed bearer tokens and of sign-ups, per client address, and of wrong passwords, per
account and address, in fixed windows.

Counters live in Django's cache: Redis when REDIS_URL is set (shared by every process), else the
process's own memory. Sign-ins with a password are throttled by django-axes (settings, "Login
throttling"); chat turns by the database (chat.services, CHAT_USER_TURNS_PER_MINUTE and
CHAT_ADDRESS_TURNS_PER_MINUTE).

A counter whose store is down (Redis unreachable) fails open: the request is judged as if nothing had
been counted, and the outage is logged once (again only after the store has answered in between). A
throttle must never turn an outage of its store into an outage of the API. The client's address is
REMOTE_ADDR, which the web server sets from X-Forwarded-For only for the proxies it trusts
(MEMORA_TRUSTED_PROXIES, scripts/serve.py).
"""

from __future__ import annotations

import ipaddress
import logging
import math
import time
from collections.abc import Callable
from typing import Any, TypeVar

from django.conf import settings
from django.contrib.auth.base_user import AbstractBaseUser
from django.core.cache import cache
from django.http import HttpRequest
from django.utils import timezone
from django.utils.translation import ngettext

logger = logging.getLogger(__name__)

T = TypeVar("T")
_store_down = False  # the last call failed: logged once, not again until the store answers


def _now() -> float:
    """The current time in seconds; a seam for tests."""
    return time.time()


def client_address(request: HttpRequest) -> str:
    return str(request.META.get("REMOTE_ADDR") or "")


def axes_client_ip(request: HttpRequest) -> str | None:
    """The address django-axes records a failed sign-in under (AXES_CLIENT_IP_CALLABLE): REMOTE_ADDR when it
    is an IP address, else None. A server on a Unix socket (or a test client) gives other text, which
    PostgreSQL's inet column refuses, and a failed sign-in must never become a 500."""
    address = client_address(request)
    try:
        ipaddress.ip_address(address)
    except ValueError:
        return None
    return address


def axes_lockout_parameters(request_or_attempt: Any, credentials: Any = None) -> list[str | list[str]]:
    """What django-axes counts failed sign-ins by (AXES_LOCKOUT_PARAMETERS): the account at the address,
    and the address as a whole only once LOGIN_ADDRESS_ACCOUNTS accounts have failed from it within the
    cool-off time. One person mistyping their own password cannot lock everyone else out of a shared
    address (an office, a household); someone trying many accounts from it does."""
    from axes.models import AccessAttempt

    address = getattr(request_or_attempt, "axes_ip_address", None) or getattr(request_or_attempt, "ip_address", None)
    per_account: list[str | list[str]] = [["username", "ip_address"]]
    if not address:
        return per_account
    since = timezone.now() - settings.AXES_COOLOFF_TIME
    accounts = (
        AccessAttempt.objects.filter(ip_address=address, attempt_time__gte=since).values("username").distinct().count()
    )
    return [*per_account, "ip_address"] if accounts >= int(settings.LOGIN_ADDRESS_ACCOUNTS) else per_account


def _guarded(call: Callable[[], T], fallback: T) -> T:
    """`call()`, or `fallback` when the cache cannot be reached (logged once per outage)."""
    global _store_down
    try:
        result = call()
    except Exception as exc:  # redis-py's ConnectionError, TimeoutError, …: any failure of the store
        if not _store_down:
            _store_down = True
            logger.warning(
                "the throttle counters' cache is unavailable (%s); throttles fail open until it is back", exc
            )
        return fallback
    if _store_down:
        _store_down = False
        logger.warning("the throttle counters' cache is available again")
    return result


class WindowCounter:
    """Events per client address in fixed windows of `window` seconds, refused past `limit`."""

    def __init__(self, name: str, *, limit: Callable[[], int], window: Callable[[], int]) -> None:
        self.name, self._limit, self._window = name, limit, window

    def _bounds(self) -> tuple[str, float]:
        size = max(1, self._window())
        start = math.floor(_now() / size) * size
        return str(int(start)), start + size

    def _key(self, address: str, window: str) -> str:
        return f"{self.name}:{address}:{window}"

    def retry_after(self, address: str) -> int | None:
        """Seconds until `address` may try again, or None when it may now (also when the store is down)."""
        window, end = self._bounds()
        limit = self._limit()
        if limit <= 0:
            return None
        count = _guarded(lambda: cache.get(self._key(address, window), 0), 0)
        if count < limit:
            return None
        return max(1, math.ceil(end - _now()))

    def record(self, address: str) -> None:
        window, end = self._bounds()
        key = self._key(address, window)
        timeout = math.ceil(end - _now()) + 1

        def increment() -> None:
            cache.add(key, 0, timeout=timeout)
            try:
                cache.incr(key)
            except ValueError:  # expired between add and incr
                cache.set(key, 1, timeout=timeout)

        _guarded(increment, None)


bearer_failures = WindowCounter(
    "api-auth-failures",
    limit=lambda: int(settings.API_AUTH_FAILURE_LIMIT),
    window=lambda: int(settings.API_AUTH_FAILURE_WINDOW),
)
signups = WindowCounter(
    "signups",
    limit=lambda: int(settings.ACCOUNTS_SIGNUPS_PER_HOUR),
    window=lambda: 3600,
)


password_failures = WindowCounter(
    "password-checks",
    limit=lambda: int(settings.PASSWORD_CHECK_FAILURE_LIMIT),
    window=lambda: int(settings.PASSWORD_CHECK_WINDOW),
)


class PasswordChecksThrottled(Exception):
    """Too many wrong passwords for this account from this address: answer 429 with Retry-After."""

    status = 429

    def __init__(self, retry_after: int) -> None:
        self.retry_after = retry_after
        minutes = max(1, math.ceil(retry_after / 60))
        super().__init__(
            ngettext(
                "Too many wrong passwords. Try again in %(minutes)d minute.",
                "Too many wrong passwords. Try again in %(minutes)d minutes.",
                minutes,
            )
            % {"minutes": minutes}
        )


def password_check(*, user: AbstractBaseUser, password: str | None, address: str) -> bool:
    """Whether `password` is the account's, for every check outside sign-in (deleting the account,
    changing the password, creating a token with a password). They share one counter per account and
    address: past PASSWORD_CHECK_FAILURE_LIMIT wrong answers in PASSWORD_CHECK_WINDOW seconds, every
    check raises PasswordChecksThrottled until the window ends, a right password included."""
    key = f"{user.pk}:{address}"
    retry_after = password_failures.retry_after(key)
    if retry_after is not None:
        raise PasswordChecksThrottled(retry_after)
    if password and user.check_password(password):
        return True
    password_failures.record(key)
    return False


def bearer_retry_after(request: HttpRequest) -> int | None:
    """Seconds until this address may try a failed token again, or None when it may now."""
    return bearer_failures.retry_after(client_address(request))


def bearer_failure_record(request: HttpRequest) -> None:
    bearer_failures.record(client_address(request))
