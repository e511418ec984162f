"""Celery tasks of the chat app: take ids, reload, call one service. Idempotent, so `acks_late` is safe."""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task

from chat import compaction

logger = logging.getLogger(__name__)


@shared_task(acks_late=True, ignore_result=True)
def compact_conversation_task(conversation_id: str) -> str:
    """Summarize the oldest part of a conversation's agent state if it is still above CHAT_COMPACT_AT.
    Applied only if the state is unchanged and no turn holds the lock; running it twice is harmless."""
    return compaction.compact_in_background(conversation_id=conversation_id)


def enqueue_compaction(conversation_id: Any) -> None:
    try:
        compact_conversation_task.apply_async(
            args=(str(conversation_id),),
            retry=True,
            retry_policy={"max_retries": 2, "interval_start": 0.2, "interval_step": 0.5},
        )
    except Exception:
        # A broker outage must never break chat: the pending mark expires and a later turn tries again.
        logger.exception("could not enqueue compaction of conversation %s", conversation_id)


def on_turn_finished(sender: object, *, conversation_id: Any, **kwargs: Any) -> None:
    """chat.extensions.turn_finished receiver: one state read, and a task only above CHAT_COMPACT_AT."""
    try:
        compaction.schedule_if_needed(conversation_id=conversation_id, enqueue=enqueue_compaction)
    except Exception:  # the reply has been delivered; a hook failure must not surface in chat
        logger.exception("post-turn compaction hook failed for conversation %s", conversation_id)
