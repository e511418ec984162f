"""The extraction sweep: work a dead worker (or a lost broker message) left behind is started again.

Background extraction is triggered by a message on the broker after a turn. That message can be lost:
a worker killed mid-extraction (the embedded filesystem broker has already handed the message over),
a Redis restart without persistence, a broker outage while the turn finished. And the dead worker's
claim would hold the user for MEMORY_CLAIM_TTL_SECONDS. So every worker runs this sweep when
it starts and every MEMORY_SWEEP_SECONDS after (config/celery.py):

1. `claims_recover`: a claim whose holder ran on this host and is gone is released at once, its run
   closed as a failed attempt (like an expired claim: a batch that kills its worker three times is
   dropped, not retried forever);
2. `pending_work`: users with at least MEMORY_EXTRACT_MIN_TURNS pending messages, the newest older
   than MEMORY_SWEEP_GRACE_SECONDS (the normal path had its chance), and no live claim, get a
   background extraction task.

Extraction is idempotent (claims, `UPDATE … WHERE memory_status='pending'`), so a task the sweep sends
while another one is on its way costs one claim check, never a second application.
"""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Count, Max, Min, Q

from chat.process import owner_is_dead
from memory.extraction import clock
from memory.extraction.claim import STALE_RUN_ERROR
from memory.models import ExtractionRun, MemoryClaim
from memory.selectors import messages_pending_all_users


def claims_recover() -> int:
    """Release the claims held by a process that died on this host; returns how many."""
    now = clock.now()
    released = 0
    for claim in MemoryClaim.objects.filter(token__isnull=False, expires_at__gt=now).exclude(owner=""):
        if not owner_is_dead(claim.owner):
            continue
        with transaction.atomic():
            free = MemoryClaim.objects.filter(pk=claim.pk, token=claim.token)
            if not free.update(token=None, expires_at=None, run=None, owner=""):
                continue
            if claim.run_id is not None:
                ExtractionRun.objects.filter(pk=claim.run_id, status=ExtractionRun.Status.RUNNING).update(
                    status=ExtractionRun.Status.FAILED, error=STALE_RUN_ERROR, finished_at=now
                )
            released += 1
    return released


def pending_work() -> list[tuple[int, int]]:
    """(user id, newest pending message id) of each user whose background extraction is overdue."""
    now = clock.now()
    # Overdue: quiet for the grace and the idle wait (memory.extraction.reads.quiet), or waiting for too long.
    grace = timedelta(seconds=max(settings.MEMORY_SWEEP_GRACE_SECONDS, settings.MEMORY_EXTRACT_IDLE_SECONDS))
    longest = timedelta(seconds=settings.MEMORY_EXTRACT_MAX_WAIT_SECONDS)
    pending = messages_pending_all_users(memory_on=True)
    rows = (
        pending.values("user_id")
        .annotate(count=Count("id"), newest=Max("id"), newest_at=Max("created_at"), oldest_at=Min("created_at"))
        .filter(Q(newest_at__lte=now - grace) | Q(oldest_at__lte=now - longest))
        .filter(count__gte=settings.MEMORY_EXTRACT_MIN_TURNS)
    )
    held = set(MemoryClaim.objects.filter(token__isnull=False, expires_at__gt=now).values_list("user_id", flat=True))
    return [(row["user_id"], row["newest"]) for row in rows if row["user_id"] not in held]
