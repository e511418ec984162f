from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any
from uuid import UUID

from asgiref.sync import sync_to_async
from django.http import HttpRequest, StreamingHttpResponse
from ninja import Router
from ninja.responses import Status

from chat import selectors, services
from chat.agent import Turn, TurnEvent
from chat.models import Conversation, Message
from chat.schemas import (
    ConversationIn,
    ConversationOut,
    ConversationPatch,
    ErrorOut,
    MessageIn,
    MessageOut,
    TurnErrorOut,
    TurnOut,
)

router = Router(tags=["conversations"])


@router.get("", response=list[ConversationOut])
def conversation_list(request: HttpRequest) -> Any:
    return selectors.conversation_list(user=request.user)  # type: ignore[arg-type]


@router.post("", response={201: ConversationOut})
def conversation_create(request: HttpRequest, payload: ConversationIn) -> Any:
    return Status(201, services.conversation_create(user=request.user, title=payload.title, temporary=payload.temporary))  # type: ignore[arg-type]


@router.get("/{conversation_id}", response=ConversationOut)
def conversation_get(request: HttpRequest, conversation_id: UUID) -> Any:
    return selectors.conversation_get_for_user(user=request.user, conversation_id=conversation_id)  # type: ignore[arg-type]


@router.patch("/{conversation_id}", response=ConversationOut)
def conversation_patch(request: HttpRequest, conversation_id: UUID, payload: ConversationPatch) -> Any:
    conversation = selectors.conversation_get_for_user(user=request.user, conversation_id=conversation_id)  # type: ignore[arg-type]
    return services.conversation_rename(conversation=conversation, title=payload.title)


@router.delete("/{conversation_id}", response={204: None})
def conversation_delete(request: HttpRequest, conversation_id: UUID) -> Any:
    conversation = selectors.conversation_get_for_user(user=request.user, conversation_id=conversation_id)  # type: ignore[arg-type]
    services.conversation_delete(conversation=conversation)
    return Status(204, None)


@router.get("/{conversation_id}/messages", response=list[MessageOut])
def message_list(request: HttpRequest, conversation_id: UUID) -> Any:
    conversation = selectors.conversation_get_for_user(user=request.user, conversation_id=conversation_id)  # type: ignore[arg-type]
    return selectors.message_list(conversation=conversation)


def _message(message: Message | None) -> dict[str, Any]:
    return MessageOut.from_orm(message).model_dump(mode="json") if message else {}


def _sse(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode()


async def _sse_stream(turn: Turn) -> AsyncIterator[bytes]:
    async for event in turn.events():
        if event.type == "start":
            yield _sse("start", {"user_message": _message(event.user_message), "assistant_message": _message(event.assistant_message)})
        elif event.type == "delta":
            yield _sse("delta", {"text": event.text})
        elif event.type == "tool":
            yield _sse("tool", {"name": event.tool})
        elif event.type == "done":
            yield _sse("done", {"assistant_message": _message(event.assistant_message)})
        elif event.type == "error":
            yield _sse("error", {"detail": event.text, "assistant_message": _message(event.assistant_message)})


@router.post(
    "/{conversation_id}/messages",
    response={200: TurnOut, 400: ErrorOut, 409: ErrorOut, 429: ErrorOut, 502: TurnErrorOut},
    summary="Send a message and run one turn (JSON, or server-sent events with Accept: text/event-stream)",
)
async def message_send(request: HttpRequest, conversation_id: UUID, payload: MessageIn) -> Any:
    user = request.auth  # type: ignore[attr-defined]
    conversation: Conversation = await sync_to_async(selectors.conversation_get_for_user)(
        user=user, conversation_id=conversation_id
    )
    try:
        turn = await Turn.begin(user=user, conversation=conversation, content=payload.content)
    except services.TurnRejected as exc:
        return Status(exc.status, {"detail": str(exc)})
    if "text/event-stream" in request.headers.get("Accept", ""):
        response = StreamingHttpResponse(_sse_stream(turn), content_type="text/event-stream")
        response["Cache-Control"] = "no-cache"
        response["X-Accel-Buffering"] = "no"
        return response
    final: TurnEvent = await turn.run_to_end()
    body = {"user_message": final.user_message, "assistant_message": final.assistant_message}
    if final.type == "error":
        return Status(502, {"detail": final.text, **body})
    return Status(200, body)


