"""The chat models a conversation may use (the model picker), and each one's context window.

- `CHAT_MODELS` (comma-separated; the first is the default) names them outright.
- Unset, the provider's `GET /v1/models` lists them, kept in Django's cache for at most
  LIST_SECONDS (shared by every process on Redis). Where the server says what a model is for (a `type`
  of "embedding", "image", "audio", …, as LM Studio, Together and others do), only chat models are kept;
  a server that says nothing has every model it lists kept. `CHAT_MODEL` is the default and always
  offered. A provider that cannot be reached lists `CHAT_MODEL` alone (looked at again a minute later).
- The offline demo model (or any backend other than "openai") lists one model, its label.

The window a model has is what the listing states (`max_model_len`, `context_length`, `context_window`),
else what chat.llm.server_facts finds, else CHAT_CONTEXT_TOKENS; `CHAT_CONTEXT_TOKENS` set wins.
The judge and summaries keep their own models (MEMORY_MODEL, SUMMARY_MODEL): this list is chat's.
"""

from __future__ import annotations

import json
import logging
import urllib.request
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core.cache import cache

logger = logging.getLogger(__name__)

LIST_SECONDS = 600
FAILED_LIST_SECONDS = 60
LIST_TIMEOUT_SECONDS = 3.0
CACHE_KEY = "memora:chat-models:{base}"
# What servers call a model that does not chat, in a listing's `type` (or `task`) field.
NOT_CHAT = frozenset(
    {"embedding", "embeddings", "rerank", "reranker", "image", "images", "audio", "moderation", "tts", "stt"}
)
WINDOW_FIELDS = ("max_model_len", "context_length", "context_window", "max_context_length")


@dataclass(frozen=True)
class ChatModelChoice:
    id: str  # what is sent as `model`
    window: int | None = None  # the context window the provider states for it, if it does


def _configured() -> list[str]:
    names = [name.strip() for name in str(getattr(settings, "CHAT_MODELS", "") or "").split(",")]
    return list(dict.fromkeys(name for name in names if name))


def _is_chat(entry: dict[str, Any]) -> bool:
    kind = str(entry.get("type") or entry.get("task") or "").strip().lower()
    return not kind or kind not in NOT_CHAT


def _window(entry: dict[str, Any]) -> int | None:
    for name in WINDOW_FIELDS:
        value = entry.get(name)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def parse_listing(body: Any) -> list[ChatModelChoice]:
    """The chat models of a `GET /v1/models` answer (`{"data": [{"id", ...}]}`), in its order."""
    entries = body.get("data") if isinstance(body, dict) else None
    choices: dict[str, ChatModelChoice] = {}
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, dict) and isinstance(entry.get("id"), str) and entry["id"].strip() and _is_chat(entry):
            choices.setdefault(entry["id"], ChatModelChoice(id=entry["id"], window=_window(entry)))
    return list(choices.values())


def _fetch() -> list[ChatModelChoice] | None:
    base = (settings.OPENAI_BASE_URL or "https://api.openai.com/v1").rstrip("/")
    headers = {"Accept": "application/json"}
    if settings.OPENAI_API_KEY:
        headers["Authorization"] = f"Bearer {settings.OPENAI_API_KEY}"
    try:
        request = urllib.request.Request(f"{base}/models", headers=headers)
        with urllib.request.urlopen(request, timeout=LIST_TIMEOUT_SECONDS) as response:
            return parse_listing(json.loads(response.read(2_000_000)))
    except Exception as exc:  # unreachable, not JSON, no such route: CHAT_MODEL alone, for a minute
        logger.info("could not list the provider's models (%s)", exc.__class__.__name__)
        return None


def _listed() -> list[ChatModelChoice]:
    key = CACHE_KEY.format(base=settings.OPENAI_BASE_URL or "default")[:240]
    try:
        cached = cache.get(key)
    except Exception:  # a cache outage asks the provider, never breaks a page
        cached = None
    if cached is not None:
        return [ChatModelChoice(id=i, window=w) for i, w in cached]
    fetched = _fetch()
    try:
        cache.set(
            key, [(c.id, c.window) for c in fetched or []], LIST_SECONDS if fetched is not None else FAILED_LIST_SECONDS
        )
    except Exception:
        logger.debug("could not keep the provider's model list")
    return fetched or []


def chat_models() -> list[ChatModelChoice]:
    """The models a conversation may use, the default first."""
    configured = _configured()
    if configured:
        return [ChatModelChoice(id=name) for name in configured]
    if settings.LLM_BACKEND != "openai":
        return [ChatModelChoice(id=settings.CHAT_MODEL)]
    listed = _listed()
    default = next((c for c in listed if c.id == settings.CHAT_MODEL), ChatModelChoice(id=settings.CHAT_MODEL))
    return [default, *(c for c in listed if c.id != default.id)]


def chat_model_ids() -> list[str]:
    return [choice.id for choice in chat_models()]


def default_chat_model() -> str:
    """The model of a conversation that names none: CHAT_MODELS' first, else CHAT_MODEL."""
    configured = _configured()
    return configured[0] if configured else settings.CHAT_MODEL


def conversation_model(model: str) -> str:
    """The model a conversation's turns use: its own, or the default when it names none."""
    return model or default_chat_model()


def stated_window(model: str) -> int | None:
    """The window the provider's listing states for `model` (only when the list comes from the provider)."""
    if _configured() or settings.LLM_BACKEND != "openai":
        return None
    return next((c.window for c in _listed() if c.id == model), None)
