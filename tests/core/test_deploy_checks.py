"""`check --deploy` reports a missing or misconfigured security, session, CSRF and clickjacking setup with
core's middleware in MIDDLEWARE exactly as Django reports it with its own classes (core/checks.py)."""

from __future__ import annotations

from typing import Any

import pytest
from django.conf import settings
from django.core.checks import run_checks
from django.core.checks.registry import registry
from django.test import override_settings

from core import checks

DJANGO_MIDDLEWARE = [checks.STANDS_FOR.get(name, name) for name in settings.MIDDLEWARE]
SECURE = {
    "SECURE_HSTS_SECONDS": 31_536_000,
    "SECURE_HSTS_INCLUDE_SUBDOMAINS": True,
    "SECURE_HSTS_PRELOAD": True,
    "SECURE_SSL_REDIRECT": True,
    "SECURE_CONTENT_TYPE_NOSNIFF": True,
    "SESSION_COOKIE_SECURE": True,
    "SESSION_COOKIE_HTTPONLY": True,
    "CSRF_COOKIE_SECURE": True,
    "X_FRAME_OPTIONS": "DENY",
    "SECURE_REFERRER_POLICY": "same-origin",
    "SECURE_CROSS_ORIGIN_OPENER_POLICY": "same-origin",
}
# One misconfiguration each, and the warnings Django gives for it.
CASES: list[tuple[dict[str, Any], set[str]]] = [
    ({}, set()),
    ({"SECURE_HSTS_SECONDS": 0}, {"security.W004"}),
    ({"SECURE_HSTS_INCLUDE_SUBDOMAINS": False}, {"security.W005"}),
    ({"SECURE_HSTS_PRELOAD": False}, {"security.W021"}),
    ({"SECURE_CONTENT_TYPE_NOSNIFF": False}, {"security.W006"}),
    ({"SECURE_SSL_REDIRECT": False}, {"security.W008"}),
    ({"SECURE_REFERRER_POLICY": None}, {"security.W022"}),
    ({"SECURE_REFERRER_POLICY": "same-origin, nowhere"}, {"security.E023"}),
    ({"SECURE_REFERRER_POLICY": ["same-origin", "origin"]}, set()),
    ({"SECURE_CROSS_ORIGIN_OPENER_POLICY": "anyone"}, {"security.E024"}),
    ({"SECURE_CROSS_ORIGIN_OPENER_POLICY": None}, set()),
    ({"X_FRAME_OPTIONS": "SAMEORIGIN"}, {"security.W019"}),
    ({"CSRF_COOKIE_SECURE": False}, {"security.W016"}),
    ({"CSRF_COOKIE_SECURE": False, "CSRF_USE_SESSIONS": True}, set()),
    ({"SESSION_COOKIE_SECURE": False}, {"security.W012"}),
    ({"SESSION_COOKIE_HTTPONLY": False}, {"security.W015"}),
]
MISSING = [
    ("core.middleware.SecurityMiddleware", {"security.W001"}),
    ("core.middleware.CsrfViewMiddleware", {"security.W003"}),
    ("core.middleware.XFrameOptionsMiddleware", {"security.W002"}),
]


def security_ids(middleware: list[str], **overrides: Any) -> set[str]:
    """The security warnings and errors of `check --deploy` (less the secret key's and debug's)."""
    with override_settings(MIDDLEWARE=middleware, **{**SECURE, **overrides}):
        found = run_checks(include_deployment_checks=True, tags=["security"])
    return {str(m.id) for m in found if m.id not in {"security.W009", "security.W018", "security.W020"}}


def django_ids(middleware: list[str], **overrides: Any) -> set[str]:
    """What Django's own by-name checks report for the same settings."""
    with override_settings(MIDDLEWARE=middleware, **{**SECURE, **overrides}):
        return {str(m.id) for check in checks.BY_NAME for m in check(app_configs=None)}


@pytest.mark.parametrize(("overrides", "expected"), CASES)
def test_a_misconfiguration_is_reported_as_django_reports_it(overrides: dict[str, Any], expected: set[str]) -> None:
    assert django_ids(DJANGO_MIDDLEWARE, **overrides) == expected
    assert security_ids(settings.MIDDLEWARE, **overrides) == expected
    assert security_ids(DJANGO_MIDDLEWARE, **overrides) == expected  # Django's names are counted too


@pytest.mark.parametrize(("name", "expected"), MISSING)
def test_a_missing_middleware_is_reported(name: str, expected: set[str]) -> None:
    without = [m for m in settings.MIDDLEWARE if m != name]
    assert security_ids(without) == expected
    assert django_ids([m for m in DJANGO_MIDDLEWARE if m != checks.STANDS_FOR[name]]) == expected


def test_without_the_security_middleware_its_settings_are_not_checked_as_in_django() -> None:
    without = [m for m in settings.MIDDLEWARE if m != "core.middleware.SecurityMiddleware"]
    assert security_ids(without, SECURE_HSTS_SECONDS=0, SECURE_SSL_REDIRECT=False) == {"security.W001"}


def test_without_the_session_middleware_the_app_alone_is_named() -> None:
    without = [m for m in settings.MIDDLEWARE if m != "core.middleware.SessionMiddleware"]
    found = security_ids(without, SESSION_COOKIE_SECURE=False, SESSION_COOKIE_HTTPONLY=False)
    assert found == {"security.W010", "security.W013"}


def test_the_messages_are_djangos_own() -> None:
    with override_settings(MIDDLEWARE=settings.MIDDLEWARE, **{**SECURE, "SECURE_HSTS_SECONDS": 0}):
        [found] = [m for m in run_checks(include_deployment_checks=True) if m.id == "security.W004"]
    from django.core.checks.security import base

    assert found == base.W004


def test_djangos_by_name_checks_are_replaced_not_run_twice() -> None:
    deployment = registry.get_checks(include_deployment_checks=True)
    assert not set(checks.BY_NAME) & set(deployment)
    assert {checks.check_security_middleware, checks.check_csrf_middleware, checks.check_session_cookies} <= set(
        deployment
    )


def test_every_django_check_that_looks_for_a_replaced_class_by_name_is_replaced() -> None:
    from django.core.checks.security import base, csrf, sessions

    helpers = {"_security_middleware", "_xframe_middleware", "_csrf_middleware", "_session_middleware"}
    by_name = {
        value
        for module in (base, csrf, sessions)
        for value in vars(module).values()
        if callable(value)
        and getattr(value, "__name__", "").startswith("check_")
        and helpers & set(value.__code__.co_names)
    }
    assert by_name == set(checks.BY_NAME)
