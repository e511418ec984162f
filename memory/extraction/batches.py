"""The batch loop: claim, read, check the backoff, judge in pieces that fit, commit; batch after batch
until the messages up to the trigger are covered."""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace

from django.conf import settings

from chat import extensions, model_queue
from chat.llm import LLMError, get_chat_model, metering
from chat.models import Message, Project
from chat.rejections import TurnRejected
from memory.extraction import batching, judge
from memory.extraction.claim import claim_release, claim_take
from memory.extraction.commit import Abandon, commit
from memory.extraction.judge.call import call_judge
from memory.extraction.judge.content import recorded_output
from memory.extraction.outcomes import Outcome, Result
from memory.extraction.reads import backoff, pending_batch, quiet
from memory.extraction.retries import may_start, server_unavailable, slot_wait
from memory.extraction.run import Run
from memory.models import ExtractionRun
from memory.selectors import user_memory_on

logger = logging.getLogger(__name__)

Status = ExtractionRun.Status
Trigger = ExtractionRun.Trigger


def extract(*, user_id: int, trigger: str, up_to_message_id: int | None, min_pending: int | None = None) -> Result:
    """Run batches for one user until the messages up to `up_to_message_id` are covered.

    The trigger sets the background threshold (checked on the first batch only) and how many batches one
    call judges (`_limits`). A background run at the threshold judges nothing while the user is still
    writing (`reads.quiet`): the task sent by their latest turn, or the sweep, covers the burst in one
    call. `min_pending` given is a run for one message (a flush's follow-up, an admin's retry): that
    threshold, and no waiting.
    """
    limits = _limits(trigger=trigger, min_pending=min_pending)
    if not user_memory_on(user_id=user_id):
        return Result(Outcome.MEMORY_OFF)
    if limits.wait_quiet and not quiet(user_id=user_id):
        return Result(Outcome.WAITING)
    try:
        extensions.spend_check(user_id)  # over a token quota: wait, messages pending, for the sweep to resume
    except TurnRejected as exc:
        return Result(Outcome.WAITING, error=str(exc))
    total = Result(Outcome.NOTHING_PENDING)
    threshold = limits.min_pending
    for _ in range(limits.max_batches):
        result = _run_batch(user_id=user_id, trigger=trigger, up_to=up_to_message_id, min_pending=threshold)
        total = total.absorb(result)
        if result.status != Outcome.APPLIED or not result.more:
            break
        threshold = 1
    return total


@dataclass(frozen=True)
class _Limits:
    min_pending: int = 1
    max_batches: int = 3
    wait_quiet: bool = False


def _limits(*, trigger: str, min_pending: int | None) -> _Limits:
    """Threshold and batch limit: a flush or a background run judges a few batches, another run (manual,
    the admin's) the whole backlog; a background run waits for its threshold and for the user to pause."""
    limits = _Limits(max_batches=3 if trigger in (Trigger.BACKGROUND, Trigger.FLUSH) else 25)
    if min_pending is not None:
        return replace(limits, min_pending=min_pending)
    if trigger == Trigger.BACKGROUND:
        return replace(limits, min_pending=settings.MEMORY_EXTRACT_MIN_TURNS, wait_quiet=True)
    return limits


def _run_batch(*, user_id: int, trigger: str, up_to: int | None, min_pending: int) -> Result:
    token = claim_take(user_id=user_id)
    if token is None:
        return Result(Outcome.BUSY)
    released = False
    try:
        pending, more, total = _pending_learnable(user_id=user_id, up_to=up_to)
        if not pending:
            return Result(Outcome.NOTHING_PENDING)
        if total < min_pending:
            return Result(Outcome.BELOW_THRESHOLD)
        failures, wait = backoff(user_id=user_id, first_message_id=pending[0].id)
        if not may_start(trigger=trigger, failures=failures, wait=wait):
            return Result(Outcome.BACKING_OFF, attempt=failures, retry_in=wait)
        result, run = judge_in_pieces(
            user_id=user_id, token=token, trigger=trigger, up_to=up_to, pending=pending, attempt=failures + 1
        )
        released = result.status in (Outcome.APPLIED, Outcome.DROPPED)
        result.more = more or len(run.pending) < len(pending)
        return result
    finally:
        if not released:
            claim_release(user_id=user_id, token=token)


def _pending_learnable(*, user_id: int, up_to: int | None) -> tuple[list[judge.PendingMessage], bool, int]:
    """The next batch (memory.extraction.reads.pending_batch), after skipping the messages of projects whose
    memory was switched off since they were sent: such a project learns nothing."""
    while True:
        pending, more, total = pending_batch(user_id=user_id, up_to_message_id=up_to)
        if not pending or pending[0].project_mode != Project.MemoryMode.OFF:
            return pending, more, total
        skipped = Message.objects.filter(pk__in=[m.id for m in pending], memory_status=Message.MemoryStatus.PENDING)
        skipped.update(memory_status=Message.MemoryStatus.SKIPPED)


