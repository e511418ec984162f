"""WebSocket routes of every app, combined like config/urls.py combines HTTP routes."""

from typing import Any

from chat.routing import websocket_urlpatterns as chat_websocket_urlpatterns

websocket_urlpatterns: list[Any] = [*chat_websocket_urlpatterns]
