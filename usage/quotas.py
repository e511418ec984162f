"""Monthly token quotas (USER_MONTHLY_TOKENS, or the admin's per-user figure): a user over theirs starts no
turn, retry or API request (429, Retry-After: the start of next month, UTC) and their background memory work
waits, messages kept pending, until the month turns or the quota is raised.

Registered as chat's spend gate (chat.extensions.register_spend_gate): one indexed aggregate per check.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime

from django.conf import settings
from django.db import connection
from django.utils import formats, timezone
from django.utils.translation import gettext as _

from chat.rejections import TurnRejected
from core.sql import column, table
from usage.models import UserQuota
from usage.selectors import month_tokens


def _now() -> datetime:
    """Used for mocking."""
    return timezone.now()


@dataclass(frozen=True)
class Quota:
    limit: int | None  # tokens per month; None: unlimited
    used: int
    resets_at: datetime  # the first instant of next month, UTC

    @property
    def exceeded(self) -> bool:
        return self.limit is not None and self.used >= self.limit


def monthly_limit(*, user_id: int) -> int | None:
    """The user's monthly tokens: the admin's figure when set, else USER_MONTHLY_TOKENS (0: unlimited)."""
    # In SQL: every turn's start asks (chat.turn.transactions), and Django building the query cost more than
    # running it.
    sql = f"SELECT {column(UserQuota, 'monthly_tokens')} FROM {table(UserQuota)} WHERE {column(UserQuota, 'user')} = %s"
    with connection.cursor() as cursor:
        cursor.execute(sql, [user_id])
        found = cursor.fetchone()
    override = found[0] if found is not None else None  # a row may hold no figure (null): the default applies
    limit = override if override is not None else int(settings.USER_MONTHLY_TOKENS or 0)
    return limit or None


def next_month(now: datetime) -> datetime:
    first = now.astimezone(UTC).date().replace(day=1)
    following = date(first.year + first.month // 12, first.month % 12 + 1, 1)
    return datetime(following.year, following.month, 1, tzinfo=UTC)


def quota_of(*, user_id: int, now: datetime | None = None) -> Quota:
    now = now or _now()
    limit = monthly_limit(user_id=user_id)
    used = month_tokens(user_id=user_id, today=now.astimezone(UTC).date()) if limit is not None else 0
    return Quota(limit=limit, used=used, resets_at=next_month(now))


class QuotaExceeded(TurnRejected):
    status = 429

    def __init__(self, quota: Quota, now: datetime) -> None:
        when = formats.date_format(quota.resets_at, "DATE_FORMAT")
        super().__init__(
            _(
                "You have used this month's %(limit)s tokens. Your quota resets on %(date)s (UTC); "
                "until then, ask your administrator to raise it. Your messages are kept."
            )
            % {"limit": formats.number_format(quota.limit or 0, force_grouping=True), "date": when}
        )
        self.retry_after = max(1, int((quota.resets_at - now).total_seconds()))


def quota_check(user_id: int) -> None:
    """chat's spend gate: QuotaExceeded when the user has used their month's tokens."""
    now = _now()
    quota = quota_of(user_id=user_id, now=now)
    if quota.exceeded:
        raise QuotaExceeded(quota, now)
