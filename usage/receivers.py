"""chat.llm.metering's signals, recorded (never raising: counting must not cost a reply or a memory)."""

from __future__ import annotations

import logging

from chat.llm.metering import Call
from usage import services

logger = logging.getLogger(__name__)


def on_provider_used(
    sender: object, *, user_id: int, project_id: int | None, kind: str, calls: list[Call], **kwargs: object
) -> None:
    try:
        for call in calls:
            services.usage_record(
                user_id=user_id,
                project_id=project_id,
                model=call.model,
                kind=kind,
                prompt_tokens=call.prompt_tokens,
                completion_tokens=call.completion_tokens,
                estimated=call.estimated,
            )
    except Exception:
        logger.exception("recording usage failed")


def on_reply_metered(sender: object, *, assistant_message_id: int, memory_tokens: int, **kwargs: object) -> None:
    try:
        services.reply_memory_tokens_set(message_id=assistant_message_id, tokens=memory_tokens)
    except Exception:
        logger.exception("recording a reply's memory tokens failed")
