"""The OpenAI-compatible provider (OpenAI, DeepSeek, vLLM, Ollama, llama.cpp …) over the `openai` package.

This package is the only place that imports `openai`. Every provider failure becomes `LLMError`, whose
message keeps what the provider said (`errors` here; the wording in `chat.llm.errors`).

Servers people run themselves behave differently from OpenAI, and the adapter copes:
- every request carries `max_tokens`, so a model that never stops cannot hold a single-slot server;
- the deadlines are wall-clock: a server sending `: ping` comments every few seconds cannot keep a call
  alive past LLM_FIRST_TOKEN_TIMEOUT (first token), LLM_STALL_TIMEOUT (between two tokens) or
  CHAT_TURN_TIMEOUT (whole step);
- the SDK's own retries are off; a call is retried only when it failed before anything arrived and the
  server cannot still be working on it (connection refused, HTTP 429/5xx), never after a timeout
  (the retry policy: `chat.llm.retry`);
- a server that rejects `tools` (a 400 that mentions them) or answers an empty stream when they are sent
  is asked again without them, and not offered tools again for a while (see `tools_supported`): a server
  restarted with another chat format, or a passing fault, gets its tools back (the tools fallback policy:
  `chat.llm.tools_fallback`);
- judge calls and summaries stream too (`chat.llm.streamed_call`), so a call given up stops the server,
  and ask for no more tokens than the server has shown it writes within their time limit
  (`chat.llm.server_load.tokens_within`); a JSON answer cut off there counts as a timeout;
- a stream is read as raw server-sent events (`chat.llm.sse`);
- tool calls are assembled by `chat.llm.toolcalls`, which tolerates repeated names and missing ids.
"""

from __future__ import annotations

import asyncio
import logging
import time
import weakref
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any

import openai
from django.conf import settings
from django.utils.translation import gettext as _

from chat.llm import json_formats, metering, server_facts, server_load, streamed_call, tokens, written
from chat.llm.base import (
    ChatModel,
    Embedder,
    LLMError,
    Messages,
    StreamChunk,
    TextDelta,
    Usage,
    single_system_message,
)
from chat.llm.deadlines import Deadline
from chat.llm.errors import deadline_error
from chat.llm.openai_adapter.errors import as_llm_error
from chat.llm.retry import retry_wait
from chat.llm.sse import StreamRead, drain, sse_chunks
from chat.llm.tools_fallback import ToolsFallback

logger = logging.getLogger(__name__)


