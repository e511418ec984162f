"""Pick the model provider from settings: the OpenAI-compatible adapter or the offline demo model.

`LLM_BACKEND` is "openai", "demo", or a dotted path to a `ChatModel` subclass (tests use this).
"""

from __future__ import annotations

from functools import lru_cache

from django.conf import settings
from django.utils.module_loading import import_string

from chat.llm.base import (
    ChatModel,
    LLMError,
    Messages,
    StreamChunk,
    TextDelta,
    ToolCall,
    ToolCalls,
    Usage,
    single_system_message,
)

__all__ = [
    "ChatModel",
    "LLMError",
    "Messages",
    "StreamChunk",
    "TextDelta",
    "ToolCall",
    "ToolCalls",
    "Usage",
    "get_chat_model",
    "single_system_message",
]

_BACKENDS = {"openai": "chat.llm.openai_adapter.OpenAIChatModel", "demo": "chat.llm.demo.DemoChatModel"}


def get_chat_model() -> ChatModel:
    return _build(
        settings.LLM_BACKEND,
        settings.OPENAI_BASE_URL,
        settings.OPENAI_API_KEY,
        settings.CHAT_MODEL,
        float(settings.LLM_TIMEOUT),
        int(settings.LLM_MAX_RETRIES),
    )


@lru_cache(maxsize=8)
def _build(backend: str, base_url: str, api_key: str, chat_model: str, timeout: float, max_retries: int) -> ChatModel:
    # The arguments are the cache key: changing a setting (as tests do) builds a fresh client.
    cls = import_string(_BACKENDS.get(backend, backend))
    instance: ChatModel = cls()
    return instance
