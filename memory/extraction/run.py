"""One extraction run: its record, and every way it ends.

    run = Run.start(user_id=…, token=…, trigger=…, up_to=…, pending=[…], attempt=…)
    … the judge is asked (memory.extraction.batches) …
    return run.too_large(exc) | run.answer_cut(max_tokens) | run.unavailable(error) | run.fail(error)
           | run.queue_full(exc) | run.abandon(error) | commit(run, operations)  # the commit: applied

A run is started for a batch the claim holds (`start` fits the batch and the memories shown to the
judge's window and creates its `ExtractionRun` row), and ends once, through one of its methods: each
closes the record (`finish`) and says what happens next (a `Result`). The admin's retry of a dropped
batch is here too, as it undoes one of these endings.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass, field

from django.conf import settings
from django.db import transaction

from chat.llm import LLMError, get_chat_model
from chat.models import Message
from memory import forgetting, lexicon
from memory.extraction import batching, clock
from memory.extraction.claim import claim_release
from memory.extraction.judge import PendingMessage
from memory.extraction.outcomes import Outcome, Result
from memory.extraction.reads import unavailable_runs
from memory.extraction.retries import MAX_ATTEMPTS, is_last_attempt, retry_delay, unavailable_retry_in
from memory.extraction.shown import memories_for_batch
from memory.models import ExtractionRun, MemoryClaim
from memory.selectors import messages_pending

logger = logging.getLogger(__name__)

Status = ExtractionRun.Status
# What `finish` writes: the ending, and what the run learned on its way.
_RECORDED = ("status", "error", "finished_at", "judge_ms", "raw_output", "applied_ops", "dropped_ops", "judge_input")


@dataclass
class Run:
    """A run in progress: the claim it holds, its record, and the messages it judges."""

    user_id: int
    token: uuid.UUID
    record: ExtractionRun
    pending: list[PendingMessage]
    numbers: dict[int, int]  # message number shown to the judge -> message id
    tokens: int = 0  # the judge request's estimated size
    # What the judge is sent; the record keeps it with secrets masked (judge_input_masked).
    judge_messages: list[dict[str, str]] = field(default_factory=list)
    # The memories the judge was shown (memory.extraction.shown): an update or retract may name only these.
    shown: frozenset[int] = frozenset()

    @property
    def ids(self) -> list[int]:
        return [m.id for m in self.pending]

    @classmethod
    def start(
        cls,
        *,
        user_id: int,
        token: uuid.UUID,
        trigger: str,
        up_to: int | None,
        pending: list[PendingMessage],
        attempt: int,
    ) -> Run:
        """Fit the batch to the judge's window and record the run (the claim now names it)."""
        today = clock.now().date()
        # The batch first, as if there were no memories; then the memories in the room it leaves (at least
        # a share of the window: memory.extraction.shown), and the batch again, shorter if they need it.
        alone = batching.fit(memories=[], pending=pending, today=today)
        room = batching.request_budget(len(alone.pending)) - alone.tokens
        memories = memories_for_batch(user_id=user_id, pending=alone.pending, room=room)
        fitted = batching.fit(memories=memories, pending=alone.pending, today=today)
        pending, judge_input = fitted.pending, fitted.judge_input
        record = ExtractionRun.objects.create(
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
        MemoryClaim.objects.filter(user_id=user_id, token=token).update(run=record)
        return cls(
            user_id=user_id,
            token=token,
            record=record,
            pending=pending,
            numbers=judge_input.numbers,
            tokens=fitted.tokens,
            judge_messages=judge_input.messages,
            shown=judge_input.memory_ids,
        )

    def finish(self, status: str, *, error: str = "") -> None:
        """Close the record. It re-checks at commit (SPEC §8): a memory it was shown or a message it
        covered that was deleted while it ran leaves no copy in it (memory.forgetting.run_scrub; the row is
        locked first by the write, so a deletion either finished before the re-check or waits and redacts
        the record after), and the run of an account deleted meanwhile writes nothing."""
        record = self.record
        record.status, record.error, record.finished_at = status, error, clock.now()
        with transaction.atomic(savepoint=False):
            # The UPDATE locks the row first; then the re-check, and a second write only when it redacted.
            if not ExtractionRun.objects.filter(pk=record.pk).update(**_recorded(record)):
                return  # its account (or the run) was deleted meanwhile
            if forgetting.run_scrub(record):
                ExtractionRun.objects.filter(pk=record.pk).update(**_recorded(record))

    def result(self, status: str, *, error: str = "", retry_in: float = 0.0) -> Result:
        return Result(status, run_ids=[self.record.pk], attempt=self.record.attempt, error=error, retry_in=retry_in)

    def abandon(self, error: str) -> Result:
        """Nothing applied and nothing counted: the claim was lost, or the messages changed meanwhile."""
        self.finish(Status.ABANDONED, error=error)
        return self.result(Outcome.ABANDONED, error=error)

    def queue_full(self, exc: LLMError) -> Result:
        """The provider's queue was full for too long: nothing was sent; the messages wait for a later run."""
        self.finish(Status.ABANDONED, error=f"{exc} The messages stay pending.")
        return self.result(Outcome.BUSY)

    def too_large(self, exc: LLMError) -> Result:
        """The request (or the answer) was too large for the model: split the batch, or leave it pending.

        Neither counts as a failed attempt, so a batch is never dropped for its size.
        """
        if len(self.pending) > 1:
            self.finish(Status.SPLIT, error=f"Too large for the model ({exc}) Retried as smaller batches.")
            return self.result(Outcome.SPLIT, error=str(exc))
        error = (
            f"Too large for the model even with one message ({exc}) The message stays pending. Check that "
            "MEMORY_CONTEXT_TOKENS (or CHAT_CONTEXT_TOKENS) matches the judge model's context window."
        )
        logger.warning("memory extraction run %s: %s", self.record.pk, error)
        self.finish(Status.TOO_LARGE, error=error)
        return self.result(Outcome.FAILED, error=error, retry_in=retry_delay(1))

    def answer_cut(self, max_tokens: int) -> Result:
        """The judge's answer about one message was cut off at its limit: a failed attempt (retried, then
        dropped), with the setting that raises the limit named."""
        limit = int(settings.MEMORY_JUDGE_MAX_TOKENS)
        reason = (
            f"MEMORY_JUDGE_MAX_TOKENS is {limit}; raise it if answers this long are expected."
            if max_tokens >= limit
            else f"The judge's window left no more room; MEMORY_JUDGE_MAX_TOKENS ({limit}) is not the limit here."
        )
        cut = f"The judge's answer was cut off at its limit of {max_tokens} tokens before it was complete."
        return self.fail(f"{cut} {reason}")

    def unavailable(self, error: str) -> Result:
        """The server did not answer usably in time (timeout, connection, 5xx): the messages stay pending and
        the batch is tried again later, for MEMORY_RETRY_HOURS, without counting an attempt
        (memory.extraction.retries)."""
        logger.warning("memory extraction run %s: the model server is unavailable: %s", self.record.pk, error)
        self.finish(Status.UNAVAILABLE, error=f"{error} The messages stay pending; tried again later.")
        runs, since = unavailable_runs(user_id=self.user_id, first_message_id=self.pending[0].id)
        wait = unavailable_retry_in(runs=runs, since=since, now=clock.now())
        return self.result(Outcome.UNAVAILABLE, error=error, retry_in=wait)

    def fail(self, error: str) -> Result:
        """A failed attempt: retried after its backoff window; the last one skips the batch."""
        record = self.record
        logger.warning("memory extraction run %s failed (attempt %s): %s", record.pk, record.attempt, error)
        if not is_last_attempt(record.attempt):
            self.finish(Status.FAILED, error=error)
            return self.result(Outcome.FAILED, error=error, retry_in=retry_delay(record.attempt))
        with transaction.atomic():
            if not claim_release(user_id=self.user_id, token=self.token):
                self.finish(Status.ABANDONED, error=f"{error} The claim was lost, so the batch was left pending.")
                return self.result(Outcome.ABANDONED, error=error)
            skipped = messages_pending(user_id=self.user_id).filter(id__in=self.ids)
            skipped.update(memory_status=Message.MemoryStatus.SKIPPED)
            self.finish(
                Status.DROPPED, error=f"{error} Attempt {record.attempt} of {MAX_ATTEMPTS}: the batch was skipped."
            )
        return self.result(Outcome.DROPPED, error=error)


def _recorded(record: ExtractionRun) -> dict[str, object]:
    return {name: getattr(record, name) for name in _RECORDED}


def judge_model_label() -> str:
    """The model that answers judge calls, as recorded on the run (the demo model names itself)."""
    model = get_chat_model()
    return model.label if model.is_demo and model.label else settings.MEMORY_MODEL


def judge_input_masked(messages: list[dict[str, str]]) -> list[dict[str, str]]:
    """The judge's messages as the run keeps them: a password or a card number the user typed is masked
    (memory.lexicon); the prompt is kept as it is."""
    return [
        m if m.get("role") == "system" else {**m, "content": lexicon.mask_credentials(m["content"])} for m in messages
    ]


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
