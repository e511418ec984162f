"""A run's record: started for a batch, then finished as applied, split, too large, failed or dropped;
and the admin's retry of a dropped batch."""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass, field

from django.conf import settings
from django.db import transaction

from chat.llm import LLMError, get_chat_model
from chat.models import Message
from memory import forgetting, lexicon
from memory.extraction import batching, clock, judge
from memory.extraction.claim import claim_release
from memory.extraction.outcomes import Outcome, Result
from memory.extraction.reads import unavailable_runs
from memory.extraction.retries import MAX_ATTEMPTS, is_last_attempt, retry_delay, unavailable_retry_in
from memory.extraction.shown import memories_for_batch
from memory.models import ExtractionRun, MemoryClaim
from memory.selectors import messages_pending

logger = logging.getLogger(__name__)

Status = ExtractionRun.Status


@dataclass
class Batch:
    """A run in progress: the claim it holds, its record, and the messages it judges."""

    user_id: int
    token: uuid.UUID
    run: ExtractionRun
    pending: list[judge.PendingMessage]
    numbers: dict[int, int]
    tokens: int = 0  # the judge request's estimated size
    # What the judge is sent; the run records it with secrets masked (judge_input_masked).
    judge_messages: list[dict[str, str]] = field(default_factory=list)
    # The memories the judge was shown (memory.extraction.shown): an update or retract may name only these.
    shown: frozenset[int] = frozenset()

    @property
    def ids(self) -> list[int]:
        return [m.id for m in self.pending]


def judge_model_label() -> str:
    """The model that answers judge calls, as recorded on the run (the demo model names itself)."""
    model = get_chat_model()
    return model.label if model.is_demo and model.label else settings.MEMORY_MODEL


def start_run(
    *,
    user_id: int,
    token: uuid.UUID,
    trigger: str,
    up_to: int | None,
    pending: list[judge.PendingMessage],
    attempt: int,
) -> Batch:
    today = clock.now().date()
    # The batch first, as if there were no memories; then the memories in the room it leaves (at least
    # a share of the window: memory.extraction.shown), and the batch again, shorter if they need it.
    alone = batching.fit(memories=[], pending=pending, today=today)
    room = batching.request_budget(len(alone.pending)) - alone.tokens
    memories = memories_for_batch(user_id=user_id, pending=alone.pending, room=room)
    fitted = batching.fit(memories=memories, pending=alone.pending, today=today)
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
        judge_input=judge_input_masked(judge_input.messages),
    )
    MemoryClaim.objects.filter(user_id=user_id, token=token).update(run=run)
    return Batch(
        user_id=user_id,
        token=token,
        run=run,
        pending=pending,
        numbers=judge_input.numbers,
        tokens=fitted.tokens,
        judge_messages=judge_input.messages,
        shown=judge_input.memory_ids,
    )


def judge_input_masked(messages: list[dict[str, str]]) -> list[dict[str, str]]:
    """The judge's messages as the run keeps them: a password or a card number the user typed is masked
    (memory.lexicon); the prompt is kept as it is."""
    return [
        m if m.get("role") == "system" else {**m, "content": lexicon.mask_credentials(m["content"])} for m in messages
    ]


def finish_run(run: ExtractionRun, status: str, *, error: str = "") -> None:
    """Close the run's record. It re-checks at commit (SPEC §8): a memory it was shown or a message it
    covered that was deleted while it ran leaves no copy in it (memory.forgetting.run_scrub; the row is
    locked first by the write, so a deletion either finished before the re-check or waits and redacts
    the record after), and the run of an account deleted meanwhile writes nothing."""
    run.status = status
    run.error = error
    run.finished_at = clock.now()
    fields = ["status", "error", "finished_at", "judge_ms", "raw_output", "applied_ops", "dropped_ops", "judge_input"]
    with transaction.atomic(savepoint=False):
        # The UPDATE locks the row first; then the re-check, and a second write only when it redacted.
        if not ExtractionRun.objects.filter(pk=run.pk).update(**{name: getattr(run, name) for name in fields}):
            return  # its account (or the run) was deleted meanwhile
        if forgetting.run_scrub(run):
            ExtractionRun.objects.filter(pk=run.pk).update(**{name: getattr(run, name) for name in fields})


