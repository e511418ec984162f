"""Celery tasks of the chat app: take ids, reload, call one service. Idempotent, so `acks_late` is safe."""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task

from chat import push, selectors, services
from chat.fragments import summary_divider_html
from chat.models import Conversation
from chat.turn import compaction
from core.tasks import send_task

logger = logging.getLogger(__name__)

ENQUEUE_RETRY_POLICY = {"max_retries": 2, "interval_start": 0.2, "interval_step": 0.5}


@shared_task(acks_late=True, ignore_result=True)
def compact_conversation_task(conversation_id: str) -> str:
    """Summarize the oldest part of a conversation's agent state if it is still above CHAT_COMPACT_AT.
    Applied only if the state is unchanged and no turn holds the lock; running it twice is harmless."""
    outcome = compaction.compact_in_background(conversation_id=conversation_id)
    if outcome == "compacted":
        _push_summary_divider(conversation_id)
    return outcome


def _push_summary_divider(conversation_id: Any) -> None:
    """Show the conversation's open pages where the summary now ends, without a reload."""
    conversation = Conversation.objects.filter(pk=conversation_id).first()
    divider = selectors.summary_divider(conversation=conversation) if conversation is not None else None
    if conversation is None or divider is None:
        return
    # Missed (the channel layer down), the divider shows on the next load.
    event = {"type": "chat.fragment", "conversation_id": str(conversation.pk), "html": summary_divider_html(divider)}
    push.send_event(event, user_id=conversation.owner_id)


@shared_task(ignore_result=True)
def sweep_temporary_conversations_task() -> int:
    """Delete temporary chats CHAT_TEMPORARY_HOURS after their last message (sent by the worker's sweep,
    config/celery.py). Idempotent."""
    return services.temporary_conversations_sweep()


def enqueue_compaction(conversation_id: Any) -> None:
    """Send the compaction task (called on commit, chat.turn.compaction). A broker outage must never break chat:
    the pending mark expires and a later turn tries again."""
    send_task(
        compact_conversation_task,
        args=(str(conversation_id),),
        retry_policy=ENQUEUE_RETRY_POLICY,
        what=f"compaction of conversation {conversation_id}",
    )


def on_turn_finished(sender: object, *, conversation_id: Any, **kwargs: Any) -> None:
    """chat.extensions.turn_finished receiver: one state read, and a task only above CHAT_COMPACT_AT."""
    try:
        compaction.schedule_if_needed(conversation_id=conversation_id, enqueue=enqueue_compaction)
    except Exception:  # the reply has been delivered; a hook failure must not surface in chat
        logger.exception("post-turn compaction hook failed for conversation %s", conversation_id)
