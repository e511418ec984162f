"""ASGI entry point: HTTP through Django, WebSockets through Channels (origin check > auth > routes), and
the MCP server at /mcp when the connected tools' app is installed (connect/asgi.py)."""

import os
from typing import Any

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

from core.security import WebSocketOriginValidator, require_secret_key

require_secret_key()
django_asgi_app = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from django.apps import apps  # noqa: E402

from chat.turn.runner import lifespan  # noqa: E402
from config.routing import websocket_urlpatterns  # noqa: E402

http_app: Any = django_asgi_app
lifespan_app: Any = lifespan
if apps.is_installed("connect"):
    from connect.asgi import with_mcp, with_mcp_lifespan

    http_app, lifespan_app = with_mcp(django_asgi_app), with_mcp_lifespan(lifespan)

if apps.is_installed("memory"):
    from memory.embeddings import warm_up

    warm_up()  # the embedding model and its reference vectors, before the first turns need them

application = ProtocolTypeRouter(
    {
        "http": http_app,
        "websocket": WebSocketOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns))),
        # Server start and stop: recover replies left by a process that died, save running ones on exit;
        # the MCP server's sessions run between the two.
        "lifespan": lifespan_app,
    }
)
