"""The WebSocket handshake is accepted only from the site's own origin: scheme, host and port."""

from __future__ import annotations

from typing import Any

import pytest
from channels.db import database_sync_to_async
from channels.testing.websocket import WebsocketCommunicator
from django.conf import settings as django_settings
from django.test import Client

from chat.models import Conversation
from config.asgi import application

pytestmark = pytest.mark.django_db(transaction=True)


def _cookie(user: Any) -> str:
    client = Client()
    client.force_login(user)
    return client.cookies[django_settings.SESSION_COOKIE_NAME].value


async def handshake(
    conversation: Conversation, *, origin: str | None, host: str = "127.0.0.1:8000", scheme: str = "ws", **extra: str
) -> bool:
    cookie = await database_sync_to_async(_cookie)(conversation.owner)
    headers = [(b"host", host.encode()), (b"cookie", f"{django_settings.SESSION_COOKIE_NAME}={cookie}".encode())]
    if origin is not None:
        headers.append((b"origin", origin.encode()))
    headers += [(name.replace("_", "-").encode(), value.encode()) for name, value in extra.items()]
    socket = WebsocketCommunicator(application, f"/ws/c/{conversation.pk}/", headers=headers)
    socket.scope["scheme"] = scheme
    connected, _ = await socket.connect()
    if connected:
        await socket.disconnect()
    return bool(connected)


async def test_the_sites_own_origin_is_accepted(conversation: Conversation) -> None:
    assert await handshake(conversation, origin="http://127.0.0.1:8000")


@pytest.mark.parametrize(
    "origin",
    [
        "http://127.0.0.1:8001",  # another program on another port of the same host
        "http://127.0.0.1",  # port 80 is another origin than port 8000
        "https://127.0.0.1:8000",  # another scheme
        "http://localhost:8000",  # another host name, even an allowed one
        "https://evil.example",
        "null",  # sandboxed frames and file:// pages
        "http://user@127.0.0.1:8000",
    ],
)
async def test_a_foreign_origin_is_refused(conversation: Conversation, origin: str) -> None:
    assert not await handshake(conversation, origin=origin)


async def test_a_handshake_without_an_origin_is_refused(conversation: Conversation) -> None:
    assert not await handshake(conversation, origin=None)


async def test_default_ports_are_the_same_origin(conversation: Conversation) -> None:
    assert await handshake(conversation, origin="http://localhost", host="localhost:80")
    assert await handshake(conversation, origin="https://localhost:443", host="localhost", scheme="wss")


async def test_a_host_outside_allowed_hosts_is_refused_even_from_itself(conversation: Conversation) -> None:
    assert not await handshake(conversation, origin="http://evil.example", host="evil.example")


async def test_csrf_trusted_origins_are_matched_with_their_scheme_and_port(
    conversation: Conversation, settings: Any
) -> None:
    settings.CSRF_TRUSTED_ORIGINS = ["https://app.example.com", "https://*.example.org:8443"]
    assert await handshake(conversation, origin="https://app.example.com")
    assert await handshake(conversation, origin="https://chat.example.org:8443")
    assert not await handshake(conversation, origin="http://app.example.com")
    assert not await handshake(conversation, origin="https://app.example.com:8443")
    assert not await handshake(conversation, origin="https://chat.example.org")


async def test_behind_an_https_proxy_the_forwarded_scheme_is_the_sites_own(
    conversation: Conversation, settings: Any
) -> None:
    settings.ALLOWED_HOSTS = ["memora.example.com"]
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    proxied = {"x_forwarded_proto": "https"}
    assert await handshake(conversation, origin="https://memora.example.com", host="memora.example.com", **proxied)
    assert not await handshake(conversation, origin="http://memora.example.com", host="memora.example.com", **proxied)
    # Without the trusted header the socket's own scheme counts.
    settings.SECURE_PROXY_SSL_HEADER = None
    assert not await handshake(conversation, origin="https://memora.example.com", host="memora.example.com", **proxied)


def test_a_refused_handshake_does_not_listen_on_the_channel_layer() -> None:
    from channels.layers import get_channel_layer

    from core.security import _Denier

    assert get_channel_layer(_Denier.channel_layer_alias) is None
