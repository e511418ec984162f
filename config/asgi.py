"""ASGI entry point: HTTP through Django, WebSockets through Channels (origin check > auth > routes)."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

from config.security import WebSocketOriginValidator, require_secret_key

require_secret_key()
django_asgi_app = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402

from chat.turn.runner import lifespan  # noqa: E402
from config.routing import websocket_urlpatterns  # noqa: E402

application = ProtocolTypeRouter(
    {
        "http": django_asgi_app,
        "websocket": WebSocketOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns))),
        # Server start and stop: recover replies left by a process that died, save running ones on exit.
        "lifespan": lifespan,
    }
)
