"""The MCP server inside Memora's ASGI application (config/asgi.py): requests under /mcp go to the SDK's
Streamable HTTP app once their bearer token is checked; everything else goes to Django.

The SDK's session manager runs for the life of the server (`lifespan` wraps the web process's own).
Sessions live in the process that opened them: behind several web processes, route a client to one
(sticky sessions), or it is asked to start a new session.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from channels.db import database_sync_to_async
from django.conf import settings
from django.http.request import split_domain_port, validate_host
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.transport_security import TransportSecuritySettings

from connect.mcp_server import server
from connect.tokens import Refusal, token_authenticate

MCP_PATH = "/mcp"
Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

# Host checking is ours (Django's ALLOWED_HOSTS, below); every request needs a token, so the SDK's
# localhost-only rebinding guard would only refuse a server reached by another name.
_mcp_app = server.streamable_http_app(
    streamable_http_path=MCP_PATH,
    transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
)


def is_mcp(scope: Scope) -> bool:
    path = str(scope.get("path", ""))
    return scope["type"] == "http" and (path == MCP_PATH or path.startswith(MCP_PATH + "/"))


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key.lower() == name:
            return bytes(value).decode("latin-1")
    return None


def _host_allowed(scope: Scope) -> bool:
    host, _port = split_domain_port(_header(scope, b"host") or "")
    allowed = list(settings.ALLOWED_HOSTS)
    if settings.DEBUG and not allowed:
        allowed = [".localhost", "127.0.0.1", "[::1]"]
    return bool(host) and validate_host(host, allowed)


async def _answer(send: Send, status: int, body: dict[str, Any], headers: list[tuple[bytes, bytes]]) -> None:
    data = json.dumps(body).encode()
    head = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode()), *headers]
    await send({"type": "http.response.start", "status": status, "headers": head})
    await send({"type": "http.response.body", "body": data})


async def _refuse(send: Send, refusal: Refusal) -> None:
    if refusal.status == 429:
        message = f"Too many failed token attempts from this address. Try again in {refusal.retry_after} s."
        await _answer(send, 429, {"error": "too_many_requests", "error_description": message},
                      [(b"retry-after", str(refusal.retry_after).encode())])  # fmt: skip
        return
    await _answer(
        send,
        401,
        {"error": "invalid_token", "error_description": "Missing, invalid, revoked or expired API token."},
        [(b"www-authenticate", b'Bearer realm="memora", error="invalid_token"')],
    )


async def mcp_app(scope: Scope, receive: Receive, send: Send) -> None:
    """/mcp: the token first (looked up again on every request), then the SDK."""
    if not _host_allowed(scope):
        await _answer(send, 400, {"error": "bad_request", "error_description": "Host not allowed."}, [])
        return
    client = scope.get("client") or ("", 0)
    found = await database_sync_to_async(token_authenticate)(
        header=_header(scope, b"authorization"), address=str(client[0])
    )
    if isinstance(found, Refusal):
        await _refuse(send, found)
        return
    # The session is bound to this principal: the same token must come with every later request.
    principal = AccessToken(
        token="memora",
        client_id=f"memora-token-{found.pk}",
        scopes=list(found.scopes),
        subject=str(found.user_id),
        claims={"token_id": found.pk},
    )
    await _mcp_app({**scope, "user": AuthenticatedUser(principal)}, receive, send)


def with_mcp(django_app: Any) -> ASGIApp:
    """An HTTP app sending /mcp to the MCP server and the rest to `django_app`."""

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if is_mcp(scope):
            await mcp_app(scope, receive, send)
        else:
            await django_app(scope, receive, send)

    return app


def with_mcp_lifespan(lifespan: Any) -> ASGIApp:
    """The web process's lifespan, with the MCP session manager running around it."""

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        async with server.session_manager.run():
            await lifespan(scope, receive, send)

    return app
