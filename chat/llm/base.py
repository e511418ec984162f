"""The model provider interface. Everything else talks to a model only through `ChatModel`."""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from django.utils.translation import gettext as _

Messages = list[dict[str, Any]]


class LLMError(Exception):
    """Any provider failure: connection, timeout, HTTP error, refusal or garbage. `kind` says which.

    The message is meant for people (the chat and the extraction run record): it keeps what the
    provider said, trimmed and without secrets. `status` is the HTTP status and `code` the provider's
    error code, when there were any.
    """

    def __init__(
        self,
        message: str,
        *,
        kind: str = "error",
        context_window: int | None = None,
        status: int | None = None,
        code: str = "",
    ) -> None:
        super().__init__(message)
        # "timeout" | "connection" | "status" | "bad_response" | "error";
        # "context_length": the provider refused the request as longer than its context window;
        # "empty": a stream that ended without sending anything (llama.cpp's answer to an over-long stream),
        #   or a reply with no text and no tool call;
        # "length": an answer cut off at `max_tokens` before it was complete.
        self.kind = kind
        self.context_window = context_window  # the window the provider stated in its refusal, if any
        # A streamed call given up while the server was writing its answer (closing it stopped the server).
        self.writing = False
        self.status = status
        self.code = code

    @property
    def too_long(self) -> bool:
        """The request did not fit the model's context window, or the answer hit `max_tokens`."""
        if self.kind in ("length", "context_length") or self.code == "context_length_exceeded":
            return True
        text = str(self).lower()
        return self.status in (400, 413, 422) and any(hint in text for hint in CONTEXT_HINTS)


# How servers word "the request is larger than the context window" (OpenAI, vLLM, llama.cpp, Ollama).
CONTEXT_HINTS = (
    "context length",
    "context_length",
    "context window",
    "context size",
    "maximum context",
    "too many tokens",
    "n_ctx",
    "prompt is too long",
    "input is too long",
)


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
    """Emitted at most once, at the end of a streamed step, when the provider reported its prompt size
    (and, when it did, the tokens it wrote: the usage records, chat.llm.metering)."""

    prompt_tokens: int
    completion_tokens: int | None = None


StreamChunk = TextDelta | ToolCalls | Usage


class ChatModel(ABC):
    #: shown in the UI header, e.g. "gpt-4o-mini" or "Offline demo model"
    label: str = ""
    is_demo: bool = False

    @property
    def tools_supported(self) -> bool:
        """False while the provider is known not to handle tools (the OpenAI adapter finds out, then
        offers them again later)."""
        return True

    def prepare(self, loop: asyncio.AbstractEventLoop) -> None:
        """Make now what this model's first stream on `loop` would otherwise make on it, holding up every
        turn waiting there (chat.llm.warm_up, at a server's start). Safe from any thread; nothing by default."""
        return None

    @abstractmethod
    def stream(
        self,
        *,
        messages: Messages,
        tools: list[dict[str, Any]] | None = None,
        max_tokens: int | None = None,
        model: str | None = None,
    ) -> AsyncIterator[StreamChunk]:
        """Stream one step of the chat model: text deltas, then at most one ToolCalls.

        `model` names the provider's model (the conversation's choice, chat.llm.catalogue); None: CHAT_MODEL.
        Each call is bounded: `max_tokens` (by default the reply's room, CHAT_REPLY_TOKENS, at most half
        of CHAT_CONTEXT_TOKENS), the first token within LLM_FIRST_TOKEN_TIMEOUT and the whole step
        within CHAT_TURN_TIMEOUT.
        """

    @abstractmethod
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
        """One blocking, non-streaming call answering a JSON object (`response_format=json_object`, or the
        answer's JSON `schema` where the provider takes it).

        `timeout` bounds the whole call (retries included); `max_tokens` bounds the answer, and an
        answer cut off by it raises LLMError(kind="length").
        """

    def complete_text(self, *, messages: Messages, model: str, max_tokens: int, timeout: float) -> str:
        """One blocking, non-streaming call answering plain text (conversation summaries)."""
        raise LLMError(_("This model provider cannot write summaries."), kind="error")


class Embedder(ABC):
    """A provider's `/v1/embeddings` (EMBEDDING_MODEL): text in, one vector per text out."""

    model: str = ""

    @abstractmethod
    def embed(self, *, texts: list[str], timeout: float, query: bool = False) -> list[list[float]]:
        """One blocking call within `timeout` seconds, never retried: the vectors, in the order of `texts`.
        `query`: the texts are messages to find memories for (models trained with prefixes embed them
        apart from the memories). Any failure raises LLMError."""


def single_system_message(messages: Messages) -> Messages:
    """`messages` with every system message merged into one, first: many chat templates (llama-2,
    Gemma, Mistral) keep only one system message and silently drop the others.

    The merged parts keep their order, separated by a blank line; nothing else moves.
    """
    systems = [m for m in messages if m.get("role") == "system"]
    if len(systems) <= 1 and (not systems or messages[0] is systems[0]):
        return messages
    text = "\n\n".join(str(m.get("content") or "").strip() for m in systems)
    return [{"role": "system", "content": text}, *(m for m in messages if m.get("role") != "system")]
