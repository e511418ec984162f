"""The model provider interface. Everything else talks to a model only through `ChatModel`."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

Messages = list[dict[str, Any]]


class LLMError(Exception):
    """Any provider failure: connection, timeout, HTTP error, refusal or garbage. `kind` says which."""

    def __init__(self, message: str, *, kind: str = "error", context_window: int | None = None) -> None:
        super().__init__(message)
        # "timeout" | "connection" | "status" | "bad_response" | "error";
        # "context_length": the provider refused the request as longer than its context window;
        # "empty": a stream that ended without sending anything (llama.cpp's answer to an over-long stream).
        self.kind = kind
        self.context_window = context_window  # the window the provider stated in its refusal, if any


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: str  # JSON text exactly as the model produced it

    def as_message_part(self) -> dict[str, Any]:
        return {"id": self.id, "type": "function", "function": {"name": self.name, "arguments": self.arguments}}


@dataclass(frozen=True)
class TextDelta:
    text: str


@dataclass(frozen=True)
class ToolCalls:
    """Emitted once, at the end of a streamed step, when the model asked for tools."""

    calls: list[ToolCall] = field(default_factory=list)


@dataclass(frozen=True)
class Usage:
    """Emitted at most once, at the end of a streamed step, when the provider reported its prompt size."""

    prompt_tokens: int


StreamChunk = TextDelta | ToolCalls | Usage


class ChatModel(ABC):
    #: shown in the UI header, e.g. "gpt-4o-mini" or "Offline demo model"
    label: str = ""
    is_demo: bool = False

    @abstractmethod
    def stream(self, *, messages: Messages, tools: list[dict[str, Any]] | None = None) -> AsyncIterator[StreamChunk]:
        """Stream one step of the chat model: text deltas, then at most one ToolCalls."""

    @abstractmethod
    def complete_json(self, *, messages: Messages, model: str, temperature: float, timeout: float) -> str:
        """One blocking, non-streaming call answering a JSON object (`response_format=json_object`)."""

    def complete_text(self, *, messages: Messages, model: str, max_tokens: int, timeout: float) -> str:
        """One blocking, non-streaming call answering plain text (conversation summaries)."""
        raise LLMError("This model provider cannot write summaries.", kind="error")
