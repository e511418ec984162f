"""CHAT_USER_TURNS_PER_MINUTE: one turn more answers 429 with Retry-After, over the API and on the page."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from accounts.models import User
from chat import services
from chat.models import Conversation, Message
from chat.services import conversation_create

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


def test_the_limit_is_per_user_and_per_minute(user: User, other_user: User, settings: Any) -> None:
    settings.CHAT_USER_TURNS_PER_MINUTE = 2
    for _ in range(2):
        Message.objects.create(conversation=conversation_create(user=user), user=user, role=Message.Role.USER)
    with pytest.raises(services.TooManyTurns):
        services.turn_rate_check(user=user, now=timezone.now())
    services.turn_rate_check(user=other_user, now=timezone.now())  # someone else is not affected
    services.turn_rate_check(user=user, now=timezone.now() + timedelta(seconds=61))  # a minute later


def test_retry_after_counts_down_to_when_the_oldest_turn_leaves_the_minute(user: User, settings: Any) -> None:
    settings.CHAT_USER_TURNS_PER_MINUTE = 1
    message = Message.objects.create(conversation=conversation_create(user=user), user=user, role=Message.Role.USER)
    with pytest.raises(services.TooManyTurns) as caught:
        services.turn_rate_check(user=user, now=message.created_at + timedelta(seconds=45))
    assert caught.value.retry_after == 15


def test_a_turns_start_counts_only_the_users_own_turns_of_the_last_minute(
    user: User, other_user: User, settings: Any
) -> None:
    settings.CHAT_USER_TURNS_PER_MINUTE = 2
    conversation = conversation_create(user=user)
    old = Message.objects.create(conversation=conversation, user=user, role=Message.Role.USER)
    Message.objects.filter(pk=old.pk).update(created_at=timezone.now() - timedelta(seconds=61))
    Message.objects.create(conversation=conversation, user=user, role=Message.Role.ASSISTANT)
    Message.objects.create(conversation=conversation_create(user=other_user), user=other_user, role=Message.Role.USER)
    Message.objects.create(conversation=conversation, user=user, role=Message.Role.USER)  # the one that counts

    services.turn_start(user=user, conversation=conversation_create(user=user), content="Second")
    with pytest.raises(services.TooManyTurns):
        services.turn_start(user=user, conversation=conversation_create(user=user), content="Third")
