from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any
from uuid import UUID

from django.conf import settings
from django.db import transaction
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404
from ninja import Query, Router
from ninja.responses import NinjaJSONEncoder, Status

from accounts.auth import streaming_auth
from accounts.http import AuthedHttpRequest
from accounts.throttle import client_address
from chat import extensions, selectors, services, versions
from chat.export import markdown_response
from chat.models import Message, Project
from chat.negotiation import wants_event_stream
from chat.schemas import (
    TURN_EVENT_STREAM,
    ChatModelList,
    ConversationDetailOut,
    ConversationIn,
    ConversationOut,
    ConversationPage,
    ConversationPatch,
    ExportFormat,
    MessageIn,
    MessageOut,
    TurnErrorOut,
    TurnOut,
    VersionIn,
)
from chat.turn import runner
from chat.turn.events import TurnEvent
from core.api_errors import AUTH_ERRORS, BODY_ERRORS, NOT_FOUND, PARAM_ERRORS, WRITE_ERRORS, ErrorOut

router = Router(tags=["conversations"])
models_router = Router(tags=["conversations"])


@router.get(
    "",
    response={200: list[ConversationOut], **AUTH_ERRORS, **NOT_FOUND, **PARAM_ERRORS},
    summary="List conversations, newest first (all of them, or a page with limit and offset)",
    description="With `limit` (1–100) and `offset` one page is returned; `X-Total-Count` gives the total. "
    "`project` keeps one project's conversations (another user's project answers 404), `none` those in none.",
    openapi_extra={
        "responses": {
            200: {
                "headers": {
                    "X-Total-Count": {
                        "description": "How many conversations there are in all (sent when a page was asked for).",
                        "schema": {"type": "integer", "minimum": 0},
                    }
                }
            }
        }
    },
)
def conversation_list(request: AuthedHttpRequest, response: HttpResponse, page: Query[ConversationPage]) -> Any:
    conversations = selectors.conversation_list(user=request.user).order_by("-updated_at", "-id")
    if page.project == "none":
        conversations = conversations.filter(project__isnull=True)
    elif page.project is not None:
        project = selectors.project_get_for_user(user=request.user, project_id=int(page.project))
        conversations = conversations.filter(project=project)
    if page.limit is None and page.offset == 0:
        return conversations  # the original, unpaginated answer
    response["X-Total-Count"] = str(conversations.count())
    end = page.offset + (page.limit or settings.NINJA_PAGINATION_PER_PAGE)
    return conversations[page.offset : end]


def _project(request: AuthedHttpRequest, project_id: int | None) -> Project | None:
    if project_id is None:
        return None
    return selectors.project_get_for_user(user=request.user, project_id=project_id)


@router.post(
    "",
    response={201: ConversationOut, **WRITE_ERRORS, **BODY_ERRORS, **NOT_FOUND},
    description="`model` must be one of `GET /api/models` (422 otherwise, listing them); without it, the default. "
    "`project_id`: a project of yours it belongs to (another user's answers 404).",
)
def conversation_create(request: AuthedHttpRequest, payload: ConversationIn) -> Any:
    conversation = services.conversation_create(
        user=request.user,
        title=payload.title,
        temporary=payload.temporary,
        model=payload.model,
        project=_project(request, payload.project_id),
    )
    return Status(201, conversation)


@router.get("/{conversation_id}", response={200: ConversationDetailOut, **AUTH_ERRORS, **NOT_FOUND, **PARAM_ERRORS})
def conversation_get(request: AuthedHttpRequest, conversation_id: UUID) -> Any:
    conversation = selectors.conversation_get_for_user(user=request.user, conversation_id=conversation_id)
    size = selectors.conversation_context_size(conversation=conversation)
    conversation.context_tokens, conversation.compactions = size.tokens, size.compactions  # type: ignore[attr-defined]
    return conversation


