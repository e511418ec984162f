"""API authentication: a personal bearer token, or the browser session (with CSRF).

A request that sends a bearer token is judged by that token alone: a wrong, revoked or expired one
answers 401 (never a CSRF 403 from falling through to the session). Failed tokens are counted per
address (accounts/throttle.py); past the limit the address's failed attempts answer 429 with
Retry-After, while a valid token is let in (the limit refuses guesses, not the owner sharing an
address with a guesser, and a valid token never waits for the counters' store). Without a signed-in
session there is nothing for CSRF to protect, so an anonymous request answers 401 as well.

`is_token_request` tells a route whether the token authenticated it: what only the signed-in person
may do (create or revoke tokens) answers 403 to a token. A token is also held to its scopes
(accounts/scopes.py): a request outside them answers 403; `request_token` is the token's row.
"""

from __future__ import annotations

from typing import Any

from channels.db import database_sync_to_async
from django.http import HttpRequest
from django.utils.translation import gettext as _
from ninja.errors import AuthenticationError, HttpError
from ninja.security import HttpBearer, SessionAuth

from accounts.middleware import user_language_activate
from accounts.models import ApiToken
from accounts.scopes import token_allows
from accounts.services import api_token_check
from accounts.throttle import bearer_failure_record, bearer_retry_after


class TooManyAuthFailures(HttpError):
    def __init__(self, retry_after: int) -> None:
        super().__init__(
            429,
            _("Too many failed token attempts from this address. Try again in %(seconds)d s.")
            % {"seconds": retry_after},
        )
        self.retry_after = retry_after


TOKEN_AUTHENTICATED = "_memora_token_authenticated"


def is_token_request(request: HttpRequest) -> bool:
    """Whether a bearer token (rather than the signed-in session) authenticated `request`."""
    return bool(getattr(request, TOKEN_AUTHENTICATED, False))


def request_token(request: HttpRequest) -> ApiToken | None:
    """The token that authenticated `request`, or None for the signed-in session."""
    token = getattr(request, TOKEN_AUTHENTICATED, None)
    return token if isinstance(token, ApiToken) else None


class BearerTokenAuth(HttpBearer):
    def authenticate(self, request: HttpRequest, token: str) -> Any:
        row = api_token_check(token=token)
        user = row.user if row is not None else None
        if row is None or user is None:
            retry_after = bearer_retry_after(request)
            if retry_after is not None:
                raise TooManyAuthFailures(retry_after)
            bearer_failure_record(request)
            raise AuthenticationError(401, _("Invalid, revoked or expired API token."))
        request.user = user
        user_language_activate(request, user)  # a token client gets its user's language too
        setattr(request, TOKEN_AUTHENTICATED, row)
        if not token_allows(row, request.path, request.method or "GET"):
            raise HttpError(403, _("This token's scopes do not allow this request."))
        return user


class SignedInSessionAuth(SessionAuth):
    """The session, with CSRF checked only when there is a signed-in user to protect."""

    def _get_key(self, request: HttpRequest) -> str | None:
        if not request.user.is_authenticated:
            return None
        return super()._get_key(request)


api_auth = [BearerTokenAuth(), SignedInSessionAuth(csrf=True)]


class _OffTheRequestThread:
    """For the routes that stream (a reply can take minutes), which are async: authentication runs in the
    event loop's thread pool, like the turn's own database work. Django would otherwise make a thread
    for the request to run it in (and, on SQLite, open a connection there), and that thread's database
    connection would stay checked out of the pool until the stream ends: a hundred open streams would
    hold a hundred connections. The pool's threads keep theirs (SQLite) or give them back at once."""

    async def __call__(self, request: HttpRequest) -> Any:
        authenticate = super().__call__  # type: ignore[misc]
        return await database_sync_to_async(authenticate, thread_sensitive=False)(request)


class StreamingBearerTokenAuth(_OffTheRequestThread, BearerTokenAuth):
    pass


class StreamingSessionAuth(_OffTheRequestThread, SignedInSessionAuth):
    pass


# The OpenAPI document names security schemes after their classes: these are the same two schemes.
StreamingBearerTokenAuth.__name__ = BearerTokenAuth.__name__
StreamingSessionAuth.__name__ = SignedInSessionAuth.__name__

streaming_auth = [StreamingBearerTokenAuth(), StreamingSessionAuth(csrf=True)]
