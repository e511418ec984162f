"""WebSocket routes of every app, combined like config/urls.py combines HTTP routes."""

from typing import Any

websocket_urlpatterns: list[Any] = []
