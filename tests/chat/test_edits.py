"""Editing the last message sent: the old words leave every copy, what was learned from them alone goes to
History, the new words run a turn and are pending for memory."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from accounts.models import User
from chat.models import AgentState, Conversation, Message
from chat.services import conversation_create
from tests.scan import scan_for

TURN = pytest.mark.django_db(transaction=True)
JSON = "application/json"
OLD = "My cat is called Whiskerbottom"


def patch(client: Client, path: str, body: Any) -> Any:
    return client.patch(path, json.dumps(body), content_type=JSON)


def say(client: Client, conversation: Conversation, content: str) -> dict[str, Any]:
    return client.post(
        f"/api/conversations/{conversation.pk}/messages", json.dumps({"content": content}), content_type=JSON
    ).json()


@TURN
def test_an_edit_replaces_the_turn_and_the_old_words_are_nowhere(
    api_client: Client, conversation: Conversation, fake_model: Any
) -> None:
    say(api_client, conversation, "Hello")
    fake_model.reply("Whiskerbottom is a fine name")
    old = say(api_client, conversation, OLD)
    fake_model.reply("Mittens is a fine name")
    url = f"/api/conversations/{conversation.pk}/messages/{old['user_message']['id']}"
    response = patch(api_client, url, {"content": "My cat is called Mittens"})
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["user_message"]["content"] == "My cat is called Mittens"
    assert body["assistant_message"]["content"] == "Mittens is a fine name"
    assert body["user_message"]["memory_status"] in ("pending", "skipped")
    shown = [m.content for m in Message.objects.filter(conversation=conversation)]
    assert shown == ["Hello", "ok", "My cat is called Mittens", "Mittens is a fine name"]
    state = AgentState.objects.get(conversation=conversation).context
    assert [m["content"] for m in state] == shown
    assert scan_for("Whiskerbottom") == []
    sent = json.dumps(fake_model.model.requests[-1]["messages"])
    assert "Whiskerbottom" not in sent


@TURN
def test_only_the_last_message_sent_can_be_edited(
    api_client: Client, conversation: Conversation, fake_model: Any
) -> None:
    first = say(api_client, conversation, "First")
    say(api_client, conversation, "Second")
    before = list(Message.objects.values_list("pk", "content"))
    url = f"/api/conversations/{conversation.pk}/messages/{first['user_message']['id']}"
    response = patch(api_client, url, {"content": "Changed"})
    assert response.status_code == 409
    reply_url = f"/api/conversations/{conversation.pk}/messages/{first['assistant_message']['id']}"
    assert patch(api_client, reply_url, {"content": "Changed"}).status_code == 409
    assert list(Message.objects.values_list("pk", "content")) == before


@TURN
def test_another_users_message_cannot_be_edited(api_client: Client, other_user: User, fake_model: Any) -> None:
    theirs = conversation_create(user=other_user)
    message = Message.objects.create(conversation=theirs, user=other_user, role="user", content="Mine")
    response = patch(api_client, f"/api/conversations/{theirs.pk}/messages/{message.pk}", {"content": "x"})
    assert response.status_code == 404
    assert Message.objects.get(pk=message.pk).content == "Mine"


@TURN
def test_an_edit_with_a_blank_message_answers_422_and_changes_nothing(
    api_client: Client, conversation: Conversation, fake_model: Any
) -> None:
    old = say(api_client, conversation, "Keep me")
    url = f"/api/conversations/{conversation.pk}/messages/{old['user_message']['id']}"
    assert patch(api_client, url, {"content": "  "}).status_code == 422
    assert Message.objects.filter(content="Keep me").exists()


@TURN
@pytest.mark.needs_memory
def test_a_memory_drawn_only_from_the_edited_message_goes_to_history(
    api_client: Client, user: User, conversation: Conversation, fake_model: Any
) -> None:
    from memory.models import Memory, MemorySource
    from memory.services import memory_restore

    earlier = say(api_client, conversation, "I live in Lyon")
    old = say(api_client, conversation, OLD)
    only = Memory.objects.create(owner=user, content="Has a cat called Whiskerbottom.")
    shared = Memory.objects.create(owner=user, content="Lives in Lyon with a cat.")
    MemorySource.objects.create(memory=only, message_id=old["user_message"]["id"])
    MemorySource.objects.create(memory=shared, message_id=old["user_message"]["id"])
    MemorySource.objects.create(memory=shared, message_id=earlier["user_message"]["id"])
    url = f"/api/conversations/{conversation.pk}/messages/{old['user_message']['id']}"
    assert patch(api_client, url, {"content": "I have no pets"}).status_code == 200
    only.refresh_from_db()
    shared.refresh_from_db()
    assert (only.invalid_at is not None, only.invalid_reason) == (True, "source_edited")
    assert shared.invalid_at is None
    assert list(shared.source_links.values_list("message_id", flat=True)) == [earlier["user_message"]["id"]]
    restored = memory_restore(user=user, memory=only)
    assert restored.invalid_at is None and restored.content == "Has a cat called Whiskerbottom."
