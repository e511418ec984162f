from __future__ import annotations

import json
from typing import cast

import pytest
from django.test import AsyncClient

from accounts.models import User
from accounts.services import api_token_create
from chat.models import AgentState, Message
from chat.services import conversation_create
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db(transaction=True)


async def test_api_turn_with_demo_model_saves_both_messages_and_state() -> None:
    from asgiref.sync import sync_to_async

    user = cast(User, await sync_to_async(UserFactory)())
    _, token = await sync_to_async(api_token_create)(user=user)
    conversation = await sync_to_async(conversation_create)(user=user)
    client = AsyncClient()
    response = await client.post(
        f"/api/conversations/{conversation.id}/messages",
        json.dumps({"content": "Hello there"}),
        content_type="application/json",
        headers={"Authorization": f"Bearer {token}"},
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["user_message"]["content"] == "Hello there"
    assert "Offline demo model" in body["assistant_message"]["content"]
    state = await AgentState.objects.aget(conversation=conversation)
    assert [m["role"] for m in state.context] == ["user", "assistant"]
    assert await Message.objects.filter(conversation=conversation).acount() == 2
