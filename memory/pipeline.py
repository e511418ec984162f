"""The extraction pipeline (SPEC §4): claim, load, judge, validate, commit — one user at a time.

    outcome = extract(user_id=..., trigger=ExtractionRun.Trigger.FLUSH, up_to_message_id=...)

Guarantees:
- At most one run per user: a claim row taken with a conditional UPDATE (or a primary-key guarded
  INSERT); a crashed run's claim expires after MEMORY_CLAIM_TTL_SECONDS.
- A run covers an exact list of message ids (recorded on the run) and, in the commit transaction,
  marks exactly those ids processed with `UPDATE … WHERE memory_status='pending'`. If any of them is
  no longer pending (the user edited or deleted memories meanwhile) or the claim was lost, nothing
  is applied. So no message is processed twice, none is skipped silently, and a message that
  arrives during a run simply waits for the next one.
- A failure (provider error, timeout, malformed answer) applies nothing and leaves the messages
  pending; the third failed attempt on the same batch marks it skipped and the run dropped.

Retries back off; the policy (attempt limit, backoff window, who may start within it) is
memory.retries, shared with the Celery task and the flush tool.
"""

from __future__ import annotations

import logging
import time
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from accounts.models import User
from chat.leases import owner as process_owner
from chat.llm import LLMError, get_chat_model
from chat.models import Message
from memory import batching, judge
from memory.changes import MemoryChange
from memory.judge_call import call_judge
from memory.judge_slots import judge_slot
from memory.models import ExtractionRun, Memory, MemoryClaim, MemorySource
from memory.outcomes import Outcome, Result
from memory.retries import MAX_ATTEMPTS, is_last_attempt, may_start, retry_delay, slot_wait, window_left
from memory.selectors import memories_active, messages_pending
from memory.signals import memories_changed

logger = logging.getLogger(__name__)

BATCH_SIZE = 40

Status = ExtractionRun.Status
Trigger = ExtractionRun.Trigger


def _now() -> datetime:
    """The current time; a seam for tests."""
    return timezone.now()


def claim_ttl() -> timedelta:
    # Longer than the judge's timeout, so a live run never loses its claim to a slow provider.
    return timedelta(seconds=settings.MEMORY_CLAIM_TTL_SECONDS)


# --- the claim -----------------------------------------------------------------------------------


def claim_take(*, user_id: int) -> uuid.UUID | None:
    """Take the user's extraction claim; None when another live run holds it."""
    now = _now()
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


# --- loading -------------------------------------------------------------------------------------


def pending_batch(*, user_id: int, up_to_message_id: int | None) -> tuple[list[judge.PendingMessage], bool]:
    """The oldest pending user messages up to the trigger (at most BATCH_SIZE), and whether more wait."""
    query = messages_pending(user_id=user_id, up_to_message_id=up_to_message_id)
    rows = list(query.values_list("id", "conversation_id", "content")[: BATCH_SIZE + 1])
    return [judge.PendingMessage(*row) for row in rows[:BATCH_SIZE]], len(rows) > BATCH_SIZE


def active_memories(*, user_id: int) -> list[judge.ActiveMemory]:
    return [judge.ActiveMemory(*row) for row in memories_active(user_id=user_id).values_list("id", "content")]


# --- the pipeline --------------------------------------------------------------------------------


def extract(
    *,
    user_id: int,
    trigger: str,
    up_to_message_id: int | None,
    min_pending: int = 1,
    max_batches: int = 3,
) -> Result:
    """Run batches for one user until the messages up to `up_to_message_id` are covered.

    `min_pending` is the background threshold, checked on the first batch only.
    """
    if not User.objects.filter(pk=user_id, memory_enabled=True).exists():
        return Result(Outcome.MEMORY_OFF)
    total = Result(Outcome.NOTHING_PENDING)
    for _ in range(max_batches):
        result = _run_batch(user_id=user_id, trigger=trigger, up_to=up_to_message_id, min_pending=min_pending)
        total = total.absorb(result)
        if result.status != Outcome.APPLIED or not result.more:
            break
        min_pending = 1
    return total


