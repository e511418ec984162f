"""Pick the model provider from settings: the OpenAI-compatible adapter or the offline demo model.

`LLM_BACKEND` is "openai", "demo", or a dotted path to a `ChatModel` subclass (tests use this).
"""

from __future__ import annotations

import asyncio
from functools import lru_cache
from typing import Any

from django.conf import settings
from django.core.signals import setting_changed
from django.dispatch import receiver
from django.utils.module_loading import import_string

from chat.llm.base import (
    ChatModel,
    Embedder,
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
    "Embedder",
    "LLMError",
    "Messages",
    "StreamChunk",
    "TextDelta",
    "ToolCall",
    "ToolCalls",
    "Usage",
    "get_chat_model",
    "get_embedder",
    "single_system_message",
    "tools_usable",
    "warm_up",
]

_BACKENDS = {"openai": "chat.llm.openai_adapter.OpenAIChatModel", "demo": "chat.llm.demo.DemoChatModel"}


# The settings a model is built from; changing one (as tests do) builds a fresh model on the next call.
MODEL_SETTINGS = frozenset(
    {"LLM_BACKEND", "OPENAI_BASE_URL", "OPENAI_API_KEY", "CHAT_MODEL", "LLM_TIMEOUT", "LLM_MAX_RETRIES"}
)
EMBEDDING_OFF = "off"  # EMBEDDING_MODEL's value that turns embeddings off
EMBEDDING_SETTINGS = frozenset(
    {"EMBEDDING_MODEL", "EMBEDDING_BASE_URL", "EMBEDDING_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_KEY"}
)


def get_chat_model() -> ChatModel:
    """The configured model, built once per process and shared (it holds the provider's HTTP client)."""
    return _build()


def warm_up(loop: asyncio.AbstractEventLoop | None = None) -> None:
    """Build the configured model (and embedder) now, before the first turn needs it: the OpenAI adapter's
    build imports `openai` and makes its HTTP client, which takes a noticeable time on a fresh process and
    which the first turns (a burst of them) otherwise all waited for. With `loop`, also what the model's
    streams on that event loop need (ChatModel.prepare)."""
    model = get_chat_model()
    if loop is not None:
        model.prepare(loop)
    get_embedder()


def tools_usable() -> bool:
    """Whether chat turns offer tools now (CHAT_TOOLS is not "off" and the provider handles them)."""
    return settings.CHAT_TOOLS != "off" and get_chat_model().tools_supported


@lru_cache(maxsize=1)
def _build() -> ChatModel:
    cls = import_string(_BACKENDS.get(settings.LLM_BACKEND, settings.LLM_BACKEND))
    instance: ChatModel = cls()
    return instance


def get_embedder() -> Embedder | None:
    """The embeddings for memory recall, or None. EMBEDDING_MODEL unset: the embedded model
    (chat.llm.local_embedder), None where it cannot load; "off": None; any other name: that model at an
    OpenAI-compatible `/v1/embeddings` (EMBEDDING_BASE_URL and EMBEDDING_API_KEY default to the chat
    provider's)."""
    return _build_embedder()


@lru_cache(maxsize=1)
def _build_embedder() -> Embedder | None:
    """Built once per process: the embedded model loads (or fails to, logged) once."""
    model = settings.EMBEDDING_MODEL
    if model.lower() == EMBEDDING_OFF:
        return None
    if not model:
        from chat.llm.local_embedder import load  # the engine loads only where it is used

        return load()
    from chat.llm.openai_adapter import OpenAIEmbedder  # imports `openai`, which the demo never needs

    return OpenAIEmbedder()


@receiver(setting_changed)
def _settings_changed(*, setting: str, **kwargs: Any) -> None:
    if setting in MODEL_SETTINGS:
        _build.cache_clear()
    if setting in EMBEDDING_SETTINGS:
        _build_embedder.cache_clear()
