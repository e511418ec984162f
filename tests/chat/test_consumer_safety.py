"""The chat socket answers bad frames with an error frame, shows the turn rate limit in place, and closes
when the user logs out or changes their password, or is deactivated or deleted: at once when the channel
layer carries the news, and at the next turn it would start when it does not."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, cast

import pytest
from channels.db import database_sync_to_async
from channels.testing.websocket import WebsocketCommunicator
from django.conf import settings as django_settings
from django.contrib.sessions.models import Session
from django.test import Client
from django.utils import timezone

from chat import consumers
from chat.models import Conversation, Message, TurnStart
from config.asgi import application
from tests.factories import ConversationFactory, UserFactory

pytestmark = pytest.mark.django_db(transaction=True)


def _login(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def alice(db: None) -> Any:
    return UserFactory(username="alice")


@pytest.fixture
async def socket(alice: Any) -> AsyncIterator[WebsocketCommunicator]:
    conversation = await database_sync_to_async(lambda: cast(Conversation, ConversationFactory(owner=alice)))()
    client = await database_sync_to_async(_login)(alice)
    cookie = client.cookies[django_settings.SESSION_COOKIE_NAME].value
    headers = [
        (b"origin", b"http://localhost"),
        (b"host", b"localhost"),
        (b"cookie", f"{django_settings.SESSION_COOKIE_NAME}={cookie}".encode()),
    ]
    communicator = WebsocketCommunicator(application, f"/ws/c/{conversation.pk}/", headers=headers)
    connected, _ = await communicator.connect()
    assert connected
    # The page's first frame says it follows the conversation live (chat/turn/runner.py).
    assert 'id="turn-live"' in await communicator.receive_from(timeout=5)
    yield communicator
    await communicator.disconnect()


@pytest.mark.parametrize(
    "frame",
    [
        {"bytes_data": b"\x00\xff binary"},
        {"text_data": "{not json"},
        {"text_data": "[1, 2]"},
        {"text_data": '{"action": "send", "content": "a\\ud800b"}'},
        {"text_data": '{"action": "send", "content": "a\\u0000b"}'},
        {"text_data": '{"action": "send", "content": 5}'},
        {"text_data": "[" * 100_000 + "]" * 100_000},  # deeper than the JSON parser recurses
        {"text_data": '{"action": "send", "content": ' + "[" * 100_000 + "]" * 100_000 + "}"},
    ],
)
async def test_a_malformed_frame_gets_an_error_frame_and_the_socket_stays_open(
    socket: WebsocketCommunicator, frame: dict[str, Any]
) -> None:
    await socket.send_to(**frame)
    answer = await socket.receive_from(timeout=5)
    assert 'class="notice' in answer and "error" in answer
    await socket.send_to(text_data="{}")  # still open: the next frame is answered too
    assert "Unknown request" in await socket.receive_from(timeout=5)
    assert await database_sync_to_async(Message.objects.count)() == 0


async def test_the_turn_rate_limit_is_shown_in_place(socket: WebsocketCommunicator, alice: Any, settings: Any) -> None:
    settings.CHAT_USER_TURNS_PER_MINUTE = 1

    def one_turn_already() -> None:
        TurnStart.objects.create(user=alice, started_at=timezone.now())

    await database_sync_to_async(one_turn_already)()
    await socket.send_json_to({"action": "send", "content": "One more"})
    answer = await socket.receive_from(timeout=5)
    assert "the limit is 1 a minute" in answer
    assert 'data-state="rejected"' in answer


async def test_logging_out_closes_the_users_open_sockets(socket: WebsocketCommunicator, alice: Any) -> None:
    client = await database_sync_to_async(_login)(alice)
    await database_sync_to_async(client.post)("/accounts/logout/")
    closed = await socket.receive_output(timeout=5)
    assert closed == {"type": "websocket.close", "code": consumers.CLOSE_UNAUTHENTICATED}


async def test_changing_the_password_closes_the_users_open_sockets(socket: WebsocketCommunicator, alice: Any) -> None:
    def change() -> None:
        alice.set_password("a-brand-new-password")
        alice.save()

    await database_sync_to_async(change)()
    closed = await socket.receive_output(timeout=5)
    assert closed == {"type": "websocket.close", "code": consumers.CLOSE_UNAUTHENTICATED}


def _without_broadcast(change: Any) -> Any:
    """`change` done behind the app's back (a queryset update): no signal, no session.close message."""
    return database_sync_to_async(change)


@pytest.mark.parametrize(
    "change",
    [
        lambda alice: type(alice).objects.filter(pk=alice.pk).update(is_active=False),
        lambda alice: type(alice).objects.filter(pk=alice.pk).update(password="pbkdf2_sha256$1$x$changed"),
        lambda alice: Session.objects.all().delete(),
        lambda alice: type(alice).objects.filter(pk=alice.pk).delete(),
    ],
    ids=["deactivated", "password changed", "signed out", "deleted"],
)
async def test_a_socket_whose_access_ended_unannounced_closes_instead_of_starting_a_turn(
    socket: WebsocketCommunicator, alice: Any, change: Any
) -> None:
    await _without_broadcast(lambda: change(alice))()
    await socket.send_json_to({"action": "send", "content": "Still here?"})
    closed = await socket.receive_output(timeout=5)
    assert closed == {"type": "websocket.close", "code": consumers.CLOSE_UNAUTHENTICATED}
    assert await database_sync_to_async(Message.objects.count)() == 0
    assert await database_sync_to_async(TurnStart.objects.count)() == 0


async def test_a_socket_with_its_access_intact_starts_its_turn(socket: WebsocketCommunicator, alice: Any) -> None:
    await socket.send_json_to({"action": "send", "content": "Hello"})
    await socket.receive_from(timeout=5)
    assert await database_sync_to_async(Message.objects.filter(user=alice).count)() == 2
    assert await database_sync_to_async(TurnStart.objects.filter(user=alice).count)() == 1
