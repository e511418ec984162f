"""The commit: one transaction that verifies the claim and the batch, validates the judge's operations
against the memories as they are now, applies them and marks exactly the batch's messages processed."""

from __future__ import annotations

from datetime import datetime

from django.conf import settings
from django.db import transaction

from accounts.models import User
from chat.models import Message
from memory import lexicon, lifecycle
from memory.changes import MemoryChange
from memory.extraction import clock, judge
from memory.extraction.claim import claim_release
from memory.extraction.judge.validation import REVIEW_ALL, REVIEW_SENSITIVE, Plan, Review, Scopes, Write, validate
from memory.extraction.outcomes import Outcome, Result
from memory.extraction.reads import active_memories, known_memories
from memory.extraction.run import Run
from memory.models import ExtractionRun, Memory, MemorySource
from memory.scopes import ScopeView, scope_filter, scope_of_batch
from memory.selectors import in_scope, memories_active, messages_pending, user_memory_on
from memory.signals import memories_changed

Status = ExtractionRun.Status
# Learning from imported chats (memory.extraction.learn) only proposes: an old chat's "forget that" or an
# update of what it says now is not the user speaking today.
IMPORT_REFUSED = "learning from imported chats only proposes new memories; {op} is not applied"


class Abandon(Exception):
    """Raised inside the commit transaction to apply nothing."""


def commit(run: Run, operations: list[judge.Operation]) -> Result:
    record, user_id = run.record, run.user_id
    learning = record.trigger == ExtractionRun.Trigger.IMPORT
    operations, refused = _import_only_adds(operations) if learning else (operations, [])
    with transaction.atomic():
        _verify(run, learning=learning)
        # Locks the user row like the user's own writes (memory.services), so a Keep of a keyed suggestion
        # and this commit never both make a value of one key active; ended memories leave the active set
        # first, so a new value of their key can take their place.
        mode = User.objects.select_for_update().filter(pk=user_id).values_list("memory_review", flat=True).first()
        lifecycle.memories_expire(user_id=user_id, now=clock.now())
        view = scope_of_batch(run.pending)
        rows = active_memories(user_id=user_id, view=view)  # of the batch's scope (memory.scopes)
        active = {m.id: m.content for m in rows}
        elsewhere = memories_active(user_id=user_id).count() - len(active)  # the limit counts every scope
        plan = validate(
            operations,
            owner_id=user_id,
            known=known_memories(operations=operations),
            active=active,
            numbers=run.numbers,
            max_operations=settings.MEMORY_MAX_OPS_PER_ANSWER,
            max_active=max(0, settings.MEMORY_MAX_ACTIVE - elsewhere),
            keys={(m.project_id, m.key): m.id for m in rows if m.key},
            review=import_review(run) if learning else batch_review(run, mode=mode or REVIEW_SENSITIVE),
            shown=run.shown,
            scopes=Scopes(project_id=view.project_id, isolated=view.isolated, of={m.id: m.project_id for m in rows}),
        )
        changes = _apply(plan, user_id=user_id, run=record, active=active, view=view)
        record.applied_ops, record.dropped_ops = plan.applied, [*plan.dropped, *refused]
        run.finish(Status.APPLIED, error=record.error)  # keeps a note on what the judge was not shown
        if changes:
            payload = {"user_id": user_id, "run_id": record.pk, "changes": changes}
            transaction.on_commit(lambda: memories_changed.send(sender=Memory, **payload))
    return Result(Outcome.APPLIED, run_ids=[record.pk], changes=changes, batches=1, attempt=record.attempt)


def _import_only_adds(operations: list[judge.Operation]) -> tuple[list[judge.Operation], list[dict[str, object]]]:
    """Learning from imported chats takes only adds; the rest are refused, with the reason recorded."""
    refused = [{**o.as_dict(), "reason": IMPORT_REFUSED.format(op=o.op)} for o in operations if o.op != "add"]
    return [o for o in operations if o.op == "add"], refused


def _verify(run: Run, *, learning: bool) -> None:
    """In the commit's transaction: the claim still held (and now released), memory still on, and every
    message of the batch still pending (now marked processed). Raises Abandon otherwise."""
    # Releasing the claim here both verifies and ends it; on PostgreSQL it also locks the row
    # until commit, so no other run can start on a half-applied state.
    if not claim_release(user_id=run.user_id, token=run.token):
        raise Abandon("The extraction claim expired and was taken by another run; nothing was applied.")
    if not user_memory_on(user_id=run.user_id):
        raise Abandon("Memory was switched off during the run; nothing was applied.")
    if learning:  # imported messages are never pending: learning from them marks nothing (memory.extraction.learn)
        return
    marked = (
        messages_pending(user_id=run.user_id)
        .filter(id__in=run.ids)
        .update(memory_status=Message.MemoryStatus.PROCESSED)
    )
    if marked != len(run.ids):
        raise Abandon(
            "Some of the batch's messages were no longer pending (the user changed their memories or "
            "deleted a conversation meanwhile); nothing was applied."
        )


def batch_review(run: Run, *, mode: str) -> Review:
    """The user's review setting, the batch's messages that explicitly ask to remember, correct or forget
    (memory.lexicon: the user's own words decide, not whether the flush tool was called), and their days."""
    explicit = frozenset(m.id for m in run.pending if lexicon.is_explicit_request(m.content))
    days = {m.id: day for m in run.pending if (day := m.day) is not None}
    return Review(mode=mode, explicit=explicit, days=days)


