"""Reading a streamed chat completion: the server-sent events of its raw response, as JSON chunks.

The raw response is read rather than the SDK's typed chunk objects, which cost more CPU than the rest of
a streamed token's way to the page together (chat.llm.openai_adapter).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import suppress
from typing import Any

from chat.llm.base import LLMError
from chat.llm.errors import clean_provider_message, provider_error_text

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
        chunk = json.loads(payload)
        if not isinstance(chunk, dict):
            raise ValueError("a stream chunk that is not a JSON object")
        error = chunk.get("error")
        if error or event == "error":
            said = error.get("message") if isinstance(error, dict) else error
            detail = clean_provider_message(str(said or ""))
            raise LLMError(provider_error_text(detail), kind="status")
        event = ""
        yield chunk


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
