"""Who may start a turn, and how often: the checks a turn's start makes with the user's locked row.

- `CHAT_USER_TURNS_PER_MINUTE` per user and `CHAT_ADDRESS_TURNS_PER_MINUTE` per client address (across
  accounts) count model turns started, retries included, in `chat.TurnStart`: a table of its own, so
  deleting a conversation or its messages resets nothing. Old rows are pruned by the web processes'
  sweep (`turn_starts_prune`).
- A turn from a socket re-checks the socket's access (`TurnOrigin`): the user still exists and is
  active, and the session the socket was opened with still exists and matches the current password.
  Logout, a password change, deactivation and deletion therefore end a socket even when the channel
  layer missed the broadcast that closes it.

Both are read in the one statement that locks the user's row (`user_row`): no extra trip to the
database on the way to the first token.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.sessions.models import Session
from django.db import connection, models
from django.utils import timezone
from django.utils.crypto import constant_time_compare

from accounts.models import User
from chat.models import Conversation, TurnStart
from chat.rejections import TooManyTurns
from core.sql import column, prepared, table


@dataclass(frozen=True)
class TurnOrigin:
    """Where a turn comes from. `address` (the client's, REMOTE_ADDR) counts towards
    CHAT_ADDRESS_TURNS_PER_MINUTE. A socket opened with a signed-in session names it (`session_key`, and
    the password-derived `session_hash` it was signed in with): the turn's start re-checks, in the same
    statement that locks the user's row, that the session still exists and the password is unchanged."""

    address: str = ""
    session_key: str | None = None
    session_hash: str | None = None


def turn_rate_check(*, user: User, now: Any, recent: int | None = None) -> None:
    """Raise TooManyTurns when `user` started CHAT_USER_TURNS_PER_MINUTE turns in the last 60 s;
    `recent` is that count when the caller already has it (turn_start reads it with the user row)."""
    limit = settings.CHAT_USER_TURNS_PER_MINUTE
    if recent is None:
        row = user_row(user_id=user.pk, now=now)
        recent = row.user_turns if row else 0
    if limit <= 0 or recent < limit:
        return
    raise TooManyTurns(limit, _retry_after(TurnStart.objects.filter(user=user), limit=limit, now=now))


def address_rate_check(*, address: str, now: Any, recent: int) -> None:
    limit = settings.CHAT_ADDRESS_TURNS_PER_MINUTE
    if not address or limit <= 0 or recent < limit:
        return
    starts = TurnStart.objects.filter(address=address)
    raise TooManyTurns(limit, _retry_after(starts, limit=limit, now=now), per_address=True)


def _retry_after(starts: models.QuerySet[TurnStart], *, limit: int, now: Any) -> int:
    """Seconds until the oldest of the last `limit` turn starts leaves the 60-second window."""
    window = now - timedelta(seconds=60)
    times = list(
        starts.filter(started_at__gt=window).order_by("-started_at").values_list("started_at", flat=True)[:limit]
    )
    return max(1, math.ceil((times[-1] - window).total_seconds())) if times else 1


TURN_STARTS_KEPT = timedelta(minutes=2)


def turn_starts_prune(*, now: Any = None) -> int:
    """Delete turn starts too old to count for any limit (the recovery sweep calls it)."""
    deleted, _by_model = TurnStart.objects.filter(started_at__lt=(now or timezone.now()) - TURN_STARTS_KEPT).delete()
    return deleted


@dataclass
class UserRow:
    """What a turn's start reads with the user's row (`user_row`)."""

    memory_enabled: bool
    is_active: bool
    password: str
    user_turns: int  # turns the user started in the last 60 s
    address_turns: int  # turns started from the origin's address in the last 60 s (0 without one)
    session_alive: bool  # the origin's session is stored and unexpired (True without one)

    def has_access(self, origin: TurnOrigin) -> bool:
        if not self.is_active or not self.session_alive:
            return False
        if origin.session_hash is None:
            return True
        # As django.contrib.auth.get_user: the session's hash must match the current password's.
        probe = User(password=self.password)
        hashes = [probe.get_session_auth_hash(), *probe.get_session_auth_fallback_hash()]
        return any(constant_time_compare(origin.session_hash, h) for h in hashes)


def user_row(*, user_id: int, now: Any, lock: bool = False, origin: TurnOrigin | None = None) -> UserRow | None:
    """The user's row with the counts the turn limits need (None when the user is gone), with `lock`
    locked for update. Turn starts are counted in the database (chat.TurnStart), so the limits
    (CHAT_USER_TURNS_PER_MINUTE, CHAT_ADDRESS_TURNS_PER_MINUTE) hold across processes.

    In SQL rather than the ORM on purpose: it is on every turn's way to its first token, and Django's
    resolving of the counting subqueries (it deep-copies the inner query) took about a third of the CPU
    of a turn's start; a burst of turns is limited by how fast they start."""
    origin = origin or TurnOrigin()
    starts = table(TurnStart)
    started = column(TurnStart, "started_at")
    since = connection.ops.adapt_datetimefield_value(now - timedelta(seconds=60))
    params: list[Any] = [since]
    by_address = "0"
    if origin.address:
        by_address = (
            f"(SELECT COUNT(*) FROM {starts} a WHERE a.{column(TurnStart, 'address')} = %s AND a.{started} > %s)"
        )
        params += [origin.address[:64], since]
    session = "1"
    if origin.session_key is not None and settings.SESSION_ENGINE == "django.contrib.sessions.backends.db":
        session = (
            f"(SELECT COUNT(*) FROM {table(Session)} s WHERE s.{column(Session, 'session_key')} = %s"
            f" AND s.{column(Session, 'expire_date')} > %s)"
        )
        params += [origin.session_key, connection.ops.adapt_datetimefield_value(now)]
    for_update = " FOR UPDATE" if lock and connection.features.has_select_for_update else ""
    sql = (
        f"SELECT u.{column(User, 'memory_enabled')}, u.{column(User, 'is_active')}, u.{column(User, 'password')},"
        f" (SELECT COUNT(*) FROM {starts} t WHERE t.{column(TurnStart, 'user')} = u.{column(User, 'id')}"
        f" AND t.{started} > %s), {by_address}, {session}"
        f" FROM {table(User)} u WHERE u.{column(User, 'id')} = %s{for_update}"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [*params, user_id])
        found = cursor.fetchone()
    if found is None:
        return None
    memory_enabled, is_active, password, user_turns, address_turns, session_alive = found
    return UserRow(
        bool(memory_enabled),
        bool(is_active),
        password,
        int(user_turns or 0),
        int(address_turns or 0),
        bool(session_alive),
    )


# The two statements below are SQL for the same reason as `user_row`.


def turns_running_elsewhere(*, user_id: int, conversation_id: Any, now: Any) -> int:
    """How many of the user's other conversations hold a live lock: replies being written (run slots)."""
    c = functools.partial(column, Conversation)
    sql = (
        f"SELECT COUNT(*) FROM {table(Conversation)} WHERE {c('owner')} = %s AND {c('lock_expires_at')} > %s"
        f" AND {c('id')} <> %s"
    )
    other = prepared(Conversation, "id", conversation_id)
    with connection.cursor() as cursor:
        cursor.execute(sql, [user_id, connection.ops.adapt_datetimefield_value(now), other])
        return int(cursor.fetchone()[0])


def turn_counted(*, user_id: int, address: str, now: Any) -> None:
    """Count a turn started (chat.TurnStart), towards both turn rates."""
    columns = ", ".join(column(TurnStart, field) for field in ("user", "address", "started_at"))
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {table(TurnStart)} ({columns}) VALUES (%s, %s, %s)",
            [user_id, address[:64], connection.ops.adapt_datetimefield_value(now)],
        )
