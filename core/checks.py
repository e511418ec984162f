"""`manage.py check --deploy` with Django's middleware run on the event loop (core/middleware.py).

Django's deploy checks for its security, session, CSRF and clickjacking middleware find the classes by
dotted name in MIDDLEWARE. With core's classes in their place, Django's checks would report the
middleware missing (security.W001–W003) and check nothing else of it (HSTS, HTTPS redirect, secure
cookies, X-Frame-Options …). Here the same checks run with Django's conditions, ids and messages, and
core's class counted as the Django class it stands for; `CoreConfig.ready` takes Django's by-name
versions out of the registry, so each problem is reported once, whichever of the two MIDDLEWARE names.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.checks import CheckMessage, Tags, register, registry
from django.core.checks.security import base, csrf, sessions

SECURITY = "django.middleware.security.SecurityMiddleware"
SESSION = "django.contrib.sessions.middleware.SessionMiddleware"
CSRF = "django.middleware.csrf.CsrfViewMiddleware"
XFRAME = "django.middleware.clickjacking.XFrameOptionsMiddleware"
STANDS_FOR = {
    "core.middleware.SecurityMiddleware": SECURITY,
    "core.middleware.SessionMiddleware": SESSION,
    "core.middleware.CsrfViewMiddleware": CSRF,
    "core.middleware.XFrameOptionsMiddleware": XFRAME,
}

# Django's deploy checks that look for one of the four classes by name; replaced by those below.
BY_NAME = (
    base.check_security_middleware,
    base.check_xframe_options_middleware,
    base.check_sts,
    base.check_sts_include_subdomains,
    base.check_sts_preload,
    base.check_content_type_nosniff,
    base.check_ssl_redirect,
    base.check_xframe_deny,
    base.check_referrer_policy,
    base.check_cross_origin_opener_policy,
    csrf.check_csrf_middleware,
    csrf.check_csrf_cookie_secure,
    sessions.check_session_cookie_secure,
    sessions.check_session_cookie_httponly,
)


def _installed(django_name: str) -> bool:
    return any(STANDS_FOR.get(name, name) == django_name for name in settings.MIDDLEWARE)


def install() -> None:
    """Put these checks in place of Django's by-name ones (once; from CoreConfig.ready)."""
    for check in BY_NAME:
        registry.registry.deployment_checks.discard(check)
    for check in (check_security_middleware, check_csrf_middleware, check_session_cookies):
        register(check, Tags.security, deploy=True)


def check_security_middleware(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """security.W001, W002, W004–W006, W008, W019, W021, W022, E023, E024."""
    found: list[CheckMessage] = []
    if not _installed(XFRAME):
        found.append(base.W002)
    elif settings.X_FRAME_OPTIONS != "DENY":
        found.append(base.W019)
    if not _installed(SECURITY):
        return [base.W001, *found]
    hsts = settings.SECURE_HSTS_SECONDS
    found += [base.W004] if not hsts else []
    found += [base.W005] if hsts and settings.SECURE_HSTS_INCLUDE_SUBDOMAINS is not True else []
    found += [base.W021] if hsts and settings.SECURE_HSTS_PRELOAD is not True else []
    found += [base.W006] if settings.SECURE_CONTENT_TYPE_NOSNIFF is not True else []
    found += [base.W008] if settings.SECURE_SSL_REDIRECT is not True else []
    policy = settings.SECURE_REFERRER_POLICY
    if policy is None:
        found.append(base.W022)
    else:
        values = {v.strip() for v in policy.split(",")} if isinstance(policy, str) else set(policy)
        found += [base.E023] if not values <= base.REFERRER_POLICY_VALUES else []
    opener = settings.SECURE_CROSS_ORIGIN_OPENER_POLICY
    found += [base.E024] if opener is not None and opener not in base.CROSS_ORIGIN_OPENER_POLICY_VALUES else []
    return found


def check_csrf_middleware(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """security.W003, W016."""
    if not _installed(CSRF):
        return [csrf.W003]
    return [] if settings.CSRF_USE_SESSIONS or settings.CSRF_COOKIE_SECURE is True else [csrf.W016]


def check_session_cookies(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """security.W010–W015: the app's warning, the middleware's, or both in one."""
    app = "django.contrib.sessions" in settings.INSTALLED_APPS
    middleware = _installed(SESSION)
    found: list[CheckMessage] = []
    for setting, (for_app, for_middleware, for_both) in (
        ("SESSION_COOKIE_SECURE", (sessions.W010, sessions.W011, sessions.W012)),
        ("SESSION_COOKIE_HTTPONLY", (sessions.W013, sessions.W014, sessions.W015)),
    ):
        if getattr(settings, setting) is True:
            continue
        found += [for_both] if app and middleware else [for_app] if app else [for_middleware] if middleware else []
    return found
