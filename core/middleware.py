"""Middleware of our own."""

from __future__ import annotations

from typing import Any

import csp.middleware as csp
from asgiref.sync import iscoroutinefunction, markcoroutinefunction, sync_to_async
from django.conf import settings
from django.contrib.auth import middleware as auth
from django.contrib.messages import middleware as messages
from django.contrib.sessions import middleware as sessions
from django.http import HttpRequest, HttpResponse
from django.middleware import clickjacking, common, csrf, locale, security
from django.utils.deprecation import MiddlewareMixin
from django.utils.translation import gettext_lazy
from whitenoise.middleware import WhiteNoiseMiddleware

from core.api_errors import error_response, is_api_request


class BothChains:
    """A middleware that runs in the chain Django builds, sync or async, without a thread hop under ASGI:
    an async chain's requests go to `_acall`, a sync chain's to `_call`. Call `_chain` from `__init__`."""

    sync_capable = True
    async_capable = True
    get_response: Any

    def _chain(self, get_response: Any) -> None:
        self.get_response = get_response
        self.async_mode = iscoroutinefunction(get_response)
        if self.async_mode:
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest) -> Any:
        return self._acall(request) if self.async_mode else self._call(request)

    def _call(self, request: HttpRequest) -> Any:
        raise NotImplementedError

    async def _acall(self, request: HttpRequest) -> Any:
        raise NotImplementedError


class StaticFilesMiddleware(BothChains, WhiteNoiseMiddleware):
    """WhiteNoise, able to run in an async middleware chain.

    WhiteNoise's middleware is synchronous only: under ASGI Django would then run every request
    (chat turns included) through a thread and back, on the way to each first token.
    Here a request outside the static prefix goes straight on; only a static file is looked up and
    served in a thread, by WhiteNoise as before.
    """

    def __init__(self, get_response: Any) -> None:
        WhiteNoiseMiddleware.__init__(self, get_response)
        self._chain(get_response)

    def _call(self, request: HttpRequest) -> Any:
        return WhiteNoiseMiddleware.__call__(self, request)

    async def _acall(self, request: HttpRequest) -> Any:
        if request.path_info.startswith(self.static_prefix):
            response = await sync_to_async(self._static_response, thread_sensitive=False)(request)
            if response is not None:
                return response
        return await self.get_response(request)

    def _static_response(self, request: HttpRequest) -> Any:
        path = request.path_info
        static_file = self.find_file(path) if self.autorefresh else self.files.get(path)
        return self.serve(static_file, request) if static_file is not None else None


# --- Django's middleware, without a thread hop per hook ---------------------------------------------------
#
# Under ASGI, Django runs each hook of a MiddlewareMixin in a thread: one hop each, before every chat
# turn's first token. The classes below are Django's, with the hooks that only read the request and set
# attributes and headers run on the event loop; a hook that may reach the database or the disk for this
# request (saving a session, stored messages, a CSRF secret kept in the session, a multipart form to
# parse, rendering a CSRF rejection) still runs in a thread, as Django would run it. In a sync chain
# (WSGI, the test client) they are Django's classes unchanged. `check --deploy` counts the four that stand
# for Django's security, session, CSRF and clickjacking middleware as those (core/checks.py).


class _InlineHooks:
    get_response: Any
    process_request: Any
    process_response: Any

    def _request_blocks(self, request: HttpRequest) -> bool:
        """Whether process_request may block for this request (it then runs in a thread)."""
        return False

    def _response_writes(self, request: HttpRequest) -> bool:
        """Whether process_response may touch the database for this request (it then runs in a thread)."""
        return False

    async def __acall__(self, request: HttpRequest) -> Any:
        response = None
        if hasattr(self, "process_request"):
            if self._request_blocks(request):
                response = await sync_to_async(self.process_request, thread_sensitive=True)(request)
            else:
                response = self.process_request(request)
        response = response or await self.get_response(request)
        if hasattr(self, "process_response"):
            if self._response_writes(request):
                response = await sync_to_async(self.process_response, thread_sensitive=True)(request, response)
            else:
                response = self.process_response(request, response)
        return response


class SecurityMiddleware(_InlineHooks, security.SecurityMiddleware):
    pass  # the HTTPS redirect and the security headers: settings and the request's headers only


class XFrameOptionsMiddleware(_InlineHooks, clickjacking.XFrameOptionsMiddleware):
    pass


class SessionMiddleware(_InlineHooks, sessions.SessionMiddleware):
    """request.session stays lazy (loaded, in a thread, by what reads it); the response's hook runs in a
    thread only when it saves the session."""

    def _response_writes(self, request: HttpRequest) -> bool:
        session = getattr(request, "session", None)
        return session is not None and (session.modified or settings.SESSION_SAVE_EVERY_REQUEST)


