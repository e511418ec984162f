"""Retention of extraction-run text (SPEC §8): runs older than MEMORY_RUN_RETENTION_DAYS keep their
counts, status and timings, not their text. The worker's sweep (memory.tasks.sweep_extractions_task)
strips, a bounded number at a time: the judge input, the raw output, the operations' content and
reasons, and error details that may quote the user. `text_removed_at` tells the admin it was retention.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction

from memory.extraction import clock
from memory.models import ExtractionRun

BATCH = 500
TEXT_REMOVED = "Text removed by retention."


def _op_counts_only(ops: Any) -> list[dict[str, Any]]:
    """An operation without its words: its kind, the memory it named, how many sources it had."""
    if not isinstance(ops, list):
        return []
    kept = []
    for op in ops:
        if isinstance(op, dict):
            item: dict[str, Any] = {"op": op.get("op")}
            if isinstance(op.get("id"), int):
                item["id"] = op["id"]
            if isinstance(op.get("sources"), list):
                item["sources"] = len(op["sources"])
            kept.append(item)
    return kept


def runs_text_strip(*, limit: int = BATCH) -> int:
    """Strip the text of up to `limit` finished runs older than the retention period; how many."""
    days = settings.MEMORY_RUN_RETENTION_DAYS
    if days <= 0:
        return 0
    now = clock.now()
    cutoff = now - timedelta(days=days)
    stripped = 0
    with transaction.atomic():
        rows = (
            ExtractionRun.objects.select_for_update()
            .filter(started_at__lt=cutoff, text_removed_at__isnull=True)
            .exclude(status=ExtractionRun.Status.RUNNING)
            .only("pk", "applied_ops", "dropped_ops")
            .order_by("started_at")[:limit]
        )
        for run in rows:
            ExtractionRun.objects.filter(pk=run.pk).update(
                judge_input=[],
                raw_output="",
                applied_ops=_op_counts_only(run.applied_ops),
                dropped_ops=_op_counts_only(run.dropped_ops),
                error=TEXT_REMOVED,
                text_removed_at=now,
            )
            stripped += 1
    return stripped
