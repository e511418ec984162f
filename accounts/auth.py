"""API authentication: a personal bearer token, or the browser session (with CSRF)."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from ninja.security import HttpBearer, SessionAuth

from accounts.services import api_token_authenticate


class BearerTokenAuth(HttpBearer):
    def authenticate(self, request: HttpRequest, token: str) -> Any:
        user = api_token_authenticate(token=token)
        if user is not None:
            request.user = user
        return user


api_auth = [BearerTokenAuth(), SessionAuth(csrf=True)]
