"""The end of a memory's life that nobody asks for: end dates passing and suggestions left unanswered.

Both run in the worker's sweep (memory.tasks.sweep_extractions_task, every MEMORY_SWEEP_SECONDS). An
expired memory is already out of every block from its end date on (memory.selectors.memories_active
filters at read time); the sweep only moves it to history, with `invalid_reason: "expired"`, where the
user can restore it. A suggestion the user did not answer within MEMORY_SUGGESTION_DAYS is deleted:
it was never a memory.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import F, Q

from accounts.models import User
from memory.models import Memory


def memories_expire(*, now: datetime, user_id: int | None = None) -> int:
    """Move active memories whose end date has passed to history (invalid_at = their end date)."""
    due = Memory.objects.filter(invalid_at__isnull=True, suggested=False, expires_at__lte=now)
    if user_id is not None:
        due = due.filter(owner_id=user_id)
    return due.update(invalid_at=F("expires_at"), invalid_reason=Memory.InvalidReason.EXPIRED)


def suggestions_expire(*, now: datetime) -> int:
    """Delete suggestions left unanswered for MEMORY_SUGGESTION_DAYS, and those whose end date passed."""
    cutoff = now - timedelta(days=settings.MEMORY_SUGGESTION_DAYS)
    stale = Memory.objects.filter(suggested=True, invalid_at__isnull=True).filter(
        Q(created_at__lte=cutoff) | Q(expires_at__lte=now)
    )
    deleted, _ = stale.delete()
    return deleted


def memory_writes_lock(*, user_id: int, now: datetime) -> None:
    """Serialise one user's memory writes (a no-op on SQLite, whose writers queue anyway); memories
    whose end date passed leave the active set first, so their sentence and key are free again."""
    list(User.objects.select_for_update().filter(pk=user_id).values_list("pk", flat=True))
    memories_expire(user_id=user_id, now=now)
