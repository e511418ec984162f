"""A blocking JSON call read as a stream, so that giving up on it stops the server.

A non-streamed request cannot be taken back: llama-cpp-python goes on with it to its `max_tokens` after
the client left (a judge call given up at its deadline kept a single-slot server busy for six minutes).
A streamed one is: llama.cpp and llama-cpp-python check for a closed connection at every token. So judge
calls stream, and the answer is assembled here; a call given up while tokens were arriving says so
(`LLMError.writing`), and its place in the provider queue is released within moments instead of after
the time its `max_tokens` would take (chat.model_queue, chat.llm.server_load).

The server's usage, when it sends one in the stream, calibrates token estimates as a non-streamed
call's does; the writing speed (tokens, or chunks where no usage comes, per second after the first)
sizes the hold after an abandoned call.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from django.utils.translation import gettext as _

from chat.llm import metering, server_facts, server_load
from chat.llm.base import LLMError


def _events(lines: Iterator[str]) -> Iterator[dict[str, Any]]:
    """The JSON chunks of a server-sent event stream, up to `[DONE]` (comments and blank lines skipped)."""
    for line in lines:
        if not line.startswith("data:"):
            continue
        payload = line[5:].strip()
        if payload == "[DONE]":
            return
        chunk = json.loads(payload)
        if isinstance(chunk, dict) and chunk.get("error"):
            said = chunk["error"].get("message") if isinstance(chunk["error"], dict) else chunk["error"]
            raise LLMError(_("The model provider reported an error: %(said)s") % {"said": said}, kind="status")
        if isinstance(chunk, dict):
            yield chunk


def _late(timeout: float, *, writing: bool) -> LLMError:
    error = LLMError(
        _("The model provider did not answer within %(seconds)s s.") % {"seconds": f"{timeout:g}"}, kind="timeout"
    )
    error.writing = writing  # closing the stream stops a server that was writing
    return error


def _observe_prompt(request: dict[str, Any], usage: dict[str, Any]) -> None:
    if isinstance(usage.get("prompt_tokens"), int):  # the server's own count calibrates estimates
        model = str(request.get("model"))
        server_facts.observe(model=model, reported=usage["prompt_tokens"], messages=request["messages"])


@dataclass
class _Answer:
    """A streamed answer as read so far."""

    parts: list[str] = field(default_factory=list)
    finish: str | None = None
    usage: dict[str, Any] = field(default_factory=dict)
    first_at: float | None = None  # when its first text came

    def add(self, chunk: dict[str, Any]) -> None:
        self.usage = chunk.get("usage") or self.usage
        for choice in chunk.get("choices") or []:
            text = (choice.get("delta") or {}).get("content")
            if text:
                self.parts.append(text)
                self.first_at = self.first_at or time.monotonic()
            self.finish = choice.get("finish_reason") or self.finish


def read_answer(response: Any, request: dict[str, Any], *, end: float, timeout: float) -> tuple[str, str | None]:
    """(content, finish_reason) of a streamed completion within the deadline `end` (a time.monotonic())."""
    answer = _Answer()
    for chunk in _events(response.iter_lines()):
        if time.monotonic() > end:
            raise _late(timeout, writing=bool(answer.parts))
        answer.add(chunk)
    if time.monotonic() > end:
        raise _late(timeout, writing=bool(answer.parts))
    usage = answer.usage
    _observe_prompt(request, usage)
    if answer.first_at is not None:
        reported = usage.get("completion_tokens")
        written = reported if isinstance(reported, int) else len(answer.parts)
        model = str(request.get("model"))
        server_load.observe_speed(model=model, completion_tokens=written, seconds=time.monotonic() - answer.first_at)
    _noted(request, usage, "".join(answer.parts))
    return "".join(answer.parts), answer.finish


def read_whole(response: Any, request: dict[str, Any], *, end: float, timeout: float) -> tuple[Any, Any]:
    """(content, finish_reason) of a non-streamed completion, read as bytes so that the deadline holds
    even for a server that trickles whitespace or keep-alive bytes."""
    started = time.monotonic()
    body = bytearray()
    for part in response.iter_bytes():
        body += part
        if time.monotonic() > end:
            raise _late(timeout, writing=False)
    data = json.loads(bytes(body))
    usage = (data.get("usage") or {}) if isinstance(data, dict) else {}
    model = str(request.get("model"))
    _observe_prompt(request, usage)
    if isinstance(usage.get("completion_tokens"), int):  # the prompt's reading included: on the slow side
        server_load.observe_speed(
            model=model, completion_tokens=usage["completion_tokens"], seconds=time.monotonic() - started
        )
    choice = data["choices"][0] if data.get("choices") else {}
    content = (choice.get("message") or {}).get("content")
    _noted(request, usage, content if isinstance(content, str) else "")
    return content, choice.get("finish_reason")


def _noted(request: dict[str, Any], usage: dict[str, Any], answer: str) -> None:
    """The call's counts for the usage records (chat.llm.metering): the server's, or the estimate. Noted
    before the answer is judged: a reply cut off or malformed was paid for all the same."""
    model = str(request.get("model"))
    prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
    metering.note(
        model=model,
        prompt_tokens=prompt if isinstance(prompt, int) else None,
        completion_tokens=completion if isinstance(completion, int) else None,
        estimate=lambda: metering.estimate_call(model=model, messages=request["messages"], answer=answer),
    )
