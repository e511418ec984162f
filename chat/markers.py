"""Conversation markers: small, lasting notes in a conversation's timeline, added by other apps
(the memory app marks where a memory changed). Chat stores them, shows them between the messages
in time order on every load (selectors.marker_list, `timeline`), and pushes a new one to the
conversation's open pages (rendered by fragments.marker_html).

    marker_add(conversation=..., kind="...", text="...", link="/somewhere/", link_text="Review", data={...})

With `data` and a renderer registered for the kind (chat.marker_kinds), the marker is worded at view
time in the reader's language; `text` and `link_text` stay as the fallback.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import translation

from chat import push
from chat.fragments import marker_html
from chat.models import Conversation, ConversationMarker, Message

__all__ = ["TEXT_MAX", "marker_add", "marker_html", "timeline"]

TEXT_MAX = 300


@transaction.atomic
def marker_add(
    *,
    conversation: Conversation,
    kind: str,
    text: str,
    link: str = "",
    link_text: str = "",
    data: dict[str, Any] | None = None,
) -> ConversationMarker:
    """Save a marker at the end of the conversation's timeline; its open pages get it after commit."""
    if len(text) > TEXT_MAX:
        text = text[: TEXT_MAX - 1] + "…"
    marker = ConversationMarker.objects.create(
        conversation=conversation, kind=kind, text=text, link=link, link_text=link_text[:60], data=data or {}
    )
    transaction.on_commit(lambda: _push(marker))
    return marker


def _push(marker: ConversationMarker) -> None:
    # The group of the owner's open chat pages; each page keeps only its own conversation's. Missed (the
    # channel layer down), it shows on the next load.
    # Rendered in each language: every open page shows the one it speaks (as chat.extensions.notify_user).
    translations = {}
    for code, _name in settings.LANGUAGES:
        with translation.override(code):
            translations[code] = marker_html(marker)
    html = translations.get(settings.LANGUAGE_CODE) or marker_html(marker)
    event = {
        "type": "chat.marker",
        "conversation_id": str(marker.conversation_id),
        "html": html,
        "translations": translations,
    }
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
