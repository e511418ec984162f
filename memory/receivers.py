"""The post-turn hook: after a turn commits, schedule background extraction when enough is pending.

An explicit request to remember, correct or forget (memory.lexicon's vocabulary, English and Chinese)
always ends with a marker in the conversation: remembered, waiting (and why) or not remembered (and
why). The flush tool leaves one when the chat model called it (memory.tools); when it did not (no
tools: CHAT_TOOLS=off or a provider that does not handle them; a model that did not call it; a turn
that failed before any reply), the request runs the flush pipeline after the turn instead and its
outcome is shown the same way (memory.notices.announce_outcome)."""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings

from memory import lexicon
from memory.models import ExtractionRun
from memory.notice_selectors import memory_outcome_marked
from memory.selectors import messages_pending, pending_count_up_to
from memory.tasks import embed_memories_later, enqueue_after_turn, enqueue_for_message

logger = logging.getLogger(__name__)


def pending_up_to(*, user_id: int, message_id: int) -> int:
    """Pending user messages up to `message_id` across all conversations (0 when memory is off)."""
    return pending_count_up_to(user_id=user_id, message_id=message_id)


def explicit_request_pending(*, user_id: int, message_id: int) -> bool:
    """Whether the message is the user's, still pending (memory on, not temporary) and asks to remember,
    correct or forget something."""
    pending = messages_pending(user_id=user_id, memory_on=True).filter(pk=message_id)
    content = pending.values_list("content", flat=True).first()
    return content is not None and lexicon.is_explicit_request(content)


def on_turn_finished(sender: object, *, user_id: int, user_message_id: int, **kwargs: Any) -> None:
    """chat.extensions.turn_finished receiver: one count query, and a task only at the threshold; an
    explicit request the flush tool did not answer is flushed at once."""
    try:
        if explicit_request_pending(user_id=user_id, message_id=user_message_id) and not memory_outcome_marked(
            user_id=user_id, message_id=user_message_id
        ):
            flush = ExtractionRun.Trigger.FLUSH
            enqueue_for_message(user_id=user_id, message_id=user_message_id, trigger=flush, announce=True)
            return
        if pending_up_to(user_id=user_id, message_id=user_message_id) >= settings.MEMORY_EXTRACT_MIN_TURNS:
            enqueue_after_turn(user_id=user_id, message_id=user_message_id)
    except Exception:  # the reply has been delivered; a hook failure must not surface in chat
        logger.exception("post-turn memory hook failed for user %s", user_id)


def on_memories_written(sender: object, *, user_id: int, **kwargs: Any) -> None:
    """memory.signals.memories_changed receiver (after an extraction run committed): embed the new rows."""
    embed_memories_later(user_id=user_id)
