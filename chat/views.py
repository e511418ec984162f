from __future__ import annotations

from uuid import UUID

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from chat import selectors


@login_required
def index(request: HttpRequest) -> HttpResponse:
    conversations = selectors.conversation_list(user=request.user)  # type: ignore[arg-type]
    return render(request, "chat/index.html", {"conversations": conversations})


@login_required
def conversation_detail(request: HttpRequest, conversation_id: UUID) -> HttpResponse:
    conversation = selectors.conversation_get_for_user(user=request.user, conversation_id=conversation_id)  # type: ignore[arg-type]
    return render(
        request,
        "chat/conversation.html",
        {
            "conversation": conversation,
            "conversations": selectors.conversation_list(user=request.user),  # type: ignore[arg-type]
            "chat_messages": selectors.message_list(conversation=conversation),
        },
    )