def judge_in_pieces(
    *,
    user_id: int,
    token: uuid.UUID,
    trigger: str,
    up_to: int | None,
    pending: list[judge.PendingMessage],
    attempt: int,
) -> tuple[Result, Run]:
    """Judge and commit the oldest messages that fit; a batch the model refuses as too large is split
    and the first half tried at once, never dropped (see memory.extraction.batching)."""
    limit = len(pending)
    while True:
        run = Run.start(
            user_id=user_id, token=token, trigger=trigger, up_to=up_to, pending=pending[:limit], attempt=attempt
        )
        try:
            result = _judge_and_commit(run)
        except Exception as exc:  # a bug or a database error: count it as a failed attempt
            # The class only at ERROR: a database error's message can quote a memory (PostgreSQL's
            # "Key (owner_id, content)=…"); the traceback is at DEBUG, the message on the run's record.
            logger.error("memory extraction run %s crashed (%s)", run.record.pk, exc.__class__.__name__)
            logger.debug("memory extraction run %s crashed", run.record.pk, exc_info=True)
            result = run.fail(f"Unexpected error: {exc.__class__.__name__}: {exc}")
        if result.status != Outcome.SPLIT:
            return result, run
        limit = max(1, len(run.pending) // 2)


def _judge_and_commit(run: Run) -> Result:
    """Ask the judge about the run's batch, parse its answer strictly and commit it; or end the run."""
    count = len(run.pending)
    if run.tokens > batching.request_budget(count):
        return run.too_large(LLMError(batching.budget_problem(run.tokens, count), kind="context_length"))
    max_tokens = batching.max_tokens_for(run.tokens)
    try:
        raw = _ask(run, max_tokens)
    except LLMError as exc:
        return _refused(run, exc, max_tokens)
    # The record never keeps a secret the judge repeated (the operation itself is dropped by validation).
    run.record.raw_output = recorded_output(raw if isinstance(raw, str) else repr(raw))
    try:
        operations = judge.parse_output(raw)
    except judge.MalformedOutput as exc:
        return run.fail(f"Malformed judge output: {exc}.")
    try:
        return commit(run, operations)
    except Abandon as exc:
        return run.abandon(str(exc))


def _ask(run: Run, max_tokens: int) -> str:
    """The judge's raw answer, asked in the provider's queue; its time (not the queue's) and its cost are
    recorded however it ends: an answer refused afterwards (cut off, malformed) was still paid for."""
    with _queued(run.record.trigger, max_tokens), metering.counting() as calls:
        started = time.monotonic()
        try:
            return call_judge(run.judge_messages or run.record.judge_input, max_tokens=max_tokens)
        finally:
            run.record.judge_ms = int((time.monotonic() - started) * 1000)
            project_id = run.pending[0].project_id if run.pending else None
            metering.report(user_id=run.user_id, project_id=project_id, kind="judge", calls=calls)


def _refused(run: Run, exc: LLMError, max_tokens: int) -> Result:
    """How a failed judge call ends the run."""
    if exc.kind == "busy":  # the provider's queue was full for too long: nothing was sent, try later
        return run.queue_full(exc)
    if exc.kind == "length" and len(run.pending) == 1:  # the answer, not the request, was too long
        return run.answer_cut(max_tokens)
    if exc.too_long:
        return run.too_large(exc)
    if server_unavailable(exc):  # slow is not poison: waited for, never counted toward skipping
        return run.unavailable(f"Judge call failed ({exc.kind}): {exc}")
    return run.fail(f"Judge call failed ({exc.kind}): {exc}")


@contextmanager
def _queued(trigger: str, max_tokens: int) -> Iterator[None]:
    """The judge request's turn in the provider's queue (chat.model_queue), taken before every call: a
    flush is a person waiting and goes with chat; other runs wait behind chat. A call given up at its
    deadline keeps the turn until the server is done with it."""
    priority = model_queue.Priority.CHAT if trigger == Trigger.FLUSH else model_queue.Priority.BACKGROUND
    lease = float(settings.MEMORY_JUDGE_TIMEOUT) + model_queue.LEASE_MARGIN_SECONDS
    with model_queue.slot(
        get_chat_model(),
        lease=lease,
        wait=slot_wait(trigger),
        priority=priority,
        max_tokens=max_tokens,
        model_name=settings.MEMORY_MODEL,
    ):
        yield
