"""Conversation markers: small, lasting notes in a conversation's timeline, added by other apps
(the memory app marks where a memory changed). Chat stores them, shows them between the messages
in time order on every load (selectors.marker_list, `timeline`), and pushes a new one to the
conversation's open pages (rendered by fragments.marker_html).

    marker_add(conversation=..., kind="...", text="...", link="/somewhere/", link_text="Review")
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db import transaction

from chat import push
from chat.fragments import marker_html
from chat.models import Conversation, ConversationMarker, Message

__all__ = ["TEXT_MAX", "marker_add", "marker_html", "timeline"]

TEXT_MAX = 300


@transaction.atomic
def marker_add(
    *, conversation: Conversation, kind: str, text: str, link: str = "", link_text: str = ""
) -> ConversationMarker:
    """Save a marker at the end of the conversation's timeline; its open pages get it after commit."""
    if len(text) > TEXT_MAX:
        text = text[: TEXT_MAX - 1] + "…"
    marker = ConversationMarker.objects.create(
        conversation=conversation, kind=kind, text=text, link=link, link_text=link_text[:60]
    )
    transaction.on_commit(lambda: _push(marker))
    return marker


def _push(marker: ConversationMarker) -> None:
    # The group of the owner's open chat pages; each page keeps only its own conversation's. Missed (the
    # channel layer down), it shows on the next load.
    event = {"type": "chat.marker", "conversation_id": str(marker.conversation_id), "html": marker_html(marker)}
    push.send_event(event, user_id=marker.conversation.owner_id)


def timeline(messages: Iterable[Message], markers: Iterable[ConversationMarker]) -> list[Any]:
    """Messages and markers in time order; a marker goes after the messages created before it."""
    items: list[Any] = []
    pending = list(markers)
    for message in messages:
        while pending and pending[0].created_at < message.created_at:
            items.append(pending.pop(0))
        items.append(message)
    return items + pending
