"""Chat's part of an account's data (accounts.data, registered in chat/apps.py): the export's
"conversations" section, the account eraser, and the conversation eraser for copies of a deleted
conversation's messages that other conversations keep (tool results that quoted them)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from django.http import HttpRequest

from accounts.models import User
from chat import extensions
from chat.models import AgentState, Conversation, Message, Project
from chat.services import conversations_erase
from chat.sessions import user_sockets_close
from chat.views import sidebar_context

DELETED_MESSAGE = "(a message that was since deleted)"
# A shorter message ("ok", "yes") is not searched for in other conversations' tool results.
QUOTE_MIN_CHARS = 12
EXPORT_CHUNK = 2000


def _messages(conversation_id: Any) -> Iterator[dict[str, Any]]:
    rows = (
        Message.objects.filter(conversation_id=conversation_id)
        .order_by("created_at", "id")
        .values("id", "role", "content", "status", "error", "memory_status", "created_at")
    )
    for row in rows.iterator(chunk_size=EXPORT_CHUNK):
        yield dict(row)


def conversations_export(user: User) -> Iterator[dict[str, Any]]:
    """Every conversation of the user (temporary ones that still exist included), oldest first, each
    with its messages, read in chunks as the document is written."""
    rows = Conversation.objects.filter(owner=user).order_by("created_at", "pk")
    fields = ("id", "title", "temporary", "project_id", "imported_from", "imported_id", "created_at", "updated_at")
    for conversation in rows.values(*fields).iterator(chunk_size=500):
        yield {**conversation, "messages": _messages(conversation["id"])}


def projects_export(user: User) -> list[dict[str, Any]]:
    """The user's projects (SPEC §9), oldest first: their conversations and memories name them by id."""
    fields = ("id", "name", "instructions", "memory_mode", "created_at", "updated_at")
    return list(Project.objects.filter(owner=user).order_by("created_at", "pk").values(*fields))


def account_erase(user: User) -> None:
    """Delete every conversation of the user (messages, markers, agent states go with them, and the
    conversation erasers run); close the user's open sockets once the deletion commits. The projects go
    with the user row, after every app's eraser (the memory app's memories name them)."""
    ids = list(Conversation.objects.filter(owner=user).values_list("pk", flat=True))
    conversations_erase(user_id=user.pk, conversation_ids=ids)
    Conversation.objects.filter(owner=user).delete()
    Message.objects.filter(user=user).delete()
    user_sockets_close(user_id=user.pk)


def _forms(text: str) -> list[str]:
    variants = {text, text.strip(), " ".join(text.split())}
    forms = {form for v in variants for form in (v, json.dumps(v)[1:-1], json.dumps(v, ensure_ascii=False)[1:-1])}
    return sorted((f for f in forms if len(f) >= QUOTE_MIN_CHARS), key=len, reverse=True)


def tool_results_erase(erased: extensions.ConversationsErased) -> None:
    """Other conversations' tool results (e.g. a history search) that quoted a deleted message get
    DELETED_MESSAGE in its place; the tool call keeps its result."""
    forms = sorted({form for text in erased.messages.values() for form in _forms(text)}, key=len, reverse=True)
    if not forms:
        return
    rows = (
        AgentState.objects.select_for_update()
        .filter(conversation__owner_id=erased.user_id)
        .exclude(conversation_id__in=erased.conversation_ids)
    )
    for state in rows.only("pk", "context").iterator(chunk_size=100):
        context = [_tool_item_redact(item, forms) for item in state.context]
        if context != state.context:
            AgentState.objects.filter(pk=state.pk).update(context=context)


def _tool_item_redact(item: Any, forms: list[str]) -> Any:
    if not isinstance(item, dict) or item.get("role") != "tool" or not isinstance(item.get("content"), str):
        return item
    content = item["content"]
    for form in forms:
        content = content.replace(form, DELETED_MESSAGE)
    return {**item, "content": content} if content != item["content"] else item


def account_page_context(request: HttpRequest) -> dict[str, Any]:
    """Settings → Account in the app's layout: the sidebar's conversation list."""
    return {**sidebar_context(request.user), "current": None, "layout": "chat/settings_layout.html"}  # type: ignore[arg-type]
