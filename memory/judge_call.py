"""The judge call: how the pipeline asks the model for its answer, and how an evaluation must ask too.

One function, so that `manage.py eval_judge` measures exactly what extraction does: the judge model
(MEMORY_MODEL), JSON mode, the temperature and the timeout.
"""

from __future__ import annotations

from django.conf import settings

from chat.llm import ChatModel, Messages, get_chat_model

JUDGE_TEMPERATURE = 0.3
JUDGE_TIMEOUT_SECONDS = 120.0


def call_judge(messages: Messages, *, chat_model: ChatModel | None = None, model: str = "") -> str:
    """The judge's raw answer to `messages` (see `memory.judge.render_input`). Raises LLMError."""
    return (chat_model or get_chat_model()).complete_json(
        messages=messages,
        model=model or settings.MEMORY_MODEL,
        temperature=JUDGE_TEMPERATURE,
        timeout=JUDGE_TIMEOUT_SECONDS,
    )
