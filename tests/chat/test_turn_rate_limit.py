"""CHAT_USER_TURNS_PER_MINUTE and CHAT_ADDRESS_TURNS_PER_MINUTE: one turn more answers 429 with
Retry-After. Model turns started are counted (retries too), in a table deletions do not touch."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from accounts.models import User
from chat import services
from chat.models import Conversation, Message, TurnStart
from chat.services import conversation_create
from chat.turn import transactions

pytestmark = pytest.mark.django_db(transaction=True)


def send(client: Client, conversation: Conversation, content: str = "Hello") -> Any:
    path = f"/api/conversations/{conversation.pk}/messages"
    return client.post(path, json.dumps({"content": content}), content_type="application/json")


def test_one_turn_over_the_limit_answers_429_with_retry_after_and_writes_nothing(
    api_client: Client, user: User, settings: Any, fake_model: Any
) -> None:
    settings.CHAT_USER_TURNS_PER_MINUTE = 3
    conversations = [conversation_create(user=user) for _ in range(4)]
    for conversation in conversations[:3]:
        fake_model.reply("Hi")
        assert send(api_client, conversation).status_code == 200
    before = Message.objects.count()
    response = send(api_client, conversations[3])
    assert response.status_code == 429
    assert 1 <= int(response["Retry-After"]) <= 60
    assert "the limit is 3 a minute" in response.json()["detail"]
    assert Message.objects.count() == before


def started(user: User | None, *, seconds_ago: float = 0, address: str = "") -> TurnStart:
    return TurnStart.objects.create(
        user=user, address=address, started_at=timezone.now() - timedelta(seconds=seconds_ago)
    )


def failed_turn(user: User, conversation: Conversation) -> transactions.StartedTurn:
    turn = transactions.turn_start(user=user, conversation=conversation, content="Hello")
    transactions.turn_finish(turn=turn, status=Message.Status.ERROR, content="", error="boom", new_items=[])
    return turn


def test_the_limit_is_per_user_and_per_minute(user: User, other_user: User, settings: Any) -> None:
    settings.CHAT_USER_TURNS_PER_MINUTE = 2
    for _ in range(2):
        started(user)
    with pytest.raises(services.TooManyTurns):
        services.turn_rate_check(user=user, now=timezone.now())
    services.turn_rate_check(user=other_user, now=timezone.now())  # someone else is not affected
    services.turn_rate_check(user=user, now=timezone.now() + timedelta(seconds=61))  # a minute later


def test_retry_after_counts_down_to_when_the_oldest_turn_leaves_the_minute(user: User, settings: Any) -> None:
    settings.CHAT_USER_TURNS_PER_MINUTE = 1
    turn = started(user)
    with pytest.raises(services.TooManyTurns) as caught:
        services.turn_rate_check(user=user, now=turn.started_at + timedelta(seconds=45))
    assert caught.value.retry_after == 15


def test_a_turns_start_counts_only_the_users_own_turns_of_the_last_minute(
    user: User, other_user: User, settings: Any
) -> None:
    settings.CHAT_USER_TURNS_PER_MINUTE = 2
    started(user, seconds_ago=61)
    started(other_user)
    started(user)  # the one that counts

    transactions.turn_start(user=user, conversation=conversation_create(user=user), content="Second")
    with pytest.raises(services.TooManyTurns):
        transactions.turn_start(user=user, conversation=conversation_create(user=user), content="Third")


def test_deleting_the_conversation_does_not_reset_the_limit(user: User, settings: Any) -> None:
    settings.CHAT_USER_TURNS_PER_MINUTE = 2
    for _ in range(2):
        conversation = conversation_create(user=user)
        failed_turn(user, conversation)
        services.conversation_delete(conversation=conversation)
    assert not Message.objects.filter(user=user).exists()
    with pytest.raises(services.TooManyTurns):
        transactions.turn_start(user=user, conversation=conversation_create(user=user), content="Again")


def test_every_retry_is_a_model_turn_that_counts(user: User, settings: Any) -> None:
    settings.CHAT_USER_TURNS_PER_MINUTE = 3
    conversation = conversation_create(user=user)
    failed_turn(user, conversation)
    for _ in range(2):  # Retry, then Stop: the same stored message each time
        retry = transactions.turn_retry_start(user=user, conversation=conversation)
        transactions.turn_finish(turn=retry, status=Message.Status.INTERRUPTED, content="", new_items=[])
    assert Message.objects.filter(user=user, role=Message.Role.USER).count() == 1
    with pytest.raises(services.TooManyTurns):
        transactions.turn_retry_start(user=user, conversation=conversation)


def test_a_refused_turn_is_not_counted(user: User, settings: Any) -> None:
    conversation = conversation_create(user=user)
    transactions.turn_start(user=user, conversation=conversation, content="First")
    with pytest.raises(services.ConversationBusy):
        transactions.turn_start(user=user, conversation=conversation, content="Second")
    assert TurnStart.objects.filter(user=user).count() == 1


def test_one_address_is_limited_across_accounts(user: User, other_user: User, settings: Any) -> None:
    settings.CHAT_ADDRESS_TURNS_PER_MINUTE = 3
    here = services.TurnOrigin(address="203.0.113.9")
    transactions.turn_start(user=user, conversation=conversation_create(user=user), content="1", origin=here)
    transactions.turn_start(user=user, conversation=conversation_create(user=user), content="2", origin=here)
    started(None, address="203.0.113.9")  # an account deleted since still counts
    with pytest.raises(services.TooManyTurns) as caught:
        transactions.turn_start(
            user=other_user, conversation=conversation_create(user=other_user), content="3", origin=here
        )
    assert "from this address" in str(caught.value)
    assert caught.value.retry_after is not None and 1 <= caught.value.retry_after <= 60
    elsewhere = services.TurnOrigin(address="198.51.100.7")
    transactions.turn_start(
        user=other_user, conversation=conversation_create(user=other_user), content="4", origin=elsewhere
    )


def test_the_api_counts_turns_by_the_clients_address(
    api_client: Client, user: User, other_user: User, settings: Any, fake_model: Any
) -> None:
    from accounts.services import api_token_create

    settings.CHAT_ADDRESS_TURNS_PER_MINUTE = 1
    fake_model.reply("Hi")
    path = f"/api/conversations/{conversation_create(user=user).pk}/messages"
    body = json.dumps({"content": "Hello"})
    assert api_client.post(path, body, content_type="application/json", REMOTE_ADDR="192.0.2.1").status_code == 200
    other = Client(HTTP_AUTHORIZATION=f"Bearer {api_token_create(user=other_user)[1]}")
    path = f"/api/conversations/{conversation_create(user=other_user).pk}/messages"
    refused = other.post(path, body, content_type="application/json", REMOTE_ADDR="192.0.2.1")
    assert refused.status_code == 429
    assert refused.has_header("Retry-After")


def test_old_turn_starts_are_pruned(user: User) -> None:
    started(user, seconds_ago=600)
    recent = started(user, seconds_ago=5)
    assert services.turn_starts_prune() == 1
    assert list(TurnStart.objects.all()) == [recent]
