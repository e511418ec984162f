"""Start-up safety and the WebSocket origin check (docs/security.md).

`require_secret_key` is called by every entry point that serves or works (ASGI, WSGI, the Celery
worker): with debug off and no DJANGO_SECRET_KEY, or a weak one (short, repetitive or well known), the
process stops with one line saying why.
Settings themselves never refuse to load, so `manage.py makemigrations`, mypy and the tests work
without one.

`WebSocketOriginValidator` accepts a WebSocket handshake only from the site's own origin: the same
scheme, host and port as the request (or one of CSRF_TRUSTED_ORIGINS, exactly as Django's CSRF check
treats them). Channels' AllowedHostsOriginValidator compares host names only, so a page served by
another program on another port of the same host could open a signed-in user's socket.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from channels.security.websocket import WebsocketDenier
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.http.request import split_domain_port, validate_host
from django.utils.http import is_same_domain

MISSING_SECRET_KEY = (
    "Memora will not start: DJANGO_SECRET_KEY is not set and debug is off. Set DJANGO_SECRET_KEY to a long "
    "random value (docs/security.md), or DJANGO_DEBUG=1 for local development (`make run` does this for you)."
)
WEAK_SECRET_KEY = (
    "Memora will not start: DJANGO_SECRET_KEY is too weak ({why}) and debug is off. Set it to a long random "
    "value, e.g. the output of `python -c 'import secrets; print(secrets.token_urlsafe(50))'` (docs/security.md)."
)
DEFAULT_PORTS = {"http": "80", "https": "443"}
# Keys copied from examples and tutorials: anyone can sign sessions with them.
_KNOWN_KEYS = {
    "changeme",
    "change-me",
    "secret",
    "secret-key",
    "secret_key",
    "your-secret-key",
    "mysecretkey",
    "insecure",
    "development",
    "django",
    "memora",
    "password",
    "test",
    "xxx",
}


def require_secret_key() -> None:
    """Stop the process with a one-line explanation when there is no secret key to sign sessions with."""
    try:
        key = settings.SECRET_KEY
    except ImproperlyConfigured:  # Django refuses an empty SECRET_KEY on access
        key = ""
    if not key:
        raise SystemExit(MISSING_SECRET_KEY)
    if not settings.DEBUG and (why := weak_key(key)):
        raise SystemExit(WEAK_SECRET_KEY.format(why=why))


def weak_key(key: str) -> str | None:
    """Why `key` cannot sign sessions safely, or None: short, too few distinct characters, Django's
    "django-insecure-" example keys, or a well-known value."""
    if key.strip().lower() in _KNOWN_KEYS or key.startswith("django-insecure-"):
        return "a well-known value"
    if len(key) < 50:
        return f"{len(key)} characters, at least 50 needed"
    if len(set(key)) < 5:
        return "fewer than 5 different characters"
    return None


def _origin(scheme: str, netloc: str) -> tuple[str, str, str] | None:
    """(scheme, host, port) with the scheme's default port filled in; None when malformed."""
    scheme = scheme.lower()
    if scheme not in DEFAULT_PORTS or not netloc or "@" in netloc:
        return None
    host, port = split_domain_port(netloc)
    if not host:
        return None
    return scheme, host, port or DEFAULT_PORTS[scheme]


def _header(scope: dict[str, Any], name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key == name:
            try:
                return str(value.decode("latin1"))
            except UnicodeDecodeError:
                return None
    return None


def _own_scheme(scope: dict[str, Any]) -> str:
    """http or https, as the browser sees the site: the socket's own scheme, or the proxy's word
    for it when MEMORA_HTTPS trusts X-Forwarded-Proto (SECURE_PROXY_SSL_HEADER)."""
    proxy_header = settings.SECURE_PROXY_SSL_HEADER
    if proxy_header:
        name, secure_value = proxy_header
        header = name.removeprefix("HTTP_").lower().replace("_", "-").encode()
        forwarded = _header(scope, header)
        if forwarded is not None:
            return "https" if forwarded.split(",")[0].strip() == secure_value else "http"
    return "https" if scope.get("scheme") in ("wss", "https") else "http"


def _trusted(origin: tuple[str, str, str], pattern: str) -> bool:
    """One CSRF_TRUSTED_ORIGINS entry: scheme and port must match; `*.` allows subdomains (as Django)."""
    parts = urlsplit(pattern)
    wildcard = parts.netloc.startswith("*.")
    trusted = _origin(parts.scheme, parts.netloc[1:] if wildcard else parts.netloc)
    if trusted is None:
        return False
    scheme, host, port = trusted
    if (scheme, port) != (origin[0], origin[2]):
        return False
    return is_same_domain(origin[1], host) if wildcard else host == origin[1]


def origin_allowed(scope: dict[str, Any]) -> bool:
    """Whether the handshake's Origin is the site's own origin (scheme, host and port) or trusted."""
    raw_origin = _header(scope, b"origin")
    host_header = _header(scope, b"host")
    if not raw_origin or not host_header:
        return False
    parts = urlsplit(raw_origin)
    origin = _origin(parts.scheme, parts.netloc)
    if origin is None:
        return False
    own = _origin(_own_scheme(scope), host_header)
    if own is None or not validate_host(own[1], settings.ALLOWED_HOSTS):
        return False
    if origin == own:
        return True
    return any(_trusted(origin, pattern) for pattern in settings.CSRF_TRUSTED_ORIGINS)


class _Denier(WebsocketDenier):
    """Channels' denier, without the channel layer: a consumer reads its layer channel from the start,
    so each refused handshake would hold a blocking Redis read until the socket is gone."""

    channel_layer_alias = "refused-sockets-use-no-channel-layer"  # not configured: get_channel_layer() is None


class WebSocketOriginValidator:
    """ASGI middleware: refuse (close before accepting) a handshake from any other origin."""

    def __init__(self, application: Any) -> None:
        self.application = application

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        if scope["type"] == "websocket" and not origin_allowed(scope):
            return await _Denier()(scope, receive, send)
        return await self.application(scope, receive, send)
