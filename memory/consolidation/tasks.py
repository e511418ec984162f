"""Tidy-up tasks: a pass for one user, asked for ("Tidy up", the API) or due (the extraction sweep).

A background pass runs every MEMORY_CONSOLIDATE_DAYS for users with memories new since their last pass;
a user's first comes that long after their first memory. The task checks again that the pass is due, so
the sweep sending it twice costs nothing.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from celery import shared_task
from django.conf import settings
from django.db.models import Max, Min
from django.utils import timezone

from core.tasks import send_task_on_commit
from memory.models import ConsolidationPass, Memory

logger = logging.getLogger(__name__)


def _period() -> timedelta | None:
    days = int(settings.MEMORY_CONSOLIDATE_DAYS)
    return timedelta(days=days) if days > 0 else None


def is_due(*, user_id: int, now: datetime) -> bool:
    period = _period()
    if period is None:
        return False
    memories = Memory.objects.filter(owner_id=user_id, suggested=False)
    last = ConsolidationPass.objects.filter(owner_id=user_id).aggregate(at=Max("started_at"))["at"]
    if last is None:
        first = memories.aggregate(at=Min("created_at"))["at"]
        return first is not None and first <= now - period
    return last <= now - period and memories.filter(created_at__gt=last).exists()


def users_due(*, now: datetime, limit: int = 100) -> list[int]:
    """Users whose background pass is due (see the module's docstring)."""
    period = _period()
    if period is None:
        return []
    recent = ConsolidationPass.objects.filter(started_at__gt=now - period).values("owner_id")
    candidates = (
        Memory.objects.filter(suggested=False, invalid_at__isnull=True, created_at__lte=now)
        .exclude(owner_id__in=recent)
        .values_list("owner_id", flat=True)
        .distinct()
    )
    return [u for u in candidates[: limit * 5] if is_due(user_id=u, now=now)][:limit]


@shared_task(acks_late=True, ignore_result=True)
def consolidate_task(user_id: int, background: bool = False) -> int:
    """One tidy-up pass for the user; returns how many proposals it made."""
    from memory.consolidation.services import consolidation_pass

    if background and not is_due(user_id=user_id, now=timezone.now()):
        return 0
    return consolidation_pass(user_id=user_id).proposals


def consolidate_later(*, user_id: int, background: bool = False) -> None:
    send_task_on_commit(consolidate_task, args=(user_id, background), what=f"tidy-up for user {user_id}")


def sweep_due(*, now: datetime) -> int:
    due = users_due(now=now)
    for user_id in due:
        consolidate_later(user_id=user_id, background=True)
    return len(due)
