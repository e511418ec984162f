"""The model provider interface. Everything else talks to a model only through `ChatModel`."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

Messages = list[dict[str, Any]]


class LLMError(Exception):
    """Any provider failure: connection, timeout, HTTP error, refusal or garbage. `kind` says which."""

    def __init__(self, message: str, *, kind: str = "error") -> None:
        super().__init__(message)
        self.kind = kind  # "timeout" | "connection" | "status" | "bad_response" | "error"


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


StreamChunk = TextDelta | ToolCalls


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
