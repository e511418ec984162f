"""Writes to the search index. Each runs inside the caller's transaction (the one writing the text), so
the index never holds words the database does not, and a rolled-back write leaves no entry."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db import connection

from chat.models import Conversation, Message, SearchEntry
from chat.search import backend
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
        SearchEntry.objects.filter(conversation=retitled, message=None).delete()
        entries.append(_title_entry(retitled))
    if new := [e for e in entries if e is not None]:
        SearchEntry.objects.bulk_create(new)


def search_index_title(*, conversation: Conversation) -> None:
    """Index the conversation's current title (replacing its earlier one)."""
    search_index_messages(messages=[], retitled=conversation)


def search_entries_delete(
    *, user_id: int | None = None, conversation_ids: Iterable[Any] = (), message_ids: Iterable[int] = ()
) -> int:
    """Remove the entries of a user, of conversations or of messages; how many. Deleting the source rows
    does this by itself (ForeignKey CASCADE, and on SQLite the FTS5 trigger): this is for a caller that
    wants it done first or explicitly (a deletion registry). Idempotent."""
    deleted = 0
    if user_id is not None:
        deleted += SearchEntry.objects.filter(user_id=user_id).delete()[0]
    if conversation_ids := list(conversation_ids):
        deleted += SearchEntry.objects.filter(conversation_id__in=conversation_ids).delete()[0]
    if message_ids := list(message_ids):
        deleted += SearchEntry.objects.filter(message_id__in=message_ids).delete()[0]
    return deleted


def search_index_compact() -> None:
    """Drop what deleted entries left inside the index structures (SQLite's FTS5 keeps a deleted entry's
    terms in older segments until they are merged); a no-op on PostgreSQL. Slow on a big index: run
    it after deleting an account, not per message."""
    backend().compact(connection)


def search_index_rebuild(*, user_id: int | None = None) -> int:
    """Index every message and title again (all users', or one's): entries replaced. How many messages."""
    messages = Message.objects.order_by("id")
    conversations = Conversation.objects.order_by("created_at")
    if user_id is not None:
        messages, conversations = messages.filter(user_id=user_id), conversations.filter(owner_id=user_id)
    count = 0
    batch: list[Message] = []
    for message in messages.iterator(chunk_size=2000):
        batch.append(message)
        if len(batch) == 2000:
            search_index_messages(messages=batch)
            count, batch = count + len(batch), []
    search_index_messages(messages=batch)
    for conversation in conversations.iterator(chunk_size=2000):
        search_index_title(conversation=conversation)
    return count + len(batch)
