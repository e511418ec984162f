"""What a run reads before judging: the batch of pending messages, the active memories, the memories the
judge's answer names, and the batch's failed attempts so far."""

from __future__ import annotations

import itertools
from datetime import datetime, timedelta

from django.conf import settings

from memory.extraction import clock, judge
from memory.extraction.claim import STALE_RUN_ERROR
from memory.extraction.judge import validation
from memory.extraction.retries import unavailable_delay, window_left
from memory.models import ExtractionRun, Memory
from memory.scopes import ScopeView, scope_filter
from memory.selectors import memories_active, messages_pending

BATCH_SIZE = 40


_PENDING_FIELDS = (
    "id", "content", "created_at", "conversation__project_id", "conversation__project__memory_mode",
    "conversation__project__name",
)  # fmt: skip


def pending_batch(*, user_id: int, up_to_message_id: int | None) -> tuple[list[judge.PendingMessage], bool, int]:
    """The oldest pending user messages up to the trigger of one scope (SPEC §9: the conversation's project,
    or none; at most BATCH_SIZE), whether more wait, and how many are pending in all (up to BATCH_SIZE + 1,
    what the background threshold counts). A batch is of one scope so that the judge is shown that scope's
    memories and what it learns goes there (memory.scopes); the next batch takes the next scope's."""
    query = messages_pending(user_id=user_id, up_to_message_id=up_to_message_id)
    rows = list(query.values_list("conversation_id", *_PENDING_FIELDS)[: BATCH_SIZE + 1])
    messages = [
        judge.PendingMessage(pk, conversation, content, sent, project, mode or "", name or "")
        for conversation, pk, content, sent, project, mode, name in rows[:BATCH_SIZE]
    ]
    scope = messages[0].project_id if messages else None
    batch = list(itertools.takewhile(lambda m: m.project_id == scope, messages))
    return batch, len(rows) > len(batch), len(rows)


def active_memories(*, user_id: int, view: ScopeView | None = None) -> list[judge.ActiveMemory]:
    """The active memories of the batch's scope (memory.scopes: the user's outside projects), as validation
    knows them (a keyed value the project overrides included: the judge may update either)."""
    view = view or ScopeView()
    rows = memories_active(user_id=user_id).filter(scope_filter(view))
    fields = rows.values_list("id", "content", "key", "expires_at", "project_id")
    return [judge.ActiveMemory(*row, in_project=view.project_id is not None) for row in fields]


def quiet(*, user_id: int) -> bool:
    """Whether a background run may judge now: the user's newest pending message is at least
    MEMORY_EXTRACT_IDLE_SECONDS old (a burst is over), or their oldest has waited
    MEMORY_EXTRACT_MAX_WAIT_SECONDS (a user who never pauses is still served). Two indexed reads; none
    when the wait is off (0)."""
    if settings.MEMORY_EXTRACT_IDLE_SECONDS <= 0:
        return True
    now = clock.now()
    pending = messages_pending(user_id=user_id).values_list("created_at", flat=True)
    newest = pending.order_by("-id").first()
    if newest is None or (now - newest).total_seconds() >= settings.MEMORY_EXTRACT_IDLE_SECONDS:
        return True
    oldest = pending.first()
    return oldest is not None and (now - oldest).total_seconds() >= settings.MEMORY_EXTRACT_MAX_WAIT_SECONDS


def known_memories(*, operations: list[judge.Operation]) -> dict[int, validation.KnownMemory]:
    ids = {o.id for o in operations if o.id is not None}
    if not ids:
        return {}
    rows = Memory.objects.filter(pk__in=ids).values_list("id", "owner_id", "invalid_at", "content")
    return {
        pk: validation.KnownMemory(owner_id=owner, active=invalid is None, content=content)
        for pk, owner, invalid, content in rows
    }


def backoff(*, user_id: int, first_message_id: int) -> tuple[int, float]:
    """Failed attempts on the batch starting at this message, and seconds left in its backoff window (after
    its latest failed or unavailable run: an unavailable server is waited for, but not counted)."""
    Status = ExtractionRun.Status
    runs = ExtractionRun.objects.filter(owner_id=user_id, first_message_id=first_message_id)
    failures = runs.filter(status=Status.FAILED).count()
    last = (
        runs.filter(status__in=[Status.FAILED, Status.UNAVAILABLE])
        .exclude(error=STALE_RUN_ERROR)
        .order_by("-finished_at", "-id")
        .first()
    )
    if last is None or last.finished_at is None:
        return failures, 0.0
    if last.status == Status.UNAVAILABLE:
        rest = unavailable_delay(unavailable_runs(user_id=user_id, first_message_id=first_message_id)[0])
        until = last.finished_at + timedelta(seconds=rest)
        return failures, max(0.0, (until - clock.now()).total_seconds())
    return failures, window_left(attempt=last.attempt, finished_at=last.finished_at, now=clock.now())


def unavailable_runs(*, user_id: int, first_message_id: int) -> tuple[int, datetime | None]:
    """How many runs on the batch starting at this message found the server unavailable, and when the
    first of them ended."""
    runs = ExtractionRun.objects.filter(
        owner_id=user_id, first_message_id=first_message_id, status=ExtractionRun.Status.UNAVAILABLE
    )
    first = runs.order_by("finished_at", "id").values_list("finished_at", flat=True).first()
    return runs.count(), first
