"""Editing the last message a user sent: like deleting it and sending the new words (SPEC §9).

Within the transaction that starts the new turn (chat.turn.transactions.turn_start, `replace`): the old
message and the replies after it are deleted with every copy of their words (the conversation erasers:
run records, search index, other conversations' tool results), their part of the agent state goes, a
title the old words gave the conversation is given again by the new ones, and the `user_message_edited`
hook (chat.extensions) lets other apps act first on what they drew from it: the memory app moves a memory
whose only source it was to History ("source edited", restorable).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction
from django.utils.translation import gettext as _

from chat import extensions, push, sidebar
from chat.fragments import messages_removed_html
from chat.models import Conversation, Message
from chat.rejections import NotEditable
from chat.services import messages_delete, title_from


@dataclass(frozen=True)
class Replaced:
    content: str  # the old words, to take their turn out of the agent state
    message_ids: list[int]  # the old message and the replies after it, deleted


def latest_user_message(conversation: Conversation) -> Message | None:
    return (
        Message.objects.filter(conversation=conversation, role=Message.Role.USER).order_by("-created_at", "-id").first()
    )


def message_replace(*, conversation: Conversation, message_id: int, content: str) -> Replaced:
    """Delete the conversation's latest user message (`message_id`) and what answered it, in the caller's
    transaction, with the conversation locked by it. NotEditable when it is not that message."""
    old = latest_user_message(conversation)
    if old is None or old.pk != message_id:
        raise NotEditable(_("Only the last message you sent can be edited."))
    later = Message.objects.filter(conversation=conversation, pk__gt=old.pk).values_list("pk", flat=True)
    ids = [old.pk, *later]
    extensions.user_message_edited.send(sender=Message, user_id=old.user_id, message_id=old.pk)
    messages_delete(message_ids=ids)
    if conversation.title and conversation.title == title_from(old.content):
        conversation.title = title_from(content)
        Conversation.objects.filter(pk=conversation.pk).update(title=conversation.title)
        sidebar.sidebar_changed(conversation=conversation)
    _removed_push(conversation, ids)
    return Replaced(content=old.content, message_ids=ids)


def _removed_push(conversation: Conversation, message_ids: list[int]) -> None:
    """After commit, every page open on the conversation drops the old message and its replies (the page
    that made the edit does it at once too, chat.consumers); missed, they are gone on the next load."""
    html = messages_removed_html(tuple(message_ids))
    event = {"type": "chat.fragment", "conversation_id": str(conversation.pk), "html": html}
    owner_id = conversation.owner_id
    transaction.on_commit(lambda: push.send_event(event, user_id=owner_id))
