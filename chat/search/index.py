"""Writes to the search index. Each runs inside the caller's transaction (the one writing the text), so
the index never holds words the database does not, and a rolled-back write leaves no entry."""

from __future__ import annotations

from collections.abc import Iterable

from chat.models import Conversation, Message, SearchEntry
from chat.terms import terms


def index_terms(text: str) -> str:
    """What an entry stores: the text's distinct terms, space-separated, in order of first use."""
    return " ".join(dict.fromkeys(terms(text)))


def _message_entry(message: Message) -> SearchEntry | None:
    words = index_terms(message.content)
    if not words:
        return None
    return SearchEntry(
        user_id=message.user_id,
        conversation_id=message.conversation_id,
        message_id=message.pk,
        created_at=message.created_at,
        terms=words,
    )


def _title_entry(conversation: Conversation) -> SearchEntry | None:
    words = index_terms(conversation.title)
    if not words:
        return None
    return SearchEntry(
        user_id=conversation.owner_id, conversation=conversation, created_at=conversation.created_at, terms=words
    )


def _title_replaced(conversation: Conversation) -> SearchEntry | None:
    """The conversation's earlier title entry deleted; its new one, to be inserted."""
    SearchEntry.objects.filter(conversation=conversation, message=None).delete()
    return _title_entry(conversation)


def search_index_messages(
    *, messages: Iterable[Message], replace: bool = True, retitled: Conversation | None = None
) -> None:
    """Index these messages' current content (an empty one is not indexed). With `replace`, their
    earlier entries go first; a new message has none (`replace=False` saves the query). With
    `retitled`, that conversation's title too, in the same INSERT (a turn titles its conversation)."""
    messages = [m for m in messages if m.pk is not None]
    if replace and messages:
        SearchEntry.objects.filter(message_id__in=[m.pk for m in messages]).delete()
    entries = [_message_entry(m) for m in messages]
    if retitled is not None:
        entries.append(_title_replaced(retitled))
    SearchEntry.objects.bulk_create([e for e in entries if e is not None])  # none: no query


def search_index_title(*, conversation: Conversation) -> None:
    """Index the conversation's current title (replacing its earlier one)."""
    search_index_messages(messages=[], retitled=conversation)
