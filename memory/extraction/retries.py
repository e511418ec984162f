"""The retry policy of memory extraction, in one place: the pipeline, the Celery task and the flush tool
all read it from here.

- Failed attempts (an unusable answer: malformed, cut off, refused as bad) on a batch are its failed runs
  (same first message). After attempt n fails, the batch rests for `retry_delay(n)` = MEMORY_RETRY_BASE_SECONDS ×
  2^(n-1) from that run's end, and the task that saw the failure retries with exactly that countdown.
  The MAX_ATTEMPTS-th failure drops the batch (its messages become skipped).
- Within that window a background run does not start (BACKING_OFF: no run, no attempt counted, no judge
  call), so new turns during a provider outage never burn attempts. An explicit trigger (flush, manual)
  may still try at once, because a person asked, unless that attempt would be the last one: the attempt
  that drops a batch only ever starts after the full backoff.
- Slow is not poison: a timeout, a refused or dropped connection, HTTP 408/429/5xx (`server_unavailable`)
  never count as attempts. The run ends `unavailable`, and the batch rests `unavailable_delay(n)` after
  its n-th such run: MEMORY_RETRY_BASE_SECONDS doubling to at most MEMORY_RETRY_MAX_SECONDS,
  for MEMORY_RETRY_HOURS from the first; then the task stops and the messages stay pending for the
  next turn or the worker's sweep. MEMORY_JUDGE_TIMEOUT still bounds each call.
- A run found crashed (its claim expired) counts as a failed attempt but imposes no window: waiting for
  its claim to expire was its backoff.
- Busy (another run holds the user's claim): the task looks again every MEMORY_BUSY_RETRY_SECONDS, up to
  BUSY_RETRIES times (together they outlast a crashed claim's MEMORY_CLAIM_TTL_SECONDS); the flush tool
  waits up to MEMORY_FLUSH_WAIT_SECONDS, then leaves the message to a background run.
- A database error retries the task with Celery's own exponential backoff.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import DatabaseError

from chat.llm import LLMError
from memory.extraction.outcomes import Outcome, Result
from memory.models import ExtractionRun

MAX_ATTEMPTS = 3
BUSY_RETRIES = 20

# extract_memories_task's Celery options. Retries are bounded by `task_countdown` (busy looks, attempts,
# and MEMORY_RETRY_HOURS of an unavailable server at most MEMORY_RETRY_MAX_SECONDS apart); Celery's own
# bound only stops a database error that never clears.
TASK_RETRY_OPTIONS: dict[str, Any] = {
    "max_retries": 1000,
    "autoretry_for": (DatabaseError,),
    "retry_backoff": 5,
    "retry_backoff_max": 120,
}
# Publishing a task: a short broker hiccup is retried; an outage is not waited out (chat must go on).
ENQUEUE_RETRY_POLICY = {"max_retries": 2, "interval_start": 0.2, "interval_step": 0.5}
# How often a flush looks again while another run holds the user's claim.
FLUSH_POLL_SECONDS = 0.25


def retry_delay(attempt: int) -> float:
    """The backoff window after failed attempt `attempt`: base, 2×base, … seconds."""
    base = float(settings.MEMORY_RETRY_BASE_SECONDS)
    return base * 2 ** max(0, attempt - 1)


def server_unavailable(error: LLMError) -> bool:
    """Whether a judge call failed because of the server, not the batch: it timed out, could not connect or
    was cut off, or the server answered 408/429/5xx. Such a failure is waited out, never counted."""
    if error.kind in ("timeout", "connection"):
        return True
    return error.kind == "status" and error.status is not None and (error.status in (408, 429) or error.status >= 500)


def unavailable_delay(runs: int) -> float:
    """The rest after the batch's `runs`-th unavailable run: base, 2×base, … at most MEMORY_RETRY_MAX_SECONDS."""
    base = float(settings.MEMORY_RETRY_BASE_SECONDS)
    return min(float(settings.MEMORY_RETRY_MAX_SECONDS), base * 2 ** max(0, runs - 1))


def unavailable_retry_in(*, runs: int, since: datetime | None, now: datetime) -> float:
    """When to try a batch again after its `runs`-th unavailable run, the first of which ended at `since`;
    0 once MEMORY_RETRY_HOURS have passed (the task stops; the messages stay pending)."""
    if since is not None and now - since >= timedelta(hours=float(settings.MEMORY_RETRY_HOURS)):
        return 0.0
    return unavailable_delay(runs)


def busy_delay() -> float:
    return float(settings.MEMORY_BUSY_RETRY_SECONDS)


def flush_wait() -> float:
    # A background run may hold the claim for one judge call; waiting a little usually avoids "busy".
    return float(settings.MEMORY_FLUSH_WAIT_SECONDS)


def slot_wait(trigger: str) -> float:
    """How long a judge request waits for its turn in the provider's queue (chat.model_queue): a flush
    is waited for by a person; a background run waits as long as a judge call may take, then its task
    tries again later."""
    return flush_wait() if trigger == ExtractionRun.Trigger.FLUSH else float(settings.MEMORY_JUDGE_TIMEOUT)


def window_left(*, attempt: int, finished_at: datetime, now: datetime) -> float:
    """Seconds left in the backoff window after failed attempt `attempt`, which ended at `finished_at`."""
    until = finished_at + timedelta(seconds=retry_delay(attempt))
    return max(0.0, (until - now).total_seconds())


def may_start(*, trigger: str, failures: int, wait: float) -> bool:
    """Whether a run may start on a batch with `failures` failed attempts and `wait` seconds of backoff left."""
    if wait <= 0:
        return True
    return trigger != ExtractionRun.Trigger.BACKGROUND and failures + 1 < MAX_ATTEMPTS


def is_last_attempt(attempt: int) -> bool:
    """Whether failing attempt `attempt` drops the batch."""
    return attempt >= MAX_ATTEMPTS


def task_countdown(result: Result, *, retries: int) -> float | None:
    """When the extraction task that got `result` (after `retries` retries) tries again; None: it is done."""
    if result.status == Outcome.FAILED:
        return retry_delay(result.attempt)
    if result.status == Outcome.UNAVAILABLE:
        return result.retry_in or None
    if result.status == Outcome.BACKING_OFF and retries:
        # A scheduled retry that found a newer failure (e.g. a flush meanwhile): wait out its window.
        return result.retry_in
    # A fresh trigger during the window ends here: the retry scheduled by the failure picks it up.
    if result.status == Outcome.BUSY and retries < BUSY_RETRIES:
        return busy_delay()
    return None


def flush_follow_up(result: Result) -> tuple[bool, float | None]:
    """Whether a flush's message is left to a background run, and that run's countdown (None: soon).
    A busy flush is reviewed shortly; a failed or waiting one once the batch's backoff window has passed."""
    if result.status == Outcome.BUSY:
        return True, None
    if result.status in (Outcome.FAILED, Outcome.BACKING_OFF, Outcome.UNAVAILABLE):
        return True, result.retry_in
    return False, None