def too_large(batch: Batch, exc: LLMError) -> Result:
    """The request (or the answer) was too large for the model: split the batch, or leave it pending.

    Neither counts as a failed attempt, so a batch is never dropped for its size.
    """
    run = batch.run
    if len(batch.pending) > 1:
        finish_run(run, Status.SPLIT, error=f"Too large for the model ({exc}) Retried as smaller batches.")
        return Result(Outcome.SPLIT, run_ids=[run.pk], attempt=run.attempt, error=str(exc))
    error = (
        f"Too large for the model even with one message ({exc}) The message stays pending. Check that "
        "MEMORY_CONTEXT_TOKENS (or CHAT_CONTEXT_TOKENS) matches the judge model's context window."
    )
    logger.warning("memory extraction run %s: %s", run.pk, error)
    finish_run(run, Status.TOO_LARGE, error=error)
    return Result(Outcome.FAILED, run_ids=[run.pk], attempt=run.attempt, error=error, retry_in=retry_delay(1))


def answer_cut(batch: Batch, max_tokens: int) -> Result:
    """The judge's answer about one message was cut off at its limit: a failed attempt (retried, then
    dropped), with the setting that raises the limit named."""
    limit = int(settings.MEMORY_JUDGE_MAX_TOKENS)
    reason = (
        f"MEMORY_JUDGE_MAX_TOKENS is {limit}; raise it if answers this long are expected."
        if max_tokens >= limit
        else f"The judge's window left no more room; MEMORY_JUDGE_MAX_TOKENS ({limit}) is not the limit here."
    )
    cut = f"The judge's answer was cut off at its limit of {max_tokens} tokens before it was complete."
    return fail(batch, f"{cut} {reason}")


def unavailable(batch: Batch, error: str) -> Result:
    """The server did not answer usably in time (timeout, connection, 5xx): the messages stay pending and
    the batch is tried again later, for MEMORY_RETRY_HOURS, without counting an attempt (memory.extraction.retries)."""
    run = batch.run
    logger.warning("memory extraction run %s: the model server is unavailable: %s", run.pk, error)
    finish_run(run, Status.UNAVAILABLE, error=f"{error} The messages stay pending; tried again later.")
    runs, since = unavailable_runs(user_id=batch.user_id, first_message_id=batch.pending[0].id)
    wait = unavailable_retry_in(runs=runs, since=since, now=clock.now())
    return Result(Outcome.UNAVAILABLE, run_ids=[run.pk], attempt=run.attempt, error=error, retry_in=wait)


def fail(batch: Batch, error: str) -> Result:
    run = batch.run
    logger.warning("memory extraction run %s failed (attempt %s): %s", run.pk, run.attempt, error)
    if not is_last_attempt(run.attempt):
        finish_run(run, Status.FAILED, error=error)
        wait = retry_delay(run.attempt)
        return Result(Outcome.FAILED, run_ids=[run.pk], attempt=run.attempt, error=error, retry_in=wait)
    with transaction.atomic():
        if not claim_release(user_id=batch.user_id, token=batch.token):
            finish_run(run, Status.ABANDONED, error=error + " The claim was lost, so the batch was left pending.")
            return Result(Outcome.ABANDONED, run_ids=[run.pk], attempt=run.attempt, error=error)
        messages_pending(user_id=batch.user_id).filter(id__in=batch.ids).update(
            memory_status=Message.MemoryStatus.SKIPPED
        )
        finish_run(
            run, Status.DROPPED, error=f"{error} Attempt {run.attempt} of {MAX_ATTEMPTS}: the batch was skipped."
        )
    return Result(Outcome.DROPPED, run_ids=[run.pk], attempt=run.attempt, error=error)


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
        when = f"{clock.now():%Y-%m-%d %H:%M} UTC"
        run.error = f"{run.error} {count} message(s) retried from the admin on {when}.".strip()
        run.save(update_fields=["error"])
    return run.owner_id, max(run.message_ids), count
