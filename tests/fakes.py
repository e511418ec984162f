"""An in-process fake model for tests: scripted replies, recorded requests. Never touches a network.

Use the `fake_model` fixture: it points LLM_BACKEND here and resets the script for each test.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from chat.llm.base import ChatModel, LLMError, Messages, StreamChunk, TextDelta, ToolCall, ToolCalls, Usage


@dataclass
class Step:
    """One scripted model step: text chunks, optional tool calls, optional failure after the text."""

    chunks: list[str] = field(default_factory=list)
    tool_calls: list[ToolCall] = field(default_factory=list)
    error: LLMError | None = None
    delay: float = 0.0  # seconds before each chunk
    gate: asyncio.Event | None = None  # when set, the step waits for it before its first chunk
    usage: int | None = None  # a prompt size to report at the end, as providers do with usage


class ScriptedChatModel(ChatModel):
    label = "Scripted test model"
    steps: ClassVar[list[Step]] = []
    requests: ClassVar[list[dict[str, Any]]] = []
    judge_answers: ClassVar[list[str | Exception | Callable[[Messages], str]]] = []
    judge_requests: ClassVar[list[dict[str, Any]]] = []
    summary_answers: ClassVar[list[str | Exception]] = []
    summary_requests: ClassVar[list[dict[str, Any]]] = []

    @classmethod
    def reset(cls) -> None:
        cls.steps, cls.requests, cls.judge_answers, cls.judge_requests = [], [], [], []
        cls.summary_answers, cls.summary_requests = [], []

    async def stream(
        self,
        *,
        messages: Messages,
        tools: list[dict[str, Any]] | None = None,
        max_tokens: int | None = None,
        model: str | None = None,
    ) -> AsyncIterator[StreamChunk]:
        request = {
            "messages": json.loads(json.dumps(messages)),
            "tools": tools,
            "max_tokens": max_tokens,
            "model": model,
        }
        type(self).requests.append(request)
        step = type(self).steps.pop(0) if type(self).steps else Step(chunks=["ok"])
        if step.gate is not None:
            await step.gate.wait()
        for text in step.chunks:
            if step.delay:
                await asyncio.sleep(step.delay)
            yield TextDelta(text)
        if step.error is not None:
            raise step.error
        if step.usage is not None:
            yield Usage(step.usage)
        if step.tool_calls:
            yield ToolCalls(list(step.tool_calls))

    def complete_json(
        self,
        *,
        messages: Messages,
        model: str,
        temperature: float,
        timeout: float,
        max_tokens: int | None = None,
        schema: dict[str, Any] | None = None,
    ) -> str:
        type(self).judge_requests.append(
            {
                "messages": json.loads(json.dumps(messages)),
                "model": model,
                "temperature": temperature,
                "timeout": timeout,
                "max_tokens": max_tokens,
                "schema": schema,
            }
        )
        if not type(self).judge_answers:
            return json.dumps({"operations": []})
        answer = type(self).judge_answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        if callable(answer):
            return answer(messages)
        return answer

    def complete_text(self, *, messages: Messages, model: str, max_tokens: int, timeout: float) -> str:
        type(self).summary_requests.append(
            {"messages": json.loads(json.dumps(messages)), "model": model, "max_tokens": max_tokens}
        )
        answer = type(self).summary_answers.pop(0) if type(self).summary_answers else "The earlier talk, summarized."
        if isinstance(answer, Exception):
            raise answer
        return answer


class FakeModelController:
    """What tests use to script the fake model."""

    model = ScriptedChatModel

    def reply(self, *chunks: str, delay: float = 0.0) -> Step:
        step = Step(chunks=list(chunks) or ["ok"], delay=delay)
        ScriptedChatModel.steps.append(step)
        return step

    def call_tool(self, name: str, arguments: str = "{}", *, call_id: str = "call_1", text: str = "") -> Step:
        step = Step(chunks=[text] if text else [], tool_calls=[ToolCall(id=call_id, name=name, arguments=arguments)])
        ScriptedChatModel.steps.append(step)
        return step

    def fail(self, *chunks: str, kind: str = "timeout", message: str = "The model provider timed out.") -> Step:
        step = Step(chunks=list(chunks), error=LLMError(message, kind=kind))
        ScriptedChatModel.steps.append(step)
        return step

    def judge(self, answer: str | dict[str, Any] | Exception | Callable[[Messages], str]) -> None:
        ScriptedChatModel.judge_answers.append(json.dumps(answer) if isinstance(answer, dict) else answer)

    def summary(self, answer: str | Exception) -> None:
        """The next summary the model writes (chat.turn.compaction), or the error it raises instead."""
        ScriptedChatModel.summary_answers.append(answer)

    @property
    def requests(self) -> list[dict[str, Any]]:
        return ScriptedChatModel.requests

    @property
    def summary_requests(self) -> list[dict[str, Any]]:
        return ScriptedChatModel.summary_requests

    @property
    def judge_requests(self) -> list[dict[str, Any]]:
        return ScriptedChatModel.judge_requests