class OpenAIChatModel(ChatModel):
    def __init__(self) -> None:
        self._options: dict[str, Any] = {
            # Local servers (Ollama, vLLM, llama.cpp) accept any key; the SDK insists on one.
            "api_key": settings.OPENAI_API_KEY or "not-needed",
            "base_url": settings.OPENAI_BASE_URL or None,
            "timeout": settings.LLM_TIMEOUT,
            "max_retries": 0,  # retried here, only when that is safe (chat.llm.retry)
        }
        self.model = settings.CHAT_MODEL
        self.label = settings.CHAT_MODEL
        self.max_retries = int(settings.LLM_MAX_RETRIES)
        # Whether the provider handles tools: chat goes on without them for a while when it does not.
        self.tools = ToolsFallback()
        self._sync = openai.OpenAI(**self._options)
        # An async client's connection pool belongs to the event loop that opened it; a process can run
        # several loops (ASGI server, async_to_sync under WSGI, Celery), so there is one client per loop.
        self._async_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, openai.AsyncOpenAI] = (
            weakref.WeakKeyDictionary()
        )

    def _async_client(self, loop: asyncio.AbstractEventLoop | None = None) -> openai.AsyncOpenAI:
        loop = loop or asyncio.get_running_loop()
        client = self._async_clients.get(loop)
        if client is None:
            # The SDK's own HTTP client settings, plus the hook that tells a turn when its request is written.
            http_client = openai.DefaultAsyncHttpxClient(event_hooks={"request": [written.attach]})
            client = self._async_clients[loop] = openai.AsyncOpenAI(**self._options, http_client=http_client)
        return client

    def prepare(self, loop: asyncio.AbstractEventLoop) -> None:
        # The client (an SSL context with the system's certificates) and the SDK's chat resources, which it
        # imports on first use: tens of milliseconds of CPU each, otherwise spent on `loop` by the first turn.
        self._async_client(loop).chat.completions.with_streaming_response  # noqa: B018

    @property
    def tools_supported(self) -> bool:
        return self.tools.supported

    async def stream(
        self,
        *,
        messages: Messages,
        tools: list[dict[str, Any]] | None = None,
        max_tokens: int | None = None,
        model: str | None = None,
    ) -> AsyncIterator[StreamChunk]:
        request = self._stream_request(messages, tools, max_tokens, model)
        started = time.monotonic()
        first_by = started + float(settings.LLM_FIRST_TOKEN_TIMEOUT)
        end = started + float(settings.CHAT_TURN_TIMEOUT)
        tools_fallback = self.tools.request(request)
        tries = _Tries(first_by=first_by, max_retries=self.max_retries)
        while True:
            tries.received = False
            try:
                once = self._stream_once(tools_fallback.request, first_by=min(first_by, end), end=end)
                # aclosing: a consumer that stops early closes the provider's response at once.
                async with aclosing(self._answer(once, tools_fallback, tries)) as answer:
                    async for chunk in answer:
                        yield chunk
            except LLMError as exc:
                if tries.received:
                    raise
                wait = tries.wait_after(exc, tools_fallback)
                if wait:
                    await asyncio.sleep(wait)
                continue
            if tries.received or not tries.again_after_nothing(tools_fallback):
                return

    async def _answer(
        self, once: AsyncGenerator[StreamChunk, None], tools_fallback: Any, tries: _Tries
    ) -> AsyncGenerator[StreamChunk, None]:
        async with aclosing(once):
            async for chunk in once:
                if not tries.received and isinstance(chunk, TextDelta) and not chunk.text.strip():
                    continue  # blanks before the answer: an answer of nothing else is empty
                if not tries.received and not isinstance(chunk, Usage):
                    tries.received = True
                    tools_fallback.answered()
                yield chunk

    def _stream_request(
        self, messages: Messages, tools: list[dict[str, Any]] | None, max_tokens: int | None, model: str | None
    ) -> dict[str, Any]:
        request: dict[str, Any] = {
            "model": model or self.model,  # the conversation's (chat.llm.catalogue), else CHAT_MODEL
            "messages": single_system_message(messages),
            "stream": True,
            # The reply's room in the context budget (chat.turn.context_budget): at most half the window.
            "max_tokens": max_tokens or min(int(settings.CHAT_REPLY_TOKENS), int(settings.CHAT_CONTEXT_TOKENS) // 2),
            # The prompt size the provider counted calibrates our token estimate (chat.llm.tokens).
            "stream_options": {"include_usage": True},
        }
        if tools and self.tools_supported and settings.CHAT_TOOLS != "off":
            # Some servers (llama.cpp's function-calling formats) ignore tools unless tool_choice is sent.
            request["tools"] = tools
            request["tool_choice"] = "auto"
        return request

    async def _stream_once(
        self, request: dict[str, Any], *, first_by: float, end: float
    ) -> AsyncGenerator[StreamChunk, None]:
        read = StreamRead(end=end)
        stalled = False
        try:
            # The raw response: the SDK's typed chunk objects cost more CPU than the rest of a streamed
            # token's way to the page together; the chunks are read as JSON (`sse_chunks`) instead.
            completions = self._async_client().chat.completions.with_streaming_response
            # The SDK checks and transforms typed parameters by walking their type annotations, on the way
            # to every first token. Our request is already in the wire format: all but the model goes as
            # `extra_body`, which is sent as it is.
            body = {k: v for k, v in request.items() if k not in ("model", "stream")}
            async with asyncio.timeout(max(0.0, first_by - time.monotonic())):
                opened = completions.create(model=request["model"], messages=[], stream=True, extra_body=body)
                response = await opened.__aenter__()
            # Closed however this ends, so a consumer that stops early (a cancelled turn) closes it at once.
            # Both deadlines are wall-clock: bytes that are not chunks (keep-alive comments) do not extend
            # them. One timer for the whole stream, moved once, at the first token.
            deadline = Deadline(first_by)
            try:
                lines = response.iter_lines()
                chunks = aiter(sse_chunks(lines))
                while True:
                    try:
                        chunk = await deadline.wait(anext(chunks))
                    except StopAsyncIteration:
                        await drain(lines)
                        break
                    for text in read.add(chunk, deadline):
                        yield TextDelta(text)
            finally:
                deadline.cancel()
                stalled = deadline.stalled
                await opened.__aexit__(None, None, None)
        except TimeoutError as exc:
            raise deadline_error(read.got_token, stalled=stalled) from exc
        except Exception as exc:  # CancelledError and GeneratorExit are not Exceptions: they pass through
            raise as_llm_error(exc) from exc
        for rest in read.ending():
            yield rest
        if read.usage is None:  # a server that sends no usage in streams: its tokenizer calibrates instead
            # In a thread, awaited: the request keeps its place in the provider queue until this is done.
            await asyncio.to_thread(
                server_facts.calibrate_by_tokenizing, model=str(request.get("model")), messages=request["messages"]
            )

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
        request: dict[str, Any] = {
            "model": model,
            "messages": single_system_message(messages),
            "temperature": temperature,
            "stream": False,
        }
        if max_tokens:
            request["max_tokens"] = server_load.tokens_within(model=model, max_tokens=max_tokens, seconds=timeout)
        # The schema where the server takes it, JSON mode otherwise (chat.llm.json_formats).
        started = time.monotonic()
        end = started + timeout
        key = f"{self._options['base_url']}|{model}"
        tried = json_formats.formats(schema)
        index = min(json_formats.first_choice(key), len(tried) - 1) if schema else 0
        while True:
            try:
                answer = self._complete({**request, "response_format": tried[index]}, timeout=timeout, end=end)
            except LLMError as exc:
                if _another_format(exc, index, tried, end):
                    index += 1
                    continue
                # Cut at the tokens the shown speed allowed: a timeout if, at this call's own pace, the
                # whole `max_tokens` would not have come in time; else the answer was just too long.
                capped = request.get("max_tokens") or 0
                pace = (time.monotonic() - started) / capped if capped else 0.0
                if exc.kind == "length" and max_tokens and 0 < capped < max_tokens and pace * max_tokens > timeout:
                    raise server_load.too_slow(model, timeout) from exc
                raise
            if schema:
                json_formats.remember(key, index)
            return answer

    def complete_text(self, *, messages: Messages, model: str, max_tokens: int, timeout: float) -> str:
        request: dict[str, Any] = {
            "model": model,
            "messages": single_system_message(messages),
            "max_tokens": server_load.tokens_within(model=model, max_tokens=max_tokens, seconds=timeout),
            # Streamed like a judge call: given up at its deadline, it stops the server (chat.llm.streamed_call).
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        return self._complete(request, timeout=timeout)

    def _complete(self, request: dict[str, Any], *, timeout: float, end: float | None = None) -> str:
        """One non-streaming call within `timeout` seconds in all (until `end`, a time.monotonic(), when
        given), retried only when that is safe."""
        end = time.monotonic() + timeout if end is None else end
        attempt = 0
        while True:
            try:
                return self._complete_once(request, end=end, timeout=timeout)
            except LLMError as exc:
                wait = retry_wait(exc, attempt=attempt, max_retries=self.max_retries, deadline=end)
                if wait is None:
                    raise
                attempt += 1
                time.sleep(wait)

    def _complete_once(self, request: dict[str, Any], *, end: float, timeout: float) -> str:
        try:
            # A judge call is streamed (chat.llm.streamed_call): given up at its deadline, it closes the
            # stream, which stops the server. Each read waits at most for the time that is left.
            if "response_format" in request:
                request = {**request, "stream": True, "stream_options": {"include_usage": True}}
            read = streamed_call.read_answer if request.get("stream") else streamed_call.read_whole
            with self._sync.chat.completions.with_streaming_response.create(
                **request, timeout=max(0.01, end - time.monotonic())
            ) as response:
                content, finish = read(response, request, end=end, timeout=timeout)
        except LLMError:
            raise
        except openai.APITimeoutError as exc:
            raise LLMError(
                _("The model provider did not answer within %(seconds)s s.") % {"seconds": f"{timeout:g}"},
                kind="timeout",
            ) from exc
        except Exception as exc:
            raise as_llm_error(exc) from exc
        if finish == "length" and "response_format" in request:  # a JSON answer cut short is unusable
            raise LLMError(
                f"The answer was cut off at max_tokens ({request.get('max_tokens')}) before it was complete.",
                kind="length",
            )
        if not isinstance(content, str) or not content.strip():
            raise LLMError(_("The model provider returned no content."), kind="bad_response")
        return content


@dataclass
class _Tries:
    """The tries of one streamed request: how many retries so far, and whether an empty answer was asked
    again (once, without tools)."""

    first_by: float  # when the first token is due
    max_retries: int
    attempt: int = 0
    asked_again: bool = False
    received: bool = False  # whether the current try has answered anything

    def wait_after(self, exc: LLMError, tools_fallback: Any) -> float:
        """Seconds before the next try after `exc`, which came before any answer; raises `exc` when there
        is no next try."""
        if tools_fallback.drop_tools(exc) or (exc.kind == "empty" and self._ask_again()):
            return 0.0
        wait = retry_wait(exc, attempt=self.attempt, max_retries=self.max_retries, deadline=self.first_by)
        if wait is None:
            tools_fallback.failed(exc)
            raise exc
        self.attempt += 1
        return wait

    def again_after_nothing(self, tools_fallback: Any) -> bool:
        """Whether to try again after a stream that ended without an answer."""
        if tools_fallback.drop_tools(None):
            return True
        # A small model may end its answer at once (an end-of-turn token sampled first); asked again, it
        # answers. Only once: an empty answer twice is the turn's error, with Retry.
        if self._ask_again():
            return True
        tools_fallback.failed(None)
        return False

    def _ask_again(self) -> bool:
        if self.asked_again or time.monotonic() >= self.first_by:
            return False
        self.asked_again = True
        return True


def _another_format(exc: LLMError, index: int, tried: list[Any], end: float) -> bool:
    """Whether to ask again in the next JSON format: the server refused this one, and there is time."""
    return index + 1 < len(tried) and json_formats.refused(exc) and time.monotonic() < end


class OpenAIEmbedder(Embedder):
    """`/v1/embeddings` of EMBEDDING_BASE_URL (default: the chat provider's), for memory recall."""

    def __init__(self) -> None:
        self.model = settings.EMBEDDING_MODEL
        self._client = openai.OpenAI(
            api_key=settings.EMBEDDING_API_KEY or settings.OPENAI_API_KEY or "not-needed",
            base_url=settings.EMBEDDING_BASE_URL or settings.OPENAI_BASE_URL or None,
            max_retries=0,  # a turn waits for at most one short attempt, then ranks without it
        )

    def embed(self, *, texts: list[str], timeout: float, query: bool = False) -> list[list[float]]:
        try:
            answer = self._client.embeddings.create(
                model=self.model, input=texts, encoding_format="float", timeout=timeout
            )
            vectors = [list(item.embedding) for item in sorted(answer.data, key=lambda item: item.index)]
        except Exception as exc:
            raise as_llm_error(exc) from exc
        reported = getattr(answer.usage, "prompt_tokens", None) if getattr(answer, "usage", None) else None
        metering.note(
            model=self.model,
            prompt_tokens=reported if isinstance(reported, int) else None,
            completion_tokens=0,
            estimate=lambda: (sum(tokens.estimate_text(text) for text in texts), 0),
        )
        if len(vectors) != len(texts):
            raise LLMError("The embeddings answer has the wrong number of vectors.", kind="bad_response")
        return vectors