@router.patch(
    "/{conversation_id}",
    response={200: ConversationOut, **WRITE_ERRORS, **NOT_FOUND, **BODY_ERRORS},
    description="Any of `title`, `model` (one of `GET /api/models`, else 422 listing them; used from the next "
    "turn on, a running reply keeps its model), `pinned`, and `project_id` (a project of yours, another user's "
    "answers 404; null: out of any).",
)
def conversation_patch(request: AuthedHttpRequest, conversation_id: UUID, payload: ConversationPatch) -> Any:
    conversation = selectors.conversation_get_for_user(user=request.user, conversation_id=conversation_id)
    with transaction.atomic():  # all of it or nothing
        if "project_id" in payload.model_fields_set:
            project = _project(request, payload.project_id)
            conversation = services.conversation_move(conversation=conversation, project=project)
        return services.conversation_update(
            conversation=conversation, title=payload.title, model=payload.model, pinned=payload.pinned
        )


@router.delete(
    "/{conversation_id}",
    response={204: None, **WRITE_ERRORS, **NOT_FOUND, **PARAM_ERRORS},
    description="Deletes the conversation with its messages, markers and agent state, and every copy of its "
    "messages kept elsewhere: their lines in extraction-run records, the memories' links to them (the memories "
    "stay), other conversations' tool results that quoted them, the search index.",
)
def conversation_delete(request: AuthedHttpRequest, conversation_id: UUID) -> Any:
    conversation = selectors.conversation_get_for_user(user=request.user, conversation_id=conversation_id)
    services.conversation_delete(conversation=conversation)
    return Status(204, None)


@models_router.get(
    "",
    response={200: ChatModelList, **AUTH_ERRORS},
    summary="The chat models a conversation may use, the default first",
    description="CHAT_MODELS, or the provider's own list (its chat models, looked at every ten minutes at most).",
)
def chat_model_list(request: HttpRequest) -> Any:
    return {"models": selectors.chat_model_choices()}


@router.get(
    "/{conversation_id}/export",
    response={200: str, **AUTH_ERRORS, **NOT_FOUND, **PARAM_ERRORS},
    summary="The conversation as a Markdown file",
    description="Its messages with who wrote them and when, and the memories each reply used. `format`: "
    "`markdown` (the only one).",
    openapi_extra={"responses": {200: {"content": {"text/markdown": {"schema": {"type": "string"}}}}}},
)
def conversation_export(request: AuthedHttpRequest, conversation_id: UUID, format: Query[ExportFormat]) -> Any:
    conversation = selectors.conversation_get_for_user(user=request.user, conversation_id=conversation_id)
    return markdown_response(conversation)


@router.get(
    "/{conversation_id}/messages",
    response={200: list[MessageOut], **AUTH_ERRORS, **NOT_FOUND, **PARAM_ERRORS},
)
def message_list(request: AuthedHttpRequest, conversation_id: UUID) -> Any:
    conversation = selectors.conversation_get_for_user(user=request.user, conversation_id=conversation_id)
    return extensions.annotate_messages(list(selectors.message_list(conversation=conversation)))


def _message(message: Message | None) -> dict[str, Any]:
    return MessageOut.model_validate(message).model_dump() if message else {}


def _sse(event: str, data: dict[str, Any]) -> bytes:
    # The JSON routes' encoder, so both modes format ids and timestamps the same way.
    return f"event: {event}\ndata: {json.dumps(data, cls=NinjaJSONEncoder, ensure_ascii=False)}\n\n".encode()


async def _sse_stream(events: asyncio.Queue[TurnEvent | None]) -> AsyncIterator[bytes]:
    # The turn runs on its own (chat/turn/runner.py): a client that goes away only stops listening, and the
    # reply is still completed and saved. Only Stop (POST .../stop, or a page's Stop) stops it.
    while (event := await events.get()) is not None:
        # Under load several events wait by the time this runs: one write (and one ASGI message) for all.
        chunk = [_sse_for(event)]
        while not events.empty() and (event := events.get_nowait()) is not None:
            chunk.append(_sse_for(event))
        yield b"".join(chunk)
        if event is None:
            return


