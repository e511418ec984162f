"""The OpenAI-compatible provider (OpenAI, DeepSeek, vLLM, Ollama, llama.cpp …) over the `openai` package.

This is the only module that imports `openai`. Every provider failure becomes `LLMError`.
"""

from __future__ import annotations

import asyncio
import re
import weakref
from collections.abc import AsyncIterator
from typing import Any

import openai
from django.conf import settings

from chat.llm.base import ChatModel, LLMError, Messages, StreamChunk, TextDelta, ToolCall, ToolCalls, Usage

# How providers word a refusal for length: OpenAI and vLLM ("maximum context length is 8192 tokens"),
# llama.cpp ("exceeds the available context size"), others ("context length exceeded", "too long").
_OVERFLOW_TEXT = re.compile(
    r"context[ _-]?(length|window|size)|maximum (context )?length|too many tokens|prompt is too long", re.I
)
_WINDOW_TEXT = re.compile(r"(?:maximum context length|context (?:length|window|size)) (?:is|of) (\d+)", re.I)


def _context_overflow(exc: openai.APIStatusError) -> LLMError | None:
    """A refusal for length (HTTP 400 with code `context_length_exceeded`, or saying so), else None."""
    if exc.status_code not in (400, 413):
        return None
    error = exc.body.get("error", exc.body) if isinstance(exc.body, dict) else {}
    code = str(error.get("code") or "") if isinstance(error, dict) else ""
    text = str(error.get("message") or "") if isinstance(error, dict) else ""
    text = text or str(exc.message or "")
    if code != "context_length_exceeded" and not _OVERFLOW_TEXT.search(text):
        return None
    stated = _WINDOW_TEXT.search(text)
    window = int(stated.group(1)) if stated else None
    message = "The conversation is longer than the model can read at once."
    return LLMError(message, kind="context_length", context_window=window)


def _as_llm_error(exc: Exception) -> LLMError:
    if isinstance(exc, openai.APIStatusError) and (overflow := _context_overflow(exc)) is not None:
        return overflow
    if isinstance(exc, openai.APITimeoutError):
        return LLMError("The model provider timed out.", kind="timeout")
    if isinstance(exc, openai.APIConnectionError):
        return LLMError("Could not reach the model provider.", kind="connection")
    if isinstance(exc, openai.APIStatusError):
        return LLMError(f"The model provider answered HTTP {exc.status_code}.", kind="status")
    if isinstance(exc, openai.APIError):
        return LLMError("The model provider reported an error.", kind="status")
    # Anything else (a body that is not JSON, an unexpected shape) means the answer was garbage.
    name = exc.__class__.__name__
    return LLMError(f"The model provider sent an answer that could not be read ({name}).", kind="bad_response")


class OpenAIChatModel(ChatModel):
    def __init__(self) -> None:
        self._options: dict[str, Any] = {
            # Local servers (Ollama, vLLM, llama.cpp) accept any key; the SDK insists on one.
            "api_key": settings.OPENAI_API_KEY or "not-needed",
            "base_url": settings.OPENAI_BASE_URL or None,
            "timeout": settings.LLM_TIMEOUT,
            "max_retries": settings.LLM_MAX_RETRIES,
        }
        self.model = settings.CHAT_MODEL
        self.label = settings.CHAT_MODEL
        self._sync = openai.OpenAI(**self._options)
        # An async client's connection pool belongs to the event loop that opened it; a process can run
        # several loops (ASGI server, async_to_sync under WSGI, Celery), so there is one client per loop.
        self._async_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, openai.AsyncOpenAI] = (
            weakref.WeakKeyDictionary()
        )

    def _async_client(self) -> openai.AsyncOpenAI:
        loop = asyncio.get_running_loop()
        client = self._async_clients.get(loop)
        if client is None:
            client = self._async_clients[loop] = openai.AsyncOpenAI(**self._options)
        return client

    async def stream(
        self, *, messages: Messages, tools: list[dict[str, Any]] | None = None
    ) -> AsyncIterator[StreamChunk]:
        request: dict[str, Any] = {"model": self.model, "messages": messages, "stream": True}
        # The prompt size the provider counted calibrates our token estimate (chat.tokens).
        request["stream_options"] = {"include_usage": True}
        if tools:
            request["tools"] = tools
        # Tool calls arrive as fragments keyed by index; assemble them and emit them once at the end.
        pending: dict[int, dict[str, str]] = {}
        finished = False
        received = False
        usage: int | None = None
        try:
            stream = await self._async_client().chat.completions.create(**request)
            # `async with` closes the HTTP response even when our consumer stops early (a cancelled turn).
            async with stream:
                async for chunk in stream:
                    received = True
                    for text in _collect(chunk, pending):
                        yield TextDelta(text)
                    finished = finished or bool(chunk.choices and chunk.choices[0].finish_reason)
                    if getattr(chunk, "usage", None) is not None and chunk.usage.prompt_tokens:
                        usage = int(chunk.usage.prompt_tokens)
        except Exception as exc:  # CancelledError and GeneratorExit are not Exceptions: they pass through
            raise _as_llm_error(exc) from exc
        if not received:
            # llama.cpp answers a request longer than its context this way; the caller decides.
            raise LLMError("The model provider sent an empty answer.", kind="empty")
        if usage is not None:
            yield Usage(usage)
        if not finished:
            # The connection ended without a finish_reason: the reply was cut off, not complete.
            raise LLMError("The model provider stopped before the reply was complete.", kind="bad_response")
        if pending:
            calls = [
                ToolCall(id=s["id"] or f"call_{i}", name=s["name"], arguments=s["arguments"] or "{}")
                for i, s in sorted(pending.items())
            ]
            yield ToolCalls(calls)

    def complete_json(self, *, messages: Messages, model: str, temperature: float, timeout: float) -> str:
        try:
            response = self._sync.chat.completions.create(  # type: ignore[call-overload]
                model=model,
                messages=messages,
                response_format={"type": "json_object"},
                temperature=temperature,
                timeout=timeout,
                stream=False,
            )
            content = response.choices[0].message.content if response.choices else None
        except Exception as exc:
            raise _as_llm_error(exc) from exc
        if content is None:
            raise LLMError("The model provider returned no content.", kind="bad_response")
        return content

    def complete_text(self, *, messages: Messages, model: str, max_tokens: int, timeout: float) -> str:
        try:
            request: dict[str, Any] = {"model": model, "messages": messages, "max_tokens": max_tokens}
            response: Any = self._sync.chat.completions.create(**request, timeout=timeout, stream=False)
            content = response.choices[0].message.content if response.choices else None
        except Exception as exc:
            raise _as_llm_error(exc) from exc
        if not content or not content.strip():
            raise LLMError("The model provider returned no content.", kind="bad_response")
        return str(content)


def _collect(chunk: Any, pending: dict[int, dict[str, str]]) -> list[str]:
    """The text in one stream chunk; tool-call fragments are merged into `pending` by index."""
    if not chunk.choices:  # e.g. the final usage chunk
        return []
    delta = chunk.choices[0].delta
    if delta is None:
        return []
    for part in delta.tool_calls or []:
        slot = pending.setdefault(part.index, {"id": "", "name": "", "arguments": ""})
        if part.id:
            slot["id"] = part.id
        if part.function is not None:
            slot["name"] += part.function.name or ""
            slot["arguments"] += part.function.arguments or ""
    return [delta.content] if delta.content else []
