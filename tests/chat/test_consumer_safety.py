"""The chat socket answers bad frames with an error frame, shows the turn rate limit in place, and closes
when the user logs out or changes their password."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, cast

import pytest
from channels.db import database_sync_to_async
from channels.testing.websocket import WebsocketCommunicator
from django.conf import settings as django_settings
from django.test import Client

from chat import consumers
from chat.models import Conversation, Message
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
    # The page's first frame says it follows the conversation live (chat/runner.py).
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
        conversation = cast(Conversation, ConversationFactory(owner=alice))
        Message.objects.create(conversation=conversation, user=alice, role=Message.Role.USER)

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