def _sse_for(event: TurnEvent) -> bytes:
    if event.type == "start":
        user_message, assistant_message = _message(event.user_message), _message(event.assistant_message)
        return _sse("start", {"user_message": user_message, "assistant_message": assistant_message})
    if event.type == "delta":
        return _sse("delta", {"text": event.text})
    if event.type == "tool":
        return _sse("tool", {"name": event.tool})
    if event.type == "waiting":
        return _sse("waiting", {"ahead": int(event.text or 0)})
    if event.type == "done":
        user_message, assistant_message = _message(event.user_message), _message(event.assistant_message)
        return _sse("done", {"user_message": user_message, "assistant_message": assistant_message})
    return _sse("error", {"detail": event.text, "assistant_message": _message(event.assistant_message)})


# What a turn answers (a message sent, or a reply written again): JSON, or with Accept: text/event-stream
# server-sent events. 409: another reply is being written (or, for a retry, nothing to retry); 429: too many
# turns a minute (with Retry-After) or too many replies at once; 502: the provider failed.
_TURN_STATUSES: dict[int, Any] = {
    200: TurnOut, **WRITE_ERRORS, **NOT_FOUND, **PARAM_ERRORS, 409: ErrorOut, 413: TurnErrorOut, 502: TurnErrorOut,
}  # fmt: skip
_TURN_RESPONSES: dict[str, Any] = {
    "responses": {
        200: {
            "description": "The turn's messages as saved (JSON), or the reply as it is written (server-sent events).",
            "content": {
                "application/json": {"schema": {"$ref": "#/components/schemas/TurnOut"}},
                "text/event-stream": {"schema": TURN_EVENT_STREAM},
            },
        }
    }
}


@router.post(
    "/{conversation_id}/messages",
    response=BODY_ERRORS | _TURN_STATUSES,  # the turn's own 413 (TurnErrorOut) wins
    auth=streaming_auth,
    summary="Send a message and run one turn (JSON, or server-sent events with Accept: text/event-stream)",
    openapi_extra=_TURN_RESPONSES,
    description=(
        "With `Accept: text/event-stream` the reply streams as server-sent events: `start` (the saved user "
        'message and the empty assistant message), `waiting` (`{"ahead"}`, while the request waits its turn in '
        'the provider\'s queue, LLM_MAX_CONCURRENCY; 0 once it is sent), `delta` (`{"text"}`, many), `tool` '
        '(`{"name"}`, when a tool runs), then `done` (both messages as saved) or `error` '
        '(`{"detail", "assistant_message"}`; also '
        "when the reply was stopped: its status is then `interrupted`). The reply belongs to the conversation, "
        "not to the request: a client that disconnects stops listening, and the reply is still completed and "
        "saved; `POST /api/conversations/{id}/stop` stops it. A message too long for the model's context window "
        "by itself answers 413 with the reason in `detail`."
    ),
)
async def message_send(request: AuthedHttpRequest, conversation_id: UUID, payload: MessageIn) -> Any:
    return await _run_turn(request, conversation_id, content=payload.content)


@router.post(
    "/{conversation_id}/retry",
    response=_TURN_STATUSES,
    auth=streaming_auth,
    summary="Write the failed (or stopped) latest reply again, in place",
    openapi_extra=_TURN_RESPONSES,
    description=(
        "Runs the turn again for the same user message, writing the reply into the same assistant message "
        "(its id is kept; nothing is added to the conversation). Only the conversation's latest message can be "
        "retried, when it is a reply with status `error` or `interrupted`; otherwise 409. Answers exactly as "
        "`POST /api/conversations/{id}/messages` (JSON, or server-sent events with `Accept: text/event-stream`)."
    ),
)
async def reply_retry(request: AuthedHttpRequest, conversation_id: UUID) -> Any:
    return await _run_turn(request, conversation_id, retry=True)


@router.post(
    "/{conversation_id}/regenerate",
    response=_TURN_STATUSES,
    auth=streaming_auth,
    summary="Write the latest reply again, whatever its status, keeping the version it showed",
    openapi_extra=_TURN_RESPONSES,
    description=(
        "Like `POST /api/conversations/{id}/retry`, for the conversation's latest reply whatever its status "
        "(409 when the latest message is not a reply, or one is being written). The version it showed is kept "
        "in the message's `alternatives`; `POST /api/conversations/{id}/messages/{message_id}/version` shows "
        "another. The agent state holds only the shown version: the next turn continues from it."
    ),
)
async def reply_regenerate(request: AuthedHttpRequest, conversation_id: UUID) -> Any:
    return await _run_turn(request, conversation_id, retry=True, regenerate=True)


