"""The extraction sweep: claims of dead workers released at once, overdue work found (memory/extraction/recovery.py)."""

from __future__ import annotations

import socket
import subprocess
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from chat.models import Message
from chat.process import owner
from memory.extraction import recovery
from memory.extraction.claim import STALE_RUN_ERROR, claim_take
from memory.models import ExtractionRun, MemoryClaim
from tests.helpers import make_user, say

pytestmark = pytest.mark.django_db


def dead_owner() -> str:
    process = subprocess.Popen(["true"])
    process.wait()
    return f"{socket.gethostname()}:{process.pid}:0000"


def held_claim(user: Any, holder: str) -> ExtractionRun:
    token = claim_take(user_id=user.pk)
    assert token is not None
    run = ExtractionRun.objects.create(owner=user, trigger="background", status=ExtractionRun.Status.RUNNING)
    MemoryClaim.objects.filter(user=user).update(run=run, owner=holder)
    return run


def test_a_claim_records_its_process(user: Any) -> None:
    claim_take(user_id=user.pk)
    assert MemoryClaim.objects.get(user=user).owner == owner()


def test_a_dead_workers_claim_is_released_at_once_and_its_run_counts_as_failed(user: Any) -> None:
    run = held_claim(user, dead_owner())

    assert recovery.claims_recover() == 1

    claim = MemoryClaim.objects.get(user=user)
    assert (claim.token, claim.owner) == (None, "")
    run.refresh_from_db()
    assert (run.status, run.error) == ("failed", STALE_RUN_ERROR)
    assert claim_take(user_id=user.pk) is not None


def test_a_live_or_remote_claim_is_left_to_its_holder(user: Any, other_user: Any) -> None:
    held_claim(user, owner())
    held_claim(other_user, "elsewhere:1:0000")
    assert recovery.claims_recover() == 0
    assert MemoryClaim.objects.filter(token__isnull=False).count() == 2


def test_overdue_work_is_users_with_enough_old_pending_messages_and_no_live_claim(
    user: Any, conversation: Any, settings: Any
) -> None:
    settings.MEMORY_SWEEP_GRACE_SECONDS = 30
    old = timezone.now() - timedelta(minutes=5)
    messages = [say(conversation, f"Fact {i}") for i in range(3)]
    Message.objects.filter(pk__in=[m.pk for m in messages]).update(created_at=old)
    fresh_user = make_user()
    for i in range(3):
        say(fresh_user.conversations.create(owner=fresh_user), f"Just now {i}")  # the normal path's turn
    busy_user = make_user()
    for i in range(3):
        message = say(busy_user.conversations.create(owner=busy_user), f"Busy {i}")
        Message.objects.filter(pk=message.pk).update(created_at=old)
    held_claim(busy_user, owner())

    assert recovery.pending_work() == [(user.pk, messages[-1].pk)]


def test_too_few_pending_messages_are_not_overdue(user: Any, conversation: Any, settings: Any) -> None:
    settings.MEMORY_SWEEP_GRACE_SECONDS = 0
    say(conversation, "Only one")
    assert recovery.pending_work() == []
