"""The memory block's two reads are written in SQL (memory.selectors, on every turn's way to its first token):
they must give exactly what the ORM's queries give, on SQLite and on PostgreSQL."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from chat.models import Message
from memory.models import Memory, MemoryKey
from memory.selectors import memories_active, memory_rows_for_turn, messages_last_two_before
from tests.helpers import make_conversation, make_memory, make_message, make_user

pytestmark = pytest.mark.django_db

FIELDS = ("id", "content", "pinned", "key", "expires_at", "project", "created_at")


def test_a_turns_memory_rows_are_the_active_memories_oldest_first(user: Any, other_user: Any) -> None:
    now = timezone.now()
    make_memory(owner=user, content="Pinned.", pinned=True)
    make_memory(owner=user, content="Answers in Chinese.", key=MemoryKey.REPLY_LANGUAGE)
    make_memory(owner=user, content="Away until Friday.", expires_at=now + timedelta(days=3))
    make_memory(owner=user, content="Was away last week.", expires_at=now - timedelta(minutes=1))
    make_memory(owner=user, content="Retracted.", invalid_at=now, invalid_reason="retracted")
    make_memory(owner=user, content="A suggestion waiting.", suggested=True)
    tea = make_memory(owner=user, content="Likes tea.")
    Memory.objects.filter(pk=tea.pk).update(created_at=now - timedelta(days=9))  # the oldest, though made last
    make_memory(owner=other_user, content="Someone else's.")

    rows = memory_rows_for_turn(user_id=user.pk)

    assert rows == list(memories_active(user_id=user.pk).values_list(*FIELDS))
    assert [content for _, content, *_ in rows] == [
        "Likes tea.", "Pinned.", "Answers in Chinese.", "Away until Friday."
    ]  # fmt: skip
    pinned, expires, learned = rows[1][2], rows[3][4], rows[0][6]
    assert pinned is True and expires is not None and expires.tzinfo is not None
    assert learned is not None and learned.tzinfo is not None and learned < now - timedelta(days=8)


def test_a_turns_memory_rows_are_empty_while_memory_is_off(user: Any) -> None:
    make_memory(owner=user, content="Likes tea.")
    user.memory_enabled = False
    user.save(update_fields=["memory_enabled"])
    assert memory_rows_for_turn(user_id=user.pk) == []


def test_the_last_exchange_is_the_two_messages_before_the_turns_own_newest_first() -> None:
    owner = make_user()
    conversation = make_conversation(owner=owner)
    other = make_conversation(owner=owner)
    make_message(conversation=conversation, content="First question")
    asked = make_message(conversation=conversation, content="Which phone?")
    answered = make_message(conversation=conversation, role=Message.Role.ASSISTANT, content="A small one.")
    make_message(conversation=other, content="Elsewhere")
    now = make_message(conversation=conversation, content="Why?")

    got = messages_last_two_before(conversation_id=conversation.pk, message_id=now.pk)

    assert got == [("assistant", answered.content), ("user", asked.content)]
    first = messages_last_two_before(conversation_id=conversation.pk, message_id=asked.pk)
    assert first == [("user", "First question")]
    assert messages_last_two_before(conversation_id=other.pk, message_id=now.pk) == [("user", "Elsewhere")]
