"""Celery tasks: take ids, reload, call the pipeline. Idempotent, so `acks_late` is safe.

Running a task twice is harmless: a second run finds the messages already processed (or below the
threshold) and does nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime
from typing import Any

from celery import Task, shared_task
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from chat.llm import LLMError
from core.tasks import send_task, send_task_on_commit
from memory import embeddings, lifecycle, notices
from memory.extraction import batches, recovery, retention, retries
from memory.models import ExtractionRun

logger = logging.getLogger(__name__)


@shared_task(bind=True, acks_late=True, ignore_result=True, **retries.TASK_RETRY_OPTIONS)
def extract_memories_task(
    self: Task,
    user_id: int,
    message_id: int,
    min_pending: int | None = None,
    trigger: str = "background",
    announce: bool = False,
) -> str:
    """Extract memories from the user's pending messages up to `message_id`. With `announce` (an explicit
    request the chat model could not flush), the final outcome is shown in the message's conversation."""
    if trigger not in ExtractionRun.Trigger.values:
        trigger = ExtractionRun.Trigger.BACKGROUND
    result = batches.extract(user_id=user_id, trigger=trigger, up_to_message_id=message_id, min_pending=min_pending)
    countdown = retries.task_countdown(result, retries=self.request.retries)
    # An announced flush says at once why it waits or failed, and again when its task tries no more.
    if announce and (countdown is None or not self.request.retries):
        notices.announce_outcome(user_id=user_id, message_id=message_id, result=result)
    if countdown is not None:
        raise self.retry(countdown=countdown)
    return result.status


@shared_task(acks_late=True, ignore_result=True)
def embed_memories_task(user_id: int) -> int:
    """Embed the user's memories that have no vector yet (EMBEDDING_MODEL); idempotent."""
    try:
        return embeddings.memory_vectors_make(user_id=user_id)
    except LLMError as exc:  # the sweep tries again; recall ranks lexically meanwhile
        logger.warning("could not embed the memories of user %s: %s", user_id, exc)
        return 0


def embed_memories_later(*, user_id: int) -> None:
    """After the current transaction commits, have the worker embed the user's new memories (when
    EMBEDDING_MODEL is set): never on a turn's path."""
    if not embeddings.enabled():
        return
    # A broker outage must not break a write; the sweep catches up.
    send_task_on_commit(embed_memories_task, args=(user_id,), what=f"embeddings for user {user_id}")


# The sweep's other steps, registered by the modules that own them in memory/apps.py (the tidy-up's
# passes that are due: memory.consolidation.tasks), so this module imports none of them. Each takes the
# sweep's time; one that fails is logged and the sweep goes on.
_sweep_steps: dict[str, Callable[[datetime], object]] = {}


def register_sweep_step(name: str, step: Callable[[datetime], object]) -> None:
    _sweep_steps[name] = step


@shared_task(ignore_result=True)
def sweep_extractions_task() -> int:
    """Restart extraction work left behind by a dead worker or a lost message (memory/extraction/recovery.py); move
    memories whose end date passed to history and delete unanswered suggestions (memory/lifecycle.py);
    embed memories whose vector is missing (a lost message, an existing user's memories once embeddings run,
    or EMBEDDING_MODEL changed); strip the text
    of runs past their retention (memory/extraction/retention.py); send the tidy-up passes that are due
    (memory.consolidation.tasks)."""
    now = timezone.now()
    lifecycle.memories_expire(now=now)
    lifecycle.suggestions_expire(now=now)
    recovery.claims_recover()
    for user_id in embeddings.users_missing_vectors():
        embed_memories_later(user_id=user_id)
    try:
        retention.runs_text_strip()
    except Exception:  # retention waits for the next sweep; extraction recovery must still run
        logger.exception("could not strip the text of old extraction runs")
    for name, step in _sweep_steps.items():
        try:
            step(now)
        except Exception:  # the next sweep tries again; extraction recovery must still run
            logger.exception("the sweep's step %r failed", name)
    work = recovery.pending_work()
    for user_id, message_id in work:
        _send(user_id, message_id, None, ExtractionRun.Trigger.BACKGROUND)
    return len(work)


def _send(
    user_id: int,
    message_id: int,
    min_pending: int | None,
    trigger: str,
    countdown: float | None = None,
    announce: bool = False,
) -> None:
    # A broker outage must never break chat; the messages stay pending and a later turn retries.
    send_task(
        extract_memories_task,
        args=(user_id, message_id),
        kwargs={"min_pending": min_pending, "trigger": trigger, **({"announce": True} if announce else {})},
        countdown=countdown,
        retry_policy=retries.ENQUEUE_RETRY_POLICY,
        what=f"memory extraction for user {user_id}",
    )


def enqueue_extraction(
    *,
    user_id: int,
    message_id: int,
    min_pending: int | None = None,
    trigger: str = ExtractionRun.Trigger.BACKGROUND,
    countdown: float | None = None,
    announce: bool = False,
) -> None:
    """Schedule extraction once the current transaction commits (immediately outside one);
    with `countdown`, that many seconds later; with `announce`, its outcome is shown in the conversation."""
    later: dict[str, Any] = {} if countdown is None else {"countdown": countdown}
    if announce:
        later["announce"] = True
    transaction.on_commit(lambda: _send(user_id, message_id, min_pending, str(trigger), **later))


# When extraction is sent, in one place: after a turn, a background run once enough is pending and the
# user has paused; a run for one message whatever else is pending (`min_pending=1`) for a flush's
# follow-up, an explicit request the flush tool did not answer, and the admin's runs.


def enqueue_after_turn(*, user_id: int, message_id: int) -> None:
    """A background run once the user has been quiet for a while: the task of a burst's last turn covers
    the burst in one call."""
    idle = float(settings.MEMORY_EXTRACT_IDLE_SECONDS)
    enqueue_extraction(user_id=user_id, message_id=message_id, countdown=idle if idle > 0 else None)


def enqueue_for_message(
    *, user_id: int, message_id: int, trigger: str, countdown: float | None = None, announce: bool = False
) -> None:
    """A run covering this message, whatever the background threshold."""
    enqueue_extraction(
        user_id=user_id, message_id=message_id, min_pending=1, trigger=trigger, countdown=countdown, announce=announce
    )
