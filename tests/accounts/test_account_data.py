"""Settings → Account and its API (SPEC §8): download all my data, delete my account."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any, cast

import pytest
from channels.db import database_sync_to_async
from channels.testing.websocket import WebsocketCommunicator
from django.conf import settings as django_settings
from django.test import Client
from django.urls import reverse

from accounts import data, export
from accounts.models import ApiToken, User
from accounts.services import api_token_create
from chat import consumers
from chat.models import Conversation, Message
from chat.services import conversation_create
from config.asgi import application
from tests.factories import ConversationFactory, UserFactory
from tests.helpers import make_user, say

PASSWORD = "correct-horse-battery"  # tests.factories.UserFactory's


def _login(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _document(response: Any) -> dict[str, Any]:
    assert response.streaming
    return cast(dict[str, Any], json.loads(b"".join(response.streaming_content)))


def test_the_registry_holds_each_apps_section_and_eraser() -> None:
    names = set(data.exporters())
    assert "conversations" in names
    assert len(data.erasers()) >= 1


@pytest.mark.django_db
def test_the_export_holds_every_conversation_message_and_memory_of_the_user_and_nothing_else(
    django_assert_max_num_queries: Any,
) -> None:
    alice, bob = make_user(username="alice"), make_user(username="bob")
    for user, word in ((alice, "apricot"), (bob, "BOBSECRET")):
        for n in range(3):
            conversation = conversation_create(user=user, temporary=n == 2)
            say(conversation, f"{word} message {n}", reply=f"{word} reply {n}")
    User.objects.filter(pk=alice.pk).update(memory_review="all", language="zh-hans")
    alice.refresh_from_db()

    response = _login(alice).get(reverse("account_export"))

    assert response.status_code == 200
    assert response["Content-Disposition"].startswith("attachment;")
    document = _document(response)
    assert document["account"]["username"] == "alice"
    assert document["settings"] == {"memory_enabled": True, "memory_review": "all", "language": "zh-hans"}
    conversations = document["conversations"]
    assert len(conversations) == 3 and [c["temporary"] for c in conversations].count(True) == 1
    contents = [m["content"] for c in conversations for m in c["messages"]]
    assert sorted(contents) == sorted(
        [f"apricot message {n}" for n in range(3)] + [f"apricot reply {n}" for n in range(3)]
    )
    assert {"role", "content", "status", "created_at"} <= set(conversations[0]["messages"][0])
    assert "BOBSECRET" not in json.dumps(document)


@pytest.mark.django_db
@pytest.mark.needs_memory
def test_the_export_holds_memories_with_history_sources_and_this_releases_fields() -> None:
    from memory import services
    from memory.models import Memory, MemorySource

    alice = make_user(username="alice")
    conversation = conversation_create(user=alice)
    source = say(conversation, "I moved to Lyon last spring.")
    first = services.memory_add(user=alice, content="Lives in Lyon.")
    MemorySource.objects.create(memory=first, message=source)
    services.memory_edit(user=alice, memory=first, content="Lives in Lyon, France.")
    Memory.objects.create(
        owner=alice, content="Is vegetarian.", suggested=True, sensitive=True, pinned=True, key="diet"
    )
    Memory.objects.create(owner=make_user(), content="Someone else's memory.")

    document = _document(api_client_for(alice).get("/api/me/export"))

    memories = {m["content"]: m for m in document["memories"]}
    assert set(memories) == {"Lives in Lyon.", "Lives in Lyon, France.", "Is vegetarian."}
    old, new = memories["Lives in Lyon."], memories["Lives in Lyon, France."]
    assert old["status"] == "invalid" and old["superseded_by"] == new["id"] and new["supersedes"] == old["id"]
    assert new["sources"] == [
        {"message_id": source.pk, "conversation_id": str(conversation.pk), "excerpt": "I moved to Lyon last spring."}
    ]
    suggested = memories["Is vegetarian."]
    assert suggested["status"] == "suggested" and suggested["pinned"] and suggested["sensitive"]
    assert {"key", "expires_at", "last_used_at", "suggested"} <= set(suggested)


def api_client_for(user: Any) -> Client:
    client = Client()
    client.defaults["HTTP_AUTHORIZATION"] = f"Bearer {api_token_create(user=user)[1]}"
    return client


@pytest.mark.django_db
def test_the_export_is_written_in_pieces() -> None:
    alice = make_user()
    conversation = conversation_create(user=alice)
    Message.objects.bulk_create(
        [Message(conversation=conversation, user=alice, role="user", content="x" * 1000) for _ in range(300)]
    )
    pieces = list(export.chunks(alice))
    assert len(pieces) > 3 and max(len(p) for p in pieces) < 2 * export.PIECE_CHARS
    assert len(json.loads("".join(pieces))["conversations"][0]["messages"]) == 300


@pytest.mark.django_db
def test_deleting_the_account_with_a_wrong_password_answers_403_and_deletes_nothing() -> None:
    alice = make_user()
    say(conversation_create(user=alice), "Keep me.")
    client = api_client_for(alice)

    response = client.delete("/api/me", {"password": "nope"}, content_type="application/json")

    assert response.status_code == 403
    assert response.json() == {"detail": "The password is not correct; nothing was deleted."}
    assert User.objects.filter(pk=alice.pk).exists() and Message.objects.filter(user=alice).count() == 2
    assert client.get("/api/me").status_code == 200


@pytest.mark.django_db
def test_deleting_the_account_answers_204_and_its_tokens_stop_at_once() -> None:
    alice, bob = make_user(), make_user()
    say(conversation_create(user=alice), "Delete me.")
    say(conversation_create(user=bob), "Not me.")
    client = api_client_for(alice)
    bob_client = api_client_for(bob)

    assert client.delete("/api/me", {"password": PASSWORD}, content_type="application/json").status_code == 204

    assert client.get("/api/me").status_code == 401
    assert not User.objects.filter(pk=alice.pk).exists()
    assert not ApiToken.objects.filter(user_id=alice.pk).exists()
    assert bob_client.get("/api/me").status_code == 200 and Message.objects.filter(user=bob).count() == 2


@pytest.mark.django_db
def test_deleting_the_account_needs_the_password_field() -> None:
    client = api_client_for(make_user())
    assert client.delete("/api/me", {}, content_type="application/json").status_code == 422
    assert client.delete("/api/me", {"password": PASSWORD, "x": 1}, content_type="application/json").status_code == 422


@pytest.mark.django_db
def test_the_account_page_is_linked_from_the_user_menu_and_warns_what_goes() -> None:
    client = _login(make_user())
    index = client.get("/").content.decode()
    assert reverse("account") in index

    page = client.get(reverse("account")).content.decode()

    assert "Download all my data" in page and reverse("account_export") in page
    assert "Delete my account" in page and "cannot be undone" in page
    assert 'type="password"' in page and 'id="conversation-list"' in page  # in the app's layout


@pytest.mark.django_db
def test_the_account_page_with_a_wrong_password_keeps_everything() -> None:
    alice = make_user()
    client = _login(alice)
    response = client.post(reverse("account"), {"password": "nope"})
    assert response.status_code == 403 and "not correct" in response.content.decode()
    assert User.objects.filter(pk=alice.pk).exists()


@pytest.mark.django_db
def test_the_account_page_deletes_the_account_and_signs_out() -> None:
    alice = make_user()
    client = _login(alice)
    response = client.post(reverse("account"), {"password": PASSWORD})
    assert response.status_code == 302 and response["Location"] == reverse("account_deleted")
    assert not User.objects.filter(pk=alice.pk).exists()
    assert client.get("/").status_code == 302  # signed out
    assert "is deleted" in client.get(reverse("account_deleted")).content.decode()


def test_the_account_page_needs_a_signed_in_user(client: Client) -> None:
    assert client.get(reverse("account")).status_code == 302
    assert client.get(reverse("account_export")).status_code == 302


@pytest.fixture
async def alice_socket() -> AsyncIterator[tuple[Any, WebsocketCommunicator]]:
    alice = await database_sync_to_async(lambda: UserFactory(username="alice"))()
    conversation = await database_sync_to_async(lambda: cast(Conversation, ConversationFactory(owner=alice)))()
    client = await database_sync_to_async(_login)(alice)
    cookie = client.cookies[django_settings.SESSION_COOKIE_NAME].value
    headers = [
        (b"origin", b"http://localhost"),
        (b"host", b"localhost"),
        (b"cookie", f"{django_settings.SESSION_COOKIE_NAME}={cookie}".encode()),
    ]
    socket = WebsocketCommunicator(application, f"/ws/c/{conversation.pk}/", headers=headers)
    connected, _ = await socket.connect()
    assert connected
    await socket.receive_from(timeout=5)
    yield alice, socket
    await socket.disconnect()


@pytest.mark.django_db(transaction=True)
async def test_deleting_the_account_closes_its_open_sockets(alice_socket: tuple[Any, WebsocketCommunicator]) -> None:
    alice, socket = alice_socket
    client = await database_sync_to_async(api_client_for)(alice)
    response = await database_sync_to_async(client.delete)(
        "/api/me", {"password": PASSWORD}, content_type="application/json"
    )
    assert response.status_code == 204
    closed = await socket.receive_output(timeout=5)
    assert closed == {"type": "websocket.close", "code": consumers.CLOSE_UNAUTHENTICATED}


@pytest.mark.django_db(transaction=True)
async def test_the_export_streams_under_asgi() -> None:
    from django.test import AsyncClient

    alice = await database_sync_to_async(make_user)()
    conversation = await database_sync_to_async(conversation_create)(user=alice)
    await database_sync_to_async(say)(conversation, "Streamed under ASGI.")
    client = AsyncClient()
    await client.aforce_login(alice)

    response: Any = await client.get(reverse("account_export"))

    assert response.status_code == 200 and response.is_async
    body = b"".join([piece async for piece in response.streaming_content])
    assert json.loads(body)["conversations"][0]["messages"][0]["content"] == "Streamed under ASGI."
