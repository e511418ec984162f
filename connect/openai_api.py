"""The OpenAI-compatible endpoint: `GET /v1/models` and `POST /v1/chat/completions` (SPEC §9).

Any OpenAI client pointed at `<memora>/v1` with a personal token (scope `chat`) as its API key talks to
Memora's configured provider with Memora's memory (connect/completions.py). Errors answer OpenAI's shape,
`{"error": {"message", "type", "code"}}`, so clients raise their usual exceptions.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from typing import Any, Literal

from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse
from django.views.decorators.csrf import csrf_exempt
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from accounts.models import ApiToken, Scope
from accounts.throttle import client_address
from chat.llm import LLMError, TextDelta, ToolCalls, catalogue
from chat.rejections import TurnRejected
from connect import completions
from connect.tokens import Refusal, client_name, token_authenticate

CONVERSATION_HEADER = "X-Memora-Conversation"
TEMPORARY_HEADER = "X-Memora-Temporary"
MEMORIES_HEADER = "X-Memora-Memories"
KEY_MAX = 200


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="allow")

    role: Literal["system", "developer", "user", "assistant", "tool", "function"]
    content: str | list[Any] | None = None


class CompletionRequest(BaseModel):
    """What Memora reads of a request; other fields (temperature, …) are accepted and not forwarded."""

    model_config = ConfigDict(extra="allow")

    model: str = Field(min_length=1, max_length=200)
    messages: list[ChatMessage] = Field(min_length=1, max_length=10_000)
    stream: bool = False
    tools: list[dict[str, Any]] | None = Field(None, max_length=128)
    max_tokens: int | None = Field(None, ge=1, le=1_000_000)
    max_completion_tokens: int | None = Field(None, ge=1, le=1_000_000)


def error(status: int, message: str, kind: str, code: str | None = None, **headers: str) -> JsonResponse:
    response = JsonResponse({"error": {"message": message, "type": kind, "code": code}}, status=status)
    for name, value in headers.items():
        response[name.replace("_", "-")] = value
    return response


def models() -> list[str]:
    """The model names clients may ask for: the chat's own (CHAT_MODELS, else the provider's list; the
    default first). May ask the provider: call it off the event loop."""
    return catalogue.chat_model_ids()


async def _token(request: HttpRequest) -> ApiToken | JsonResponse:
    found = await database_sync_to_async(token_authenticate)(
        header=request.headers.get("Authorization"),
        address=client_address(request),
        client=request.headers.get("User-Agent", ""),
    )
    if isinstance(found, Refusal):
        if found.status == 429:
            return error(429, "Too many failed token attempts from this address.", "rate_limit_error",
                         "rate_limit_exceeded", Retry_After=str(found.retry_after))  # fmt: skip
        return error(401, "Missing, invalid, revoked or expired API token.", "invalid_request_error", "invalid_api_key")
    if not found.allows(Scope.CHAT):
        return error(403, "This token's scopes do not allow chat (it needs the chat scope).", "permission_error",
                     "insufficient_scope")  # fmt: skip
    return found


@csrf_exempt
async def model_list(request: HttpRequest) -> HttpResponse:
    if request.method != "GET":
        return error(405, "Use GET.", "invalid_request_error", "method_not_allowed", Allow="GET")
    token = await _token(request)
    if isinstance(token, JsonResponse):
        return token
    names = await sync_to_async(models, thread_sensitive=False)()
    data = [{"id": name, "object": "model", "created": 0, "owned_by": "memora"} for name in names]
    return JsonResponse({"object": "list", "data": data})


def _parse(request: HttpRequest) -> CompletionRequest | JsonResponse:
    try:
        body = json.loads(request.body)
    except RequestDataTooBig:
        return error(413, "The request body is over the size limit.", "invalid_request_error", "request_too_large")
    except (ValueError, UnicodeDecodeError):
        return error(400, "The request body is not valid JSON.", "invalid_request_error", "invalid_json")
    try:
        parsed = CompletionRequest.model_validate(body)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        return error(400, f"Invalid request: {where}: {first['msg']}", "invalid_request_error", "invalid_value")
    if parsed.model not in models():
        return error(404, f"The model {parsed.model!r} does not exist; see /v1/models.", "invalid_request_error",
                     "model_not_found")  # fmt: skip
    return parsed


@csrf_exempt
async def chat_completions(request: HttpRequest) -> HttpResponse | StreamingHttpResponse:
    if request.method != "POST":
        return error(405, "Use POST.", "invalid_request_error", "method_not_allowed", Allow="POST")
    token = await _token(request)
    if isinstance(token, JsonResponse):
        return token
    parsed = await sync_to_async(_parse, thread_sensitive=False)(request)
    if isinstance(parsed, JsonResponse):
        return parsed
    key = request.headers.get(CONVERSATION_HEADER, "").strip()
    if len(key) > KEY_MAX:
        return error(400, f"{CONVERSATION_HEADER} is longer than {KEY_MAX} characters.", "invalid_request_error",
                     "invalid_value")  # fmt: skip
    messages = [m.model_dump(exclude_none=True) for m in parsed.messages]
    try:
        prepared = await database_sync_to_async(completions.prepare)(
            token=token,
            messages=messages,
            key=key or None,
            temporary=request.headers.get(TEMPORARY_HEADER, "").strip() == "1",
            address=client_address(request),
            client=client_name(request.headers.get("User-Agent")) or "OpenAI client",
        )
    except TurnRejected as exc:
        return _rejected(exc)
    return await _respond(prepared, parsed)


def _rejected(exc: TurnRejected) -> JsonResponse:
    extra = {"Retry_After": str(exc.retry_after)} if exc.retry_after is not None else {}
    kind = "rate_limit_error" if exc.status == 429 else "invalid_request_error"
    return error(exc.status, str(exc), kind, type(exc).__name__, **extra)


async def _respond(prepared: completions.Prepared, parsed: CompletionRequest) -> HttpResponse | StreamingHttpResponse:
    """The completion, streamed or whole, with the headers saying which memories it used and where it went."""
    headers = {MEMORIES_HEADER: ",".join(map(str, prepared.memory_ids))}
    if prepared.conversation_id:
        headers["X-Memora-Conversation-Id"] = prepared.conversation_id
    options = {
        "tools": parsed.tools,
        "max_tokens": parsed.max_completion_tokens or parsed.max_tokens,
        "model": parsed.model,
    }
    completion_id = f"chatcmpl-{prepared.turn.assistant_message.pk if prepared.turn else int(time.time() * 1000)}"
    if parsed.stream:
        events = _events(prepared, options, completion_id, parsed.model)
        response: HttpResponse | StreamingHttpResponse = StreamingHttpResponse(events, content_type="text/event-stream")
        response["Cache-Control"] = "no-cache"
    else:
        response = await _complete(prepared, options, completion_id, parsed.model)
    for name, value in headers.items():
        response[name] = value
    return response


async def _complete(prepared: completions.Prepared, options: dict[str, Any], cid: str, model: str) -> HttpResponse:
    reply = completions.Reply()
    try:
        async for _chunk in completions.run(prepared, reply=reply, **options):
            pass
    except LLMError as exc:
        await database_sync_to_async(completions.finish)(prepared, reply, error=exc)
        return error(502, f"The model provider failed: {exc}", "api_error", exc.code or exc.kind)
    except BaseException:
        await database_sync_to_async(completions.finish)(prepared, reply, interrupted=True)
        raise
    await database_sync_to_async(completions.finish)(prepared, reply)
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
    if reply.tool_calls:
        message["tool_calls"] = [call.as_message_part() for call in reply.tool_calls]
    body: dict[str, Any] = {
        "id": cid,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if reply.tool_calls else "stop"}],
    }
    return JsonResponse(body)


def _event(data: dict[str, Any]) -> bytes:
    return f"data: {json.dumps(data, ensure_ascii=False)}\n\n".encode()


async def _events(
    prepared: completions.Prepared, options: dict[str, Any], cid: str, model: str
) -> AsyncIterator[bytes]:
    created = int(time.time())

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return _event({"id": cid, "object": "chat.completion.chunk", "created": created, "model": model,
                       "choices": [choice]})  # fmt: skip

    reply = completions.Reply()
    yield chunk({"role": "assistant", "content": ""})
    try:
        async for piece in completions.run(prepared, reply=reply, **options):
            if isinstance(piece, TextDelta) and piece.text:
                yield chunk({"content": piece.text})
            elif isinstance(piece, ToolCalls):
                calls = [{"index": i, **call.as_message_part()} for i, call in enumerate(piece.calls)]
                yield chunk({"tool_calls": calls})
    except LLMError as exc:
        await database_sync_to_async(completions.finish)(prepared, reply, error=exc)
        yield _event({"error": {"message": f"The model provider failed: {exc}", "type": "api_error",
                                "code": exc.code or exc.kind}})  # fmt: skip
        return
    except BaseException:  # the client went away: the reply is kept as far as it got
        await database_sync_to_async(completions.finish)(prepared, reply, interrupted=True)
        raise
    await database_sync_to_async(completions.finish)(prepared, reply)
    yield chunk({}, "tool_calls" if reply.tool_calls else "stop")
    yield b"data: [DONE]\n\n"
