"""The OpenAI-compatible provider (OpenAI, DeepSeek, vLLM, Ollama, llama.cpp …) over the `openai` package.

This is the only module that imports `openai`. Every SDK failure becomes `LLMError`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import openai
from django.conf import settings

from chat.llm.base import ChatModel, LLMError, Messages, StreamChunk, TextDelta, ToolCall, ToolCalls


def _as_llm_error(exc: Exception) -> LLMError:
    if isinstance(exc, openai.APITimeoutError):
        return LLMError("The model provider timed out.", kind="timeout")
    if isinstance(exc, openai.APIConnectionError):
        return LLMError("Could not reach the model provider.", kind="connection")
    if isinstance(exc, openai.APIStatusError):
        return LLMError(f"The model provider answered HTTP {exc.status_code}.", kind="status")
    return LLMError(f"The model provider failed: {exc.__class__.__name__}.", kind="bad_response")


class OpenAIChatModel(ChatModel):
    def __init__(self) -> None:
        options: dict[str, Any] = {
            # Local servers (Ollama, vLLM, llama.cpp) accept any key; the SDK insists on one.
            "api_key": settings.OPENAI_API_KEY or "not-needed",
            "base_url": settings.OPENAI_BASE_URL or None,
            "timeout": settings.LLM_TIMEOUT,
            "max_retries": settings.LLM_MAX_RETRIES,
        }
        self.model = settings.CHAT_MODEL
        self.label = settings.CHAT_MODEL
        self._async = openai.AsyncOpenAI(**options)
        self._sync = openai.OpenAI(**options)

    async def stream(self, *, messages: Messages, tools: list[dict[str, Any]] | None = None) -> AsyncIterator[StreamChunk]:
        request: dict[str, Any] = {"model": self.model, "messages": messages, "stream": True}
        if tools:
            request["tools"] = tools
        # Tool calls arrive as fragments keyed by index; assemble them and emit them once at the end.
        pending: dict[int, dict[str, str]] = {}
        try:
            stream = await self._async.chat.completions.create(**request)
            async for chunk in stream:
                if not chunk.choices:
                    continue
                delta = chunk.choices[0].delta
                if delta is None:
                    continue
                if delta.content:
                    yield TextDelta(delta.content)
                for part in delta.tool_calls or []:
                    slot = pending.setdefault(part.index, {"id": "", "name": "", "arguments": ""})
                    if part.id:
                        slot["id"] = part.id
                    if part.function is not None:
                        slot["name"] += part.function.name or ""
                        slot["arguments"] += part.function.arguments or ""
        except openai.OpenAIError as exc:
            raise _as_llm_error(exc) from exc
        if pending:
            calls = [ToolCall(id=s["id"] or f"call_{i}", name=s["name"], arguments=s["arguments"] or "{}") for i, s in sorted(pending.items())]
            yield ToolCalls(calls)

    def complete_json(self, *, messages: Messages, model: str, temperature: float, timeout: float) -> str:
        try:
            response = self._sync.chat.completions.create(
                model=model,
                messages=messages,  # type: ignore[arg-type]
                response_format={"type": "json_object"},
                temperature=temperature,
                timeout=timeout,
                stream=False,
            )
        except openai.OpenAIError as exc:
            raise _as_llm_error(exc) from exc
        if not response.choices or response.choices[0].message.content is None:
            raise LLMError("The model provider returned no content.", kind="bad_response")
        return response.choices[0].message.content
