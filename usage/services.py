"""Writes: the daily usage rows (SPEC §9 "Usage")."""

from __future__ import annotations

from datetime import date

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from usage.models import NO_PROJECT, DailyUsage, Kind, ReplyMemoryTokens


def today() -> date:
    """Used for mocking."""
    return timezone.localdate()


def usage_record(
    *,
    user_id: int,
    project_id: int | None,
    model: str,
    kind: str,
    prompt_tokens: int,
    completion_tokens: int,
    estimated: bool,
    day: date | None = None,
) -> None:
    """Add one call to its day's row: created on first use, then incremented in the database (F()), so
    concurrent calls (a turn and a judge run) never lose each other's counts."""
    if kind not in Kind.values:
        raise ValueError(f"unknown usage kind {kind!r}")
    prompt, completion = max(0, int(prompt_tokens)), max(0, int(completion_tokens))
    guessed = prompt + completion if estimated else 0
    key = {
        "user_id": user_id,
        "project_key": project_id or NO_PROJECT,
        "model": (model or "")[:200],
        "kind": kind,
        "day": day or today(),
    }
    with transaction.atomic():
        row, created = DailyUsage.objects.get_or_create(
            **key,
            defaults={
                "calls": 1,
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "estimated_tokens": guessed,
            },
        )
        if not created:
            DailyUsage.objects.filter(pk=row.pk).update(
                calls=F("calls") + 1,
                prompt_tokens=F("prompt_tokens") + prompt,
                completion_tokens=F("completion_tokens") + completion,
                estimated_tokens=F("estimated_tokens") + guessed,
            )


def reply_memory_tokens_set(*, message_id: int, tokens: int) -> None:
    """A reply's memory block tokens (a retried reply: the latest attempt's)."""
    ReplyMemoryTokens.objects.update_or_create(message_id=message_id, defaults={"tokens": max(0, int(tokens))})
