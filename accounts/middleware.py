"""The interface language of a signed-in user (SPEC §8, "Languages").

Django's LocaleMiddleware has already chosen from the browser (Accept-Language, else LANGUAGE_CODE).
A signed-in user whose `language` is set gets that language instead, on every page, HTMX fragment and
API answer; an empty setting keeps the browser's choice. Token clients are handled where the token is
checked (accounts/auth.py), since this middleware sees only the session.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import HttpRequest
from django.utils import translation
from django.utils.translation import trans_real

from core.middleware import BothChains


def user_language_activate(request: HttpRequest, user: Any) -> None:
    """Switch this request to the user's own language, when they chose one."""
    language = getattr(user, "language", "") if user is not None and user.is_authenticated else ""
    if language and translation.check_for_language(language):
        translation.activate(language)
        request.LANGUAGE_CODE = translation.get_language()


class UserLanguageMiddleware(BothChains):
    """After AuthenticationMiddleware: a signed-in user's `language` wins over the browser's."""

    def __init__(self, get_response: Any) -> None:
        self._chain(get_response)

    def _call(self, request: HttpRequest) -> Any:
        if settings.SESSION_COOKIE_NAME in request.COOKIES:
            user_language_activate(request, request.user)
        return self.get_response(request)

    async def _acall(self, request: HttpRequest) -> Any:
        # Without a session cookie nobody is signed in: no database read, no thread hop.
        if settings.SESSION_COOKIE_NAME in request.COOKIES:
            user = await request.auser()
            # request.user would load the same user again (in a thread): share the one just loaded.
            request._cached_user = user  # type: ignore[attr-defined]
            user_language_activate(request, user)
        return await self.get_response(request)


def background_language(user: Any) -> str:
    """The language for what is written without a browser to ask (a worker's notice, a stored marker):
    the user's setting, else LANGUAGE_CODE."""
    language = getattr(user, "language", "") or ""
    return language if language and translation.check_for_language(language) else settings.LANGUAGE_CODE


def socket_language(scope: dict[str, Any]) -> str:
    """A WebSocket's language, chosen as for a page: the signed-in user's setting, else the handshake's
    Accept-Language, else LANGUAGE_CODE."""
    user = scope.get("user")
    language = getattr(user, "language", "") or ""
    if language and translation.check_for_language(language):
        return translation.get_supported_language_variant(language)
    headers = dict(scope.get("headers") or [])
    accept = headers.get(b"accept-language", b"").decode("latin-1")
    for code, _ in trans_real.parse_accept_lang_header(accept):
        if code == "*":
            break
        try:
            return translation.get_supported_language_variant(code)
        except LookupError:
            continue
    return settings.LANGUAGE_CODE
