"""Conversation markers: small, lasting notes in a conversation's timeline, added by other apps
(the memory app marks where a memory changed). Chat stores them, shows them between the messages
in time order on every load, and pushes a new one to the conversation's open pages.

    marker_add(conversation=..., kind="...", text="...", link="/somewhere/", link_text="Review")
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction
from django.template.loader import render_to_string

from chat.extensions import user_group
from chat.models import Conversation, ConversationMarker, Message

logger = logging.getLogger(__name__)

TEXT_MAX = 300


def marker_html(marker: ConversationMarker) -> str:
    return render_to_string("chat/_marker.html", {"marker": marker})


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
    # The group of the owner's open chat pages; each page keeps only its own conversation's.
    layer = get_channel_layer()
    if layer is None:
        return
    event = {"type": "chat.marker", "conversation_id": str(marker.conversation_id), "html": marker_html(marker)}
    try:
        async_to_sync(layer.group_send)(user_group(marker.conversation.owner_id), event)
    except Exception:  # the marker is saved and shows on the next load; a missed push must not fail the caller
        logger.exception("could not push marker %s", marker.pk)


def marker_list(*, conversation: Conversation) -> list[ConversationMarker]:
    return list(ConversationMarker.objects.filter(conversation=conversation).order_by("created_at", "id"))


def timeline(messages: Iterable[Message], markers: Iterable[ConversationMarker]) -> list[Any]:
    """Messages and markers in time order; a marker goes after the messages created before it."""
    items: list[Any] = []
    pending = list(markers)
    for message in messages:
        while pending and pending[0].created_at < message.created_at:
            items.append(pending.pop(0))
        items.append(message)
    return items + pending