class _Rejected(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class CsrfViewMiddleware(_InlineHooks, csrf.CsrfViewMiddleware):
    """The token and origin checks run on the event loop: the body of an ASGI request is read before the
    chain runs. In a thread still: a secret kept in the session (CSRF_USE_SESSIONS), a multipart form to
    parse (its files may go to disk), and a rejection (the failure view renders a page; a project's own
    view may read the database)."""

    def __init__(self, get_response: Any) -> None:
        super().__init__(get_response)
        if self.async_mode:  # Django runs a sync process_view in a thread: give it a coroutine instead
            self.process_view = self._aprocess_view  # type: ignore[method-assign, assignment]

    def _request_blocks(self, request: HttpRequest) -> bool:
        return bool(settings.CSRF_USE_SESSIONS)

    def _response_writes(self, request: HttpRequest) -> bool:
        return bool(settings.CSRF_USE_SESSIONS and request.META.get("CSRF_COOKIE_NEEDS_UPDATE"))

    async def _aprocess_view(self, request: HttpRequest, callback: Any, args: Any, kwargs: Any) -> Any:
        view = csrf.CsrfViewMiddleware.process_view
        try:
            if settings.CSRF_USE_SESSIONS or _unparsed_multipart(request):
                return await sync_to_async(view, thread_sensitive=True)(self, request, callback, args, kwargs)
            return view(self, request, callback, args, kwargs)
        except _Rejected as rejected:
            reject = csrf.CsrfViewMiddleware._reject  # type: ignore[attr-defined]
            return await sync_to_async(reject, thread_sensitive=True)(self, request, rejected.reason)

    def _reject(self, request: HttpRequest, reason: str) -> Any:
        if self.async_mode:
            raise _Rejected(reason)  # rendered by _aprocess_view, in a thread
        return super()._reject(request, reason)  # type: ignore[misc]


def _unparsed_multipart(request: HttpRequest) -> bool:
    return request.method == "POST" and request.content_type == "multipart/form-data" and not hasattr(request, "_post")


class LocaleMiddleware(_InlineHooks, locale.LocaleMiddleware):
    pass  # reads Accept-Language (no database); accounts.middleware then applies a user's own setting


class CommonMiddleware(_InlineHooks, common.CommonMiddleware):
    pass


class AuthenticationMiddleware(_InlineHooks, auth.AuthenticationMiddleware):
    pass  # request.user stays lazy: it is loaded (in a thread) only by what reads it


class MessageMiddleware(_InlineHooks, messages.MessageMiddleware):
    def _response_writes(self, request: HttpRequest) -> bool:
        storage = getattr(request, "_messages", None)
        return storage is None or storage.used or storage.added_new


class CSPMiddleware(_InlineHooks, csp.CSPMiddleware):
    pass


class ApiErrorMiddleware(_InlineHooks, MiddlewareMixin):
    """Under /api/, Django's own failures answer the API's one error shape (core/api_errors.py), not HTML.

    The routes answer ErrorOut themselves; what reaches here in another form comes from Django around
    them: an unknown path (404), a method the route does not have (405, ninja's empty answer), a request
    Django refused before any route ran (400, or 413 when the body was over DATA_UPLOAD_MAX_MEMORY_SIZE),
    and an unhandled exception (500, Django's error page). Headers (Allow, Retry-After) are kept.
    """

    def process_response(self, request: HttpRequest, response: HttpResponse) -> HttpResponse:
        if not _in_another_shape(request, response):
            return response
        status = response.status_code
        if status == 400 and _declared_length(request) > (settings.DATA_UPLOAD_MAX_MEMORY_SIZE or 0) > 0:
            status = 413
        replaced = error_response(status, str(_DETAILS.get(status) or response.reason_phrase))
        for header in ("Allow", "Retry-After", "WWW-Authenticate"):
            if header in response:
                replaced[header] = response[header]
        return replaced


def _in_another_shape(request: HttpRequest, response: HttpResponse) -> bool:
    """An API failure not in JSON (the routes' own are)."""
    failed = response.status_code >= 400 and is_api_request(request)
    return failed and not response.get("Content-Type", "").startswith("application/json")


def _declared_length(request: HttpRequest) -> int:
    try:
        return int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return 0


_DETAILS = {
    400: gettext_lazy("Bad request."),
    404: gettext_lazy("No such API route."),
    405: gettext_lazy("This method is not allowed on this route."),
    413: gettext_lazy("The request body is too large."),
    500: gettext_lazy("The server failed while answering this request."),
}