@router.post(
    "/{conversation_id}/messages/{message_id}/version",
    response={200: MessageOut, **WRITE_ERRORS, **NOT_FOUND, **BODY_ERRORS, 409: ErrorOut},
    summary="Show another version of the latest reply",
    description=(
        "The chosen version (one of its `alternatives`) becomes the reply's content and its part of the agent "
        "state, so the next turn continues from it. 409 when the message is not the conversation's latest "
        "reply, has no such version, or a reply is being written."
    ),
)
def reply_version(request: AuthedHttpRequest, conversation_id: UUID, message_id: int, payload: VersionIn) -> Any:
    conversation = selectors.conversation_get_for_user(user=request.user, conversation_id=conversation_id)
    message = get_object_or_404(selectors.message_list(conversation=conversation), pk=message_id)
    reply = versions.reply_version_show(reply=message, version=payload.version)
    return extensions.annotate_messages([reply])[0]


@router.patch(
    "/{conversation_id}/messages/{message_id}",
    response=BODY_ERRORS | _TURN_STATUSES,
    auth=streaming_auth,
    summary="Edit the last message you sent and run the turn again",
    openapi_extra=_TURN_RESPONSES,
    description=(
        "Like deleting the conversation's latest user message (with the replies after it) and sending the new "
        "words: the old words leave every copy (agent state, search index, extraction-run records), a memory "
        "whose only source was the old message moves to History (`source_edited`, restorable), and the new "
        "message is pending for memory like any other. 409 for any other message, or while a reply is being "
        "written. Answers exactly as `POST /api/conversations/{id}/messages` (JSON, or server-sent events)."
    ),
)
async def message_edit(request: AuthedHttpRequest, conversation_id: UUID, message_id: int, payload: MessageIn) -> Any:
    return await _run_turn(request, conversation_id, content=payload.content, replace=message_id)


async def _run_turn(
    request: AuthedHttpRequest,
    conversation_id: UUID,
    *,
    content: str = "",
    retry: bool = False,
    regenerate: bool = False,
    replace: int | None = None,
) -> Any:
    # The conversation is looked up (404 unless it is the user's) with the turn's start, in its one trip to
    # the database. A services.TurnRejected is answered by config/api.py with its status (and Retry-After).
    origin = services.TurnOrigin(address=client_address(request))
    running = await runner.start_turn(
        user=request.user,
        conversation=conversation_id,
        content=content,
        retry=retry,
        origin=origin,
        regenerate=regenerate,
        replace=replace,
    )
    if wants_event_stream(request.headers.get("Accept")):
        response = StreamingHttpResponse(_sse_stream(running.listen()), content_type="text/event-stream")
        response["Cache-Control"] = "no-cache"
        response["X-Accel-Buffering"] = "no"
        return response
    final: TurnEvent = await running.result()
    body = {"user_message": final.user_message, "assistant_message": final.assistant_message}
    stopped = final.assistant_message is not None and final.assistant_message.status == Message.Status.INTERRUPTED
    if final.type == "error" and final.kind == "too_long":  # the message alone does not fit the chat window
        return Status(413, {"detail": final.text, **body})
    if final.type == "error" and not stopped:
        return Status(502, {"detail": final.text, **body})
    return Status(200, body)


@router.post(
    "/{conversation_id}/stop",
    response={204: None, **WRITE_ERRORS, **NOT_FOUND, **PARAM_ERRORS},
    summary="Stop the reply being written in this conversation",
    description=(
        "Stops the running turn wherever it runs (any tab, any server process); the reply is saved as "
        "`interrupted` with the text written so far. 204 also when no reply is running."
    ),
)
def conversation_stop(request: AuthedHttpRequest, conversation_id: UUID) -> Any:
    conversation = selectors.conversation_get_for_user(user=request.user, conversation_id=conversation_id)
    runner.stop(conversation=conversation)
    return Status(204, None)