def import_review(run: Run) -> Review:
    """Everything learned from imported chats waits for the user, whatever memory_review says and whatever
    the old messages asked (an old "remember that" is not a request made today)."""
    return Review(mode=REVIEW_ALL, days={m.id: day for m in run.pending if (day := m.day) is not None})


def _apply(
    plan: Plan, *, user_id: int, run: ExtractionRun, active: dict[int, str], view: ScopeView
) -> list[MemoryChange]:
    """Write the plan: a constant number of statements plus one per update. Returns what changed.

    Retract and clear apply at once whatever the review setting: forgetting only takes a fact out of
    the block, and it stays restorable in history. A write under review waits as a suggestion; a
    suggested update leaves the old version active and links it to the suggestion (`superseded_by`),
    so the suggestion shows old → new and Keep replaces the old one (memory.services.memory_confirm).
    """
    now = clock.now()
    changes = _forget(plan, user_id=user_id, active=active, view=view, now=now)
    if plan.writes:
        changes += _write(plan.writes, user_id=user_id, run=run, active=active, now=now)
    return changes


def _forget(plan: Plan, *, user_id: int, active: dict[int, str], view: ScopeView, now: datetime) -> list[MemoryChange]:
    """The plan's clear and retracts."""
    changes: list[MemoryChange] = []
    if plan.clear:  # everything the batch's chats use (memory.scopes), and what waits there
        memories_active(user_id=user_id).filter(scope_filter(view)).update(
            invalid_at=now, invalid_reason=Memory.InvalidReason.CLEARED
        )
        Memory.objects.filter(scope_filter(view), owner_id=user_id, suggested=True).delete()
        changes.append(MemoryChange("clear"))
    if plan.retracts:
        memories_active(user_id=user_id).filter(pk__in=plan.retracts).update(
            invalid_at=now, invalid_reason=Memory.InvalidReason.RETRACTED
        )
        changes += [MemoryChange("retract", memory_id=pk, content=active[pk]) for pk in plan.retracts]
    return changes


def _write(
    writes: list[Write], *, user_id: int, run: ExtractionRun, active: dict[int, str], now: datetime
) -> list[MemoryChange]:
    """The plan's adds and updates, with their sources."""
    pinned = _make_room(writes, user_id=user_id, now=now)
    created = Memory.objects.bulk_create([_row(w, user_id=user_id, run=run, pinned=pinned) for w in writes])
    pairs = list(zip(created, writes, strict=True))
    changes = [_link(memory, write, user_id=user_id, active=active) for memory, write in pairs]
    MemorySource.objects.bulk_create(
        [MemorySource(memory=m, message_id=mid) for m, w in pairs for mid in w.message_ids]
    )
    return changes


def _make_room(writes: list[Write], *, user_id: int, now: datetime) -> set[int]:
    """Before the writes: the waiting suggestions they take the place of go, and so do the versions they
    replace at once; returns which of the replaced versions were pinned."""
    mine = Memory.objects.filter(owner_id=user_id)
    # A new write takes the place of a waiting suggestion of the same sentence (one row per sentence).
    for write in writes:
        mine.filter(in_scope(write.project_id), suggested=True, invalid_at__isnull=True, content=write.content).delete()
    replaced = [w.replaces for w in writes if w.replaces is not None]
    pinned = set(mine.filter(pk__in=replaced, pinned=True).values_list("pk", flat=True))
    # Versions replaced at once leave the active set before their successors arrive (one per key).
    now_replaced = [w.replaces for w in writes if w.replaces is not None and not w.suggested]
    memories_active(user_id=user_id).filter(pk__in=now_replaced).update(
        invalid_at=now, invalid_reason=Memory.InvalidReason.UPDATED
    )
    return pinned


def _row(write: Write, *, user_id: int, run: ExtractionRun, pinned: set[int]) -> Memory:
    return Memory(
        owner_id=user_id,
        content=write.content,
        origin=Memory.Origin.IMPORTED if run.trigger == ExtractionRun.Trigger.IMPORT else Memory.Origin.EXTRACTED,
        run=run,
        suggested=write.suggested,
        sensitive=write.sensitive,
        # A new version of a memory the user pinned stays pinned.
        pinned=write.pinned or write.replaces in pinned,
        key=write.key,
        expires_at=write.expires_at,
        project_id=write.project_id,
    )


def _link(memory: Memory, write: Write, *, user_id: int, active: dict[int, str]) -> MemoryChange:
    """Link a new version to the one it replaces; the change it makes."""
    old = write.replaces
    if old is None:
        return MemoryChange("add", memory_id=memory.pk, content=write.content, suggested=write.suggested)
    if write.suggested:
        # A newer suggestion for the same memory replaces the one still waiting.
        Memory.objects.filter(owner_id=user_id, suggested=True, supersedes=old).exclude(pk=memory.pk).delete()
    Memory.objects.filter(owner_id=user_id, pk=old).update(superseded_by=memory)
    return MemoryChange(
        "update",
        memory_id=memory.pk,
        content=write.content,
        previous_id=old,
        previous_content=active[old],
        suggested=write.suggested,
    )
