"""The post-turn hook's pending count: right on both databases, and read through the partial index of
pending messages on SQLite too, so it does not grow with the user's whole history."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection

from chat.models import Message
from memory.selectors import pending_count_sql, pending_count_up_to
from tests.helpers import make_conversation, make_message, make_user, say

pytestmark = pytest.mark.django_db


def test_the_count_takes_only_the_users_pending_messages_up_to_the_trigger(user: Any, conversation: Any) -> None:
    first = say(conversation, "I like small phones.")
    say(conversation, "Thanks.")
    third = say(conversation, "And I wear glasses.")
    later = say(conversation, "One more thing.")
    Message.objects.filter(pk=first.pk).update(memory_status=Message.MemoryStatus.PROCESSED)
    stranger = make_user(username="mallory")
    make_message(conversation=make_conversation(owner=stranger), user=stranger, role="user", memory_status="pending")

    assert pending_count_up_to(user_id=user.pk, message_id=third.pk) == 2
    assert pending_count_up_to(user_id=user.pk, message_id=later.pk) == 3


def test_the_count_is_zero_while_memory_is_off(user: Any, conversation: Any) -> None:
    said = [say(conversation, f"Message {i}.") for i in range(3)]
    user.memory_enabled = False
    user.save(update_fields=["memory_enabled"])

    assert pending_count_up_to(user_id=user.pk, message_id=said[-1].pk) == 0


@pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite's query plan")
def test_on_sqlite_the_count_reads_the_partial_index_of_pending_messages(user: Any) -> None:
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN QUERY PLAN " + pending_count_sql(), [user.pk, 10**9])
        plan = " ".join(str(row[-1]) for row in cursor.fetchall())

    assert "msg_user_pending" in plan
