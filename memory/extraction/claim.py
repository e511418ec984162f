"""The per-user claim: at most one extraction run per user at a time.

Taken with a conditional UPDATE (or a primary-key guarded INSERT); a crashed run's claim expires after
MEMORY_CLAIM_TTL_SECONDS, and that run then counts as a failed attempt (STALE_RUN_ERROR).
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

from django.conf import settings
from django.db import IntegrityError, transaction

from chat.process import owner as process_owner
from memory.extraction import clock
from memory.models import ExtractionRun, MemoryClaim

Status = ExtractionRun.Status


def claim_ttl() -> timedelta:
    # Longer than the judge's timeout, so a live run never loses its claim to a slow provider.
    return timedelta(seconds=settings.MEMORY_CLAIM_TTL_SECONDS)


def claim_take(*, user_id: int) -> uuid.UUID | None:
    """Take the user's extraction claim; None when another live run holds it."""
    now = clock.now()
    token = uuid.uuid4()
    values = {"token": token, "expires_at": now + claim_ttl(), "run": None, "owner": process_owner()}
    if MemoryClaim.objects.filter(user_id=user_id, token__isnull=True).update(**values):
        return token
    if MemoryClaim.objects.filter(user_id=user_id, expires_at__lte=now).update(**values):
        _close_stale_runs(user_id=user_id, now=now)
        return token
    try:
        with transaction.atomic():
            MemoryClaim.objects.create(user_id=user_id, **values)
    except IntegrityError:
        return None  # the row exists and is held (or was just created by a concurrent run)
    return token


STALE_RUN_ERROR = "The run stopped without finishing (its claim expired)."


def _close_stale_runs(*, user_id: int, now: datetime) -> None:
    # The previous holder crashed: its run counts as a failed attempt on that batch.
    ExtractionRun.objects.filter(owner_id=user_id, status=Status.RUNNING, started_at__lte=now - claim_ttl()).update(
        status=Status.FAILED, error=STALE_RUN_ERROR, finished_at=now
    )


def claim_release(*, user_id: int, token: uuid.UUID) -> bool:
    released = MemoryClaim.objects.filter(user_id=user_id, token=token)
    return bool(released.update(token=None, expires_at=None, run=None, owner=""))
