"""Reading a streamed chat completion: the server-sent events of its raw response, as JSON chunks.

The raw response is read rather than the SDK's typed chunk objects, which cost more CPU than the rest of
a streamed token's way to the page together (chat.llm.openai_adapter).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator, AsyncIterator, Iterator
from contextlib import suppress
from typing import Any

from django.conf import settings
from django.utils.translation import gettext as _

from chat.llm.base import LLMError, StreamChunk, ToolCalls, Usage
from chat.llm.deadlines import Deadline
from chat.llm.errors import clean_provider_message, provider_error_text
from chat.llm.toolcalls import ToolCallAssembler

DRAIN_SECONDS = 0.5  # see drain


async def sse_chunks(lines: AsyncIterator[str]) -> AsyncGenerator[dict[str, Any], None]:
    """The JSON objects of a server-sent event stream of chat completion chunks, up to `[DONE]`.

    An event that carries an `error` (some servers report a failure after the 200) raises LLMError with
    the provider's words; a `data` that is not JSON raises ValueError, read as a garbage answer."""
    data: list[str] = []
    event = ""
    async for line in lines:
        if line.startswith("data:"):
            data.append(line[5:].lstrip(" "))
            continue
        if line.startswith("event:"):
            event = line[6:].strip()
            continue
        if line or not data:  # a comment (": ping"), another field, or a blank line between events
            continue
        payload, data = "\n".join(data), []
        if payload.strip() == "[DONE]":
            return
        yield _chunk(payload, event)
        event = ""


def _chunk(payload: str, event: str) -> dict[str, Any]:
    chunk = json.loads(payload)
    if not isinstance(chunk, dict):
        raise ValueError("a stream chunk that is not a JSON object")
    error = chunk.get("error")
    if error or event == "error":
        said = error.get("message") if isinstance(error, dict) else error
        detail = clean_provider_message(str(said or ""))
        raise LLMError(provider_error_text(detail), kind="status")
    return chunk


async def drain(lines: AsyncIterator[str]) -> None:
    """Read what follows `[DONE]` (the end of the chunked body, normally nothing else), so the connection
    goes back to the client's pool: a response closed before its end closes its connection, and the
    next turn would wait for a new one (a TLS handshake, with a remote provider). A server that keeps
    the response open after `[DONE]` loses the connection after DRAIN_SECONDS, not the reply."""
    with suppress(Exception):
        async with asyncio.timeout(DRAIN_SECONDS):
            async for _ in lines:
                pass


def is_progress(chunk: dict[str, Any]) -> bool:
    """Whether a chunk (beyond its text) moves the reply on: a piece of a tool call, the finish, the usage.
    An empty delta does not: some servers send those as keep-alives."""
    if chunk.get("usage"):
        return True
    choice = (chunk.get("choices") or [{}])[0]
    if not isinstance(choice, dict):
        return False
    delta = choice.get("delta")
    return bool(choice.get("finish_reason") or (isinstance(delta, dict) and delta.get("tool_calls")))


class StreamRead:
    """What one streamed answer brought so far: its text goes on as it comes (`add`), the rest at the end
    (`ending`): the prompt size the server counted, the tool calls, and whether it finished at all."""

    def __init__(self, *, end: float) -> None:
        self.end = end  # when the whole step must be over (CHAT_TURN_TIMEOUT)
        self.calls = ToolCallAssembler()
        self.received = self.got_token = self.finished = False
        self.usage: int | None = None
        self.completion_tokens: int | None = None

    def add(self, chunk: dict[str, Any], deadline: Deadline) -> list[str]:
        """The text pieces of `chunk`. The deadline moves from the first token's to the step's at the first
        token (text or a tool call), and every piece of progress after it restarts the stall timer."""
        self.received = True
        self._counted(chunk.get("usage") or {})
        texts = self.calls.add_chunk(chunk)
        if texts or is_progress(chunk):
            if self.got_token:
                deadline.progress()
            elif texts or self.calls.started:
                self.got_token = True
                deadline.move(self.end)
                deadline.stall_after(float(settings.LLM_STALL_TIMEOUT))
        choices = chunk.get("choices") or [{}]
        self.finished = self.finished or bool(isinstance(choices[0], dict) and choices[0].get("finish_reason"))
        return texts

    def _counted(self, usage: dict[str, Any]) -> None:
        if usage.get("prompt_tokens"):
            self.usage = int(usage["prompt_tokens"])
            written = usage.get("completion_tokens")
            self.completion_tokens = int(written) if isinstance(written, int) else None

    def ending(self) -> Iterator[StreamChunk]:
        """What follows the text once the stream ended, or the LLMError that says what was wrong with it."""
        if not self.received:
            # llama.cpp answers a request longer than its context this way; the caller decides.
            raise LLMError(_("The model provider sent an empty answer."), kind="empty")
        if self.usage is not None:
            yield Usage(self.usage, self.completion_tokens)
        if not self.finished:
            # The connection ended without a finish_reason: the reply was cut off, not complete.
            raise LLMError(_("The model provider stopped before the reply was complete."), kind="bad_response")
        if self.calls.started:
            yield ToolCalls(self.calls.calls())
