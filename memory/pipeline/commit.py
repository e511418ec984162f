"""The commit: one transaction that verifies the claim and the batch, validates the judge's operations
against the memories as they are now, applies them and marks exactly the batch's messages processed."""

from __future__ import annotations

from django.conf import settings
from django.db import transaction

from accounts.models import User
from chat.models import Message
from memory import judge
from memory.changes import MemoryChange
from memory.models import ExtractionRun, Memory, MemorySource
from memory.outcomes import Outcome, Result
from memory.pipeline import clock
from memory.pipeline.claim import claim_release
from memory.pipeline.reads import active_memories, known_memories
from memory.pipeline.runs import Batch, finish_run
from memory.selectors import memories_active, messages_pending
from memory.signals import memories_changed

Status = ExtractionRun.Status


class Abandon(Exception):
    """Raised inside the commit transaction to apply nothing."""


def commit(batch: Batch, operations: list[judge.Operation]) -> Result:
    run, user_id = batch.run, batch.user_id
    with transaction.atomic():
        # Releasing the claim here both verifies and ends it; on PostgreSQL it also locks the row
        # until commit, so no other run can start on a half-applied state.
        if not claim_release(user_id=user_id, token=batch.token):
            raise Abandon("The extraction claim expired and was taken by another run; nothing was applied.")
        if not User.objects.filter(pk=user_id, memory_enabled=True).exists():
            raise Abandon("Memory was switched off during the run; nothing was applied.")
        marked = (
            messages_pending(user_id=user_id)
            .filter(id__in=batch.ids)
            .update(memory_status=Message.MemoryStatus.PROCESSED)
        )
        if marked != len(batch.ids):
            raise Abandon(
                "Some of the batch's messages were no longer pending (the user changed their memories or "
                "deleted a conversation meanwhile); nothing was applied."
            )
        active = {m.id: m.content for m in active_memories(user_id=user_id)}
        plan = judge.validate(
            operations,
            owner_id=user_id,
            known=known_memories(operations=operations),
            active=active,
            numbers=batch.numbers,
            max_operations=settings.MEMORY_MAX_OPS_PER_ANSWER,
            max_active=settings.MEMORY_MAX_ACTIVE,
        )
        changes = _apply(plan, user_id=user_id, run=run, active=active)
        run.applied_ops, run.dropped_ops = plan.applied, plan.dropped
        finish_run(run, Status.APPLIED, error=run.error)  # keeps a note on what the judge was not shown
        if changes:
            payload = {"user_id": user_id, "run_id": run.pk, "changes": changes}
            transaction.on_commit(lambda: memories_changed.send(sender=Memory, **payload))
    return Result(Outcome.APPLIED, run_ids=[run.pk], changes=changes, batches=1, attempt=run.attempt)


def _apply(plan: judge.Plan, *, user_id: int, run: ExtractionRun, active: dict[int, str]) -> list[MemoryChange]:
    """Write the plan: a constant number of statements plus one per update. Returns what changed."""
    now = clock.now()
    changes: list[MemoryChange] = []
    if plan.clear:
        memories_active(user_id=user_id).update(invalid_at=now, invalid_reason=Memory.InvalidReason.CLEARED)
        changes.append(MemoryChange("clear"))
    if plan.retracts:
        memories_active(user_id=user_id).filter(pk__in=plan.retracts).update(
            invalid_at=now, invalid_reason=Memory.InvalidReason.RETRACTED
        )
        changes += [MemoryChange("retract", memory_id=pk, content=active[pk]) for pk in plan.retracts]
    # (content, source message ids, id of the memory it replaces or None)
    new_rows: list[tuple[str, list[int], int | None]] = [(content, sources, None) for content, sources in plan.adds]
    new_rows += [(content, sources, old) for old, content, sources in plan.updates]
    if not new_rows:
        return changes
    created = Memory.objects.bulk_create(
        [
            Memory(owner_id=user_id, content=content, origin=Memory.Origin.EXTRACTED, run=run)
            for content, _, _ in new_rows
        ]
    )
    for memory, (content, _, old) in zip(created, new_rows, strict=True):
        if old is None:
            changes.append(MemoryChange("add", memory_id=memory.pk, content=content))
            continue
        memories_active(user_id=user_id).filter(pk=old).update(
            invalid_at=now, invalid_reason=Memory.InvalidReason.UPDATED, superseded_by=memory
        )
        changes.append(
            MemoryChange("update", memory_id=memory.pk, content=content, previous_id=old, previous_content=active[old])
        )
    links = [
        MemorySource(memory=m, message_id=mid)
        for m, (_, sources, _) in zip(created, new_rows, strict=True)
        for mid in sources
    ]
    MemorySource.objects.bulk_create(links)
    return changes
