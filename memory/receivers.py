"""The post-turn hook: after a turn commits, schedule background extraction when enough is pending."""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings

from memory.selectors import messages_pending
from memory.tasks import embed_memories_later, enqueue_extraction

logger = logging.getLogger(__name__)


def pending_up_to(*, user_id: int, message_id: int) -> int:
    """Pending user messages up to `message_id` across all conversations (0 when memory is off)."""
    return messages_pending(user_id=user_id, up_to_message_id=message_id).filter(user__memory_enabled=True).count()


def on_turn_finished(sender: object, *, user_id: int, user_message_id: int, **kwargs: Any) -> None:
    """chat.extensions.turn_finished receiver: one count query, and a task only at the threshold."""
    try:
        if pending_up_to(user_id=user_id, message_id=user_message_id) >= settings.MEMORY_EXTRACT_MIN_TURNS:
            enqueue_extraction(user_id=user_id, message_id=user_message_id)
    except Exception:  # the reply has been delivered; a hook failure must not surface in chat
        logger.exception("post-turn memory hook failed for user %s", user_id)


def on_memories_written(sender: object, *, user_id: int, **kwargs: Any) -> None:
    """memory.signals.memories_changed receiver (after an extraction run committed): embed the new rows."""
    embed_memories_later(user_id=user_id)
