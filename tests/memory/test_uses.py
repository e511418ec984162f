"""What a reply used: `memories_used` in the API (JSON and the SSE `done`), `last_used_at`, "Used N
memories" under the reply, and its Wrong and Outdated actions (pages and API)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from accounts.models import User
from chat.models import Conversation, Message
from memory.models import Memory, MemoryUse
from tests.chat.test_api_sse import post
from tests.helpers import make_memory, make_message

TURN = pytest.mark.django_db(transaction=True)


def send(client: Client, conversation: Conversation, content: str) -> dict[str, Any]:
    path = f"/api/conversations/{conversation.id}/messages"
    response = client.post(path, json.dumps({"content": content}), content_type="application/json")
    assert response.status_code == 200, response.content
    return dict(response.json())


@TURN
def test_a_reply_records_the_memories_its_block_held_and_never_another_users(
    api_client: Client, user: User, other_user: User, conversation: Conversation, fake_model: Any
) -> None:
    phones = make_memory(owner=user, content="Prefers small phones.")
    make_memory(owner=user, content="Plays the cello.")
    pinned = make_memory(owner=user, content="Answer briefly.", pinned=True)
    make_memory(owner=other_user, content="Prefers huge phones.", pinned=True)

    body = send(api_client, conversation, "Which phone should I buy?")

    used = body["assistant_message"]["memories_used"]
    assert sorted(used) == sorted([phones.pk, pinned.pk])
    assert body["user_message"]["memories_used"] == []
    listed = api_client.get(f"/api/conversations/{conversation.id}/messages").json()
    assert sorted(listed[1]["memories_used"]) == sorted(used)
    phones.refresh_from_db()
    assert phones.last_used_at is not None
    assert Memory.objects.get(content="Plays the cello.").last_used_at is None
    assert not MemoryUse.objects.filter(memory__owner=other_user).exists()


@TURN
async def test_the_sse_done_event_carries_memories_used(
    fake_model: Any, user: User, conversation: Conversation
) -> None:
    from asgiref.sync import sync_to_async

    from accounts.services import api_token_create

    token = (await sync_to_async(api_token_create)(user=user))[1]
    memory = await sync_to_async(make_memory)(owner=user, content="Is allergic to peanuts.")

    response = await post(conversation.id, token, "Is peanut butter fine for a snack?")

    name, done = response.events()[-1]
    assert name == "done" and done["assistant_message"]["memories_used"] == [memory.pk]


@TURN
def test_retract_through_the_api_leaves_the_next_turn_without_it(
    api_client: Client, user: User, other_user: User, conversation: Conversation, fake_model: Any
) -> None:
    memory = make_memory(owner=user, content="Lives in Lyon.")
    assert send(api_client, conversation, "Weather in Lyon?")["assistant_message"]["memories_used"] == [memory.pk]

    response = api_client.post(f"/api/memories/{memory.pk}/retract")

    assert response.status_code == 200
    assert response.json()["invalid_reason"] == "retracted" and response.json()["invalid_at"]
    assert send(api_client, conversation, "Weather in Lyon today?")["assistant_message"]["memories_used"] == []
    assert api_client.post(f"/api/memories/{memory.pk}/retract").status_code == 409
    theirs = make_memory(owner=other_user, content="Lives in Nice.")
    assert api_client.post(f"/api/memories/{theirs.pk}/retract").status_code == 404
    assert "detail" in api_client.post(f"/api/memories/{theirs.pk}/retract").json()


@pytest.mark.django_db
def test_used_memories_show_under_the_reply_with_links_and_actions(client: Client, user: User) -> None:
    client.force_login(user)
    from chat.services import conversation_create

    conversation = conversation_create(user=user)
    make_message(conversation=conversation, content="Which phone?")
    reply = make_message(conversation=conversation, role=Message.Role.ASSISTANT, content="A small one.")
    memory = make_memory(owner=user, content="Prefers <b>small</b> phones.")
    MemoryUse.objects.create(memory=memory, message=reply)

    page = client.get(reverse("chat:conversation", args=[conversation.pk])).content.decode()

    assert page.count("Used 1 memory") == 1 and "<details" in page
    assert f'href="/settings/memory/#memory-{memory.pk}"' in page
    assert "Prefers &lt;b&gt;small&lt;/b&gt; phones." in page
    assert reverse("memory:reply_wrong", args=[memory.pk]) in page
    assert reverse("memory:reply_outdated", args=[memory.pk]) in page


@pytest.mark.django_db
def test_wrong_deletes_and_outdated_retracts_from_under_a_reply(client: Client, user: User, other_user: User) -> None:
    client.force_login(user)
    wrong = make_memory(owner=user, content="Has two dogs.")
    outdated = make_memory(owner=user, content="Works at Acme.")
    theirs = make_memory(owner=other_user, content="Lives in Nice.")
    htmx = {"HX-Request": "true"}

    answer = client.post(reverse("memory:reply_wrong", args=[wrong.pk]), {"message": "7"}, headers=htmx)
    assert answer.status_code == 200 and "Deleted" in answer.content.decode()
    assert not Memory.objects.filter(pk=wrong.pk).exists()

    answer = client.post(reverse("memory:reply_outdated", args=[outdated.pk]), {"message": "7"}, headers=htmx)
    assert answer.status_code == 200 and "Moved to History" in answer.content.decode()
    outdated.refresh_from_db()
    assert outdated.invalid_reason == "retracted" and outdated.invalid_at is not None

    for name in ("memory:reply_wrong", "memory:reply_outdated"):
        assert client.post(reverse(name, args=[theirs.pk]), headers=htmx).status_code == 404
    assert Memory.objects.get(pk=theirs.pk).invalid_at is None


@pytest.mark.django_db
def test_wrong_asks_in_the_line_first_and_cancel_puts_it_back(client: Client, user: User, other_user: User) -> None:
    client.force_login(user)
    memory = make_memory(owner=user, content="Has two dogs.")
    theirs = make_memory(owner=other_user, content="Lives in Nice.")
    url, htmx = reverse("memory:reply_wrong", args=[memory.pk]), {"HX-Request": "true"}

    asked = client.get(url, {"message": "7"}, headers=htmx).content.decode()
    assert 'class="reply-memory-confirm"' in asked and "Delete this memory permanently?" in asked
    assert 'id="message-7-memory-' in asked and "hx-confirm" not in asked
    assert Memory.objects.filter(pk=memory.pk).exists()  # asking deletes nothing

    back = client.get(url, {"message": "7", "cancel": "1"}, headers=htmx).content.decode()
    assert "reply-memory-confirm" not in back and "data-reply-focus" in back
    assert client.get(reverse("memory:reply_wrong", args=[theirs.pk]), headers=htmx).status_code == 404
