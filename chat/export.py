"""A conversation as Markdown (`GET /api/conversations/{id}/export?format=markdown`, and the conversation's
menu): its title, then each message with who wrote it and when, and under each reply the memories its
memory block held (the message annotators' `used_memories`, when the memory app is installed)."""

from __future__ import annotations

import re
from urllib.parse import quote

from django.http import HttpResponse
from django.utils import timezone
from django.utils.translation import gettext as _

from chat import extensions, selectors
from chat.models import Conversation, Message


def _when(message: Message) -> str:
    return timezone.localtime(message.created_at).strftime("%Y-%m-%d %H:%M")


def conversation_markdown(*, conversation: Conversation) -> str:
    messages = extensions.annotate_messages(list(selectors.message_list(conversation=conversation)))
    lines = [f"# {conversation.display_title}", ""]
    for message in messages:
        who = _("You") if message.role == Message.Role.USER else "Memora"
        lines += [f"## {who} · {_when(message)}", ""]
        lines += [message.content.strip() or _("(no text)"), ""]
        if message.status in (Message.Status.ERROR, Message.Status.INTERRUPTED):
            note = _("Stopped.") if message.status == Message.Status.INTERRUPTED else message.error
            lines += [f"*{note}*", ""]
        used = [getattr(memory, "content", "") for memory in getattr(message, "used_memories", [])]
        if used:
            heading = _("Memories used:")
            lines += [heading, "", *(f"- {text}" for text in used if text), ""]
    return "\n".join(lines).rstrip() + "\n"


def export_filename(conversation: Conversation) -> str:
    """A file name from the title: letters, digits (any script), dashes; "conversation" when none is left."""
    stem = re.sub(r"[^\w-]+", "-", conversation.display_title, flags=re.UNICODE).strip("-_")[:60]
    return f"{stem or 'conversation'}.md"


def markdown_response(conversation: Conversation) -> HttpResponse:
    """The Markdown file, as a download."""
    response = HttpResponse(
        conversation_markdown(conversation=conversation), content_type="text/markdown; charset=utf-8"
    )
    response["Content-Disposition"] = f"attachment; filename*=UTF-8''{quote(export_filename(conversation))}"
    return response
