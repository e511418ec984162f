"""Celery tasks of the imports app: take ids, reload, call one function. Both are idempotent (acks_late)."""

from __future__ import annotations

from celery import Task, shared_task
from django.db import DatabaseError

from imports import learning, runner
from memory.extraction.outcomes import Outcome
from memory.extraction.retries import MAX_ATTEMPTS, retry_delay

# Batches one task judges before it hands over to a fresh task (a worker restart loses at most these).
STEPS_PER_TASK = 20
BUSY_RETRY_SECONDS = 5


@shared_task(acks_late=True, ignore_result=True, autoretry_for=(DatabaseError,), max_retries=5, retry_backoff=5)
def import_run_task(import_id: int) -> str:
    return runner.import_run(import_id=import_id)


@shared_task(bind=True, acks_late=True, ignore_result=True, max_retries=None)
def learn_task(self: Task, import_id: int, attempt: int = 1) -> str:
    """Judge the import's user messages batch after batch; a failed batch is tried again with backoff (the
    pipeline drops it after MAX_ATTEMPTS, and the pass goes on past it)."""
    for _ in range(STEPS_PER_TASK):
        outcome = learning.learn_step(import_id=import_id, attempt=attempt)
        if outcome in (Outcome.APPLIED, Outcome.DROPPED):
            attempt = 1
            continue
        if outcome == Outcome.BUSY:
            raise self.retry(countdown=BUSY_RETRY_SECONDS, kwargs={"import_id": import_id, "attempt": attempt})
        if outcome in (Outcome.FAILED, Outcome.ABANDONED, Outcome.SPLIT):
            if attempt >= MAX_ATTEMPTS + 1:
                learning.learn_failed(import_id=import_id)
                return "failed"
            raise self.retry(countdown=retry_delay(attempt), kwargs={"import_id": import_id, "attempt": attempt + 1})
        return str(outcome)
    learn_task.delay(import_id)
    return "continued"
