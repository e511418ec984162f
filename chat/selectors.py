"""Reads. Every query is scoped to the requesting user; missing and not-yours are the same 404."""

from __future__ import annotations

from uuid import UUID

from django.db.models import Q, QuerySet
from django.shortcuts import get_object_or_404

from accounts.models import User
from chat.models import Conversation, Message


def conversation_list(*, user: User) -> QuerySet[Conversation]:
    return Conversation.objects.filter(owner=user).order_by("-updated_at")


def conversation_sidebar(*, user: User, current: Conversation | None = None) -> QuerySet[Conversation]:
    """The sidebar's history: temporary chats are listed only while they are open."""
    keep = Q(temporary=False) | Q(pk=current.pk) if current is not None else Q(temporary=False)
    return conversation_list(user=user).filter(keep)


def conversation_get_for_user(*, user: User, conversation_id: UUID | str) -> Conversation:
    return get_object_or_404(conversation_list(user=user), pk=conversation_id)


def message_list(*, conversation: Conversation) -> QuerySet[Message]:
    return Message.objects.filter(conversation=conversation).order_by("created_at", "id")