@dataclass
class _Batch:
    user_id: int
    token: uuid.UUID
    run: ExtractionRun
    pending: list[judge.PendingMessage]
    numbers: dict[int, int]
    tokens: int = 0  # the judge request's estimated size

    @property
    def ids(self) -> list[int]:
        return [m.id for m in self.pending]


class _Abandon(Exception):
    """Raised inside the commit transaction to apply nothing."""


def _run_batch(*, user_id: int, trigger: str, up_to: int | None, min_pending: int) -> Result:
    token = claim_take(user_id=user_id)
    if token is None:
        return Result(Outcome.BUSY)
    released = False
    try:
        pending, more = pending_batch(user_id=user_id, up_to_message_id=up_to)
        if not pending:
            return Result(Outcome.NOTHING_PENDING)
        if len(pending) < min_pending:
            return Result(Outcome.BELOW_THRESHOLD)
        failures, wait = _backoff(user_id=user_id, first_message_id=pending[0].id)
        if not may_start(trigger=trigger, failures=failures, wait=wait):
            return Result(Outcome.BACKING_OFF, attempt=failures, retry_in=wait)
        with judge_slot(wait=slot_wait(trigger)) as free:
            if not free:  # other judge calls hold every slot: leave the provider to chat, try later
                return Result(Outcome.BUSY)
            result, batch = _judge_in_pieces(
                user_id=user_id, token=token, trigger=trigger, up_to=up_to, pending=pending, attempt=failures + 1
            )
        released = result.status in (Outcome.APPLIED, Outcome.DROPPED)
        result.more = more or len(batch.pending) < len(pending)
        return result
    finally:
        if not released:
            claim_release(user_id=user_id, token=token)


def _judge_in_pieces(
    *,
    user_id: int,
    token: uuid.UUID,
    trigger: str,
    up_to: int | None,
    pending: list[judge.PendingMessage],
    attempt: int,
) -> tuple[Result, _Batch]:
    """Judge and commit the oldest messages that fit; a batch the model refuses as too large is split
    and the first half tried at once, never dropped (see memory.batching)."""
    limit = len(pending)
    while True:
        batch = _start_run(
            user_id=user_id, token=token, trigger=trigger, up_to=up_to, pending=pending[:limit], attempt=attempt
        )
        try:
            result = _judge_and_commit(batch)
        except Exception as exc:  # a bug or a database error: count it as a failed attempt
            logger.exception("memory extraction run %s crashed", batch.run.pk)
            result = _fail(batch, f"Unexpected error: {exc.__class__.__name__}: {exc}")
        if result.status != Outcome.SPLIT:
            return result, batch
        limit = max(1, len(batch.pending) // 2)


def _backoff(*, user_id: int, first_message_id: int) -> tuple[int, float]:
    """Failed attempts on the batch starting at this message, and seconds left in its backoff window."""
    failed = ExtractionRun.objects.filter(owner_id=user_id, first_message_id=first_message_id, status=Status.FAILED)
    failures = failed.count()
    last = failed.exclude(error=STALE_RUN_ERROR).order_by("-finished_at", "-id").first()
    if not failures or last is None or last.finished_at is None:
        return failures, 0.0
    return failures, window_left(attempt=last.attempt, finished_at=last.finished_at, now=_now())


def judge_model_label() -> str:
    """The model that answers judge calls, as recorded on the run (the demo model names itself)."""
    model = get_chat_model()
    return model.label if model.is_demo and model.label else settings.MEMORY_MODEL


def _start_run(
    *,
    user_id: int,
    token: uuid.UUID,
    trigger: str,
    up_to: int | None,
    pending: list[judge.PendingMessage],
    attempt: int,
) -> _Batch:
    fitted = batching.fit(memories=active_memories(user_id=user_id), pending=pending)
    pending, judge_input = fitted.pending, fitted.judge_input
    run = ExtractionRun.objects.create(
        owner_id=user_id,
        trigger=trigger,
        error=fitted.note,
        message_ids=[m.id for m in pending],
        first_message_id=pending[0].id,
        trigger_message_id=up_to,
        attempt=attempt,
        model=judge_model_label(),
        judge_input=judge_input.messages,
    )
    MemoryClaim.objects.filter(user_id=user_id, token=token).update(run=run)
    return _Batch(
        user_id=user_id, token=token, run=run, pending=pending, numbers=judge_input.numbers, tokens=fitted.tokens
    )


def _judge_and_commit(batch: _Batch) -> Result:
    run = batch.run
    if batch.tokens > batching.request_budget():
        return _too_large(batch, LLMError(batching.budget_problem(batch.tokens), kind="length"))
    started = time.monotonic()
    try:
        raw = call_judge(run.judge_input)
    except LLMError as exc:
        run.judge_ms = int((time.monotonic() - started) * 1000)
        if exc.too_long:
            return _too_large(batch, exc)
        return _fail(batch, f"Judge call failed ({exc.kind}): {exc}")
    run.judge_ms = int((time.monotonic() - started) * 1000)
    run.raw_output = judge.storable(raw if isinstance(raw, str) else repr(raw))
    try:
        operations = judge.parse_output(raw)
    except judge.MalformedOutput as exc:
        return _fail(batch, f"Malformed judge output: {exc}.")
    try:
        return _commit(batch, operations)
    except _Abandon as exc:
        _finish_run(run, Status.ABANDONED, error=str(exc))
        return Result(Outcome.ABANDONED, run_ids=[run.pk], attempt=run.attempt, error=str(exc))


def _finish_run(run: ExtractionRun, status: str, *, error: str = "") -> None:
    run.status = status
    run.error = error
    run.finished_at = _now()
    run.save(update_fields=["status", "error", "finished_at", "judge_ms", "raw_output", "applied_ops", "dropped_ops"])


def _too_large(batch: _Batch, exc: LLMError) -> Result:
    """The request (or the answer) was too large for the model: split the batch, or leave it pending.

    Neither counts as a failed attempt, so a batch is never dropped for its size.
    """
    run = batch.run
    if len(batch.pending) > 1:
        _finish_run(run, Status.SPLIT, error=f"Too large for the model ({exc}) Retried as smaller batches.")
        return Result(Outcome.SPLIT, run_ids=[run.pk], attempt=run.attempt, error=str(exc))
    error = (
        f"Too large for the model even with one message ({exc}) The message stays pending. Check that "
        "MEMORY_CONTEXT_TOKENS (or CHAT_CONTEXT_TOKENS) matches the judge model's context window."
    )
    logger.warning("memory extraction run %s: %s", run.pk, error)
    _finish_run(run, Status.TOO_LARGE, error=error)
    return Result(Outcome.FAILED, run_ids=[run.pk], attempt=run.attempt, error=error, retry_in=retry_delay(1))


def _fail(batch: _Batch, error: str) -> Result:
    run = batch.run
    logger.warning("memory extraction run %s failed (attempt %s): %s", run.pk, run.attempt, error)
    if not is_last_attempt(run.attempt):
        _finish_run(run, Status.FAILED, error=error)
        wait = retry_delay(run.attempt)
        return Result(Outcome.FAILED, run_ids=[run.pk], attempt=run.attempt, error=error, retry_in=wait)
    with transaction.atomic():
        if not claim_release(user_id=batch.user_id, token=batch.token):
            _finish_run(run, Status.ABANDONED, error=error + " The claim was lost, so the batch was left pending.")
            return Result(Outcome.ABANDONED, run_ids=[run.pk], attempt=run.attempt, error=error)
        messages_pending(user_id=batch.user_id).filter(id__in=batch.ids).update(
            memory_status=Message.MemoryStatus.SKIPPED
        )
        _finish_run(
            run, Status.DROPPED, error=f"{error} Attempt {run.attempt} of {MAX_ATTEMPTS}: the batch was skipped."
        )
    return Result(Outcome.DROPPED, run_ids=[run.pk], attempt=run.attempt, error=error)


def _known_memories(*, operations: list[judge.Operation]) -> dict[int, judge.KnownMemory]:
    ids = {o.id for o in operations if o.id is not None}
    if not ids:
        return {}
    rows = Memory.objects.filter(pk__in=ids).values_list("id", "owner_id", "invalid_at", "content")
    return {
        pk: judge.KnownMemory(owner_id=owner, active=invalid is None, content=content)
        for pk, owner, invalid, content in rows
    }


def _commit(batch: _Batch, operations: list[judge.Operation]) -> Result:
    run, user_id = batch.run, batch.user_id
    with transaction.atomic():
        # Releasing the claim here both verifies and ends it; on PostgreSQL it also locks the row
        # until commit, so no other run can start on a half-applied state.
        if not claim_release(user_id=user_id, token=batch.token):
            raise _Abandon("The extraction claim expired and was taken by another run; nothing was applied.")
        if not User.objects.filter(pk=user_id, memory_enabled=True).exists():
            raise _Abandon("Memory was switched off during the run; nothing was applied.")
        marked = (
            messages_pending(user_id=user_id)
            .filter(id__in=batch.ids)
            .update(memory_status=Message.MemoryStatus.PROCESSED)
        )
        if marked != len(batch.ids):
            raise _Abandon(
                "Some of the batch's messages were no longer pending (the user changed their memories or "
                "deleted a conversation meanwhile); nothing was applied."
            )
        active = {m.id: m.content for m in active_memories(user_id=user_id)}
        plan = judge.validate(
            operations,
            owner_id=user_id,
            known=_known_memories(operations=operations),
            active=active,
            numbers=batch.numbers,
            max_operations=settings.MEMORY_MAX_OPS_PER_ANSWER,
            max_active=settings.MEMORY_MAX_ACTIVE,
        )
        changes = _apply(plan, user_id=user_id, run=run, active=active)
        run.applied_ops, run.dropped_ops = plan.applied, plan.dropped
        _finish_run(run, Status.APPLIED, error=run.error)  # keeps a note on what the judge was not shown
        if changes:
            payload = {"user_id": user_id, "run_id": run.pk, "changes": changes}
            transaction.on_commit(lambda: memories_changed.send(sender=Memory, **payload))
    return Result(Outcome.APPLIED, run_ids=[run.pk], changes=changes, batches=1, attempt=run.attempt)


def _apply(plan: judge.Plan, *, user_id: int, run: ExtractionRun, active: dict[int, str]) -> list[MemoryChange]:
    """Write the plan: a constant number of statements plus one per update. Returns what changed."""
    now = _now()
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


def extraction_params(*, trigger: str) -> dict[str, Any]:
    """Threshold and batch limit for each trigger."""
    if trigger == Trigger.BACKGROUND:
        return {"min_pending": settings.MEMORY_EXTRACT_MIN_TURNS, "max_batches": 3}
    if trigger == Trigger.FLUSH:
        return {"min_pending": 1, "max_batches": 3}
    return {"min_pending": 1, "max_batches": 25}


def dropped_batch_retry(*, run_id: int) -> tuple[int, int, int] | None:
    """Put the messages a dropped run skipped back to pending, noting it on the run.

    Returns (user id, last message id, messages put back) for scheduling a run, or None when the run
    was not dropped. Only this run's messages that are still skipped are touched.
    """
    with transaction.atomic():
        run = ExtractionRun.objects.select_for_update().filter(pk=run_id, status=Status.DROPPED).first()
        if run is None or not run.message_ids:
            return None
        count = Message.objects.filter(
            id__in=run.message_ids, user_id=run.owner_id, memory_status=Message.MemoryStatus.SKIPPED
        ).update(memory_status=Message.MemoryStatus.PENDING)
        run.error = f"{run.error} {count} message(s) retried from the admin on {_now():%Y-%m-%d %H:%M} UTC.".strip()
        run.save(update_fields=["error"])
    return run.owner_id, max(run.message_ids), count
