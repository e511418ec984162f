"""Django's security, session, CSRF and clickjacking middleware on the async path (core/middleware.py): the
same headers, redirects, cookies and rejections as Django's classes, with the hooks that only read the
request run on the event loop and those that reach the database or disk still in a thread."""

from __future__ import annotations

import re
from typing import Any

import httpx2 as httpx
import pytest
from asgiref.sync import SyncToAsync, sync_to_async
from django.core.asgi import get_asgi_application
from django.utils.deprecation import MiddlewareMixin

from accounts.models import User
from accounts.services import api_token_create
from core import middleware

pytestmark = pytest.mark.django_db(transaction=True)

PASSWORD = "correct-horse-battery"
INLINE = (
    middleware.SecurityMiddleware,
    middleware.SessionMiddleware,
    middleware.CsrfViewMiddleware,
    middleware.XFrameOptionsMiddleware,
)


@pytest.fixture
def hops(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """What each request ran through sync_to_async: (the class of the method's object, the method's name)."""
    seen: list[Any] = []
    call = SyncToAsync.__call__

    async def counted(self: SyncToAsync[Any, Any], *args: Any, **kwargs: Any) -> Any:
        func = self.func
        owner = getattr(func, "__self__", args[0] if args else None)  # bound, or called with self first
        seen.append((type(owner), getattr(func, "__name__", "")))
        return await call(self, *args, **kwargs)

    monkeypatch.setattr(SyncToAsync, "__call__", counted)
    return seen


def middleware_hops(seen: list[Any]) -> list[Any]:
    """The hops of a middleware hook, whatever the class (Django's adapter names the hook's method)."""
    return [hop for hop in seen if issubclass(hop[0], MiddlewareMixin)]


@pytest.fixture
def app() -> Any:
    """Django's ASGI handler, built under this test's settings (middleware reads some settings once)."""
    return get_asgi_application()


@pytest.fixture
def client(app: Any) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://testserver")


def test_the_four_run_as_core_classes_in_the_async_chain(app: Any) -> None:
    chain, found = app._middleware_chain, []
    while hasattr(chain, "__wrapped__"):  # Django wraps each middleware to turn exceptions into responses
        found.append(chain.__wrapped__)
        chain = getattr(chain.__wrapped__, "get_response", None)
    for cls in INLINE:
        [instance] = [m for m in found if isinstance(m, cls)]
        assert instance.async_mode
    [csrf] = [m for m in found if isinstance(m, middleware.CsrfViewMiddleware)]
    assert csrf.process_view == csrf._aprocess_view  # Django would run a sync one in a thread


async def test_a_page_gets_the_security_and_clickjacking_headers_without_a_thread_hop_for_them(
    client: httpx.AsyncClient, hops: list[Any]
) -> None:
    async with client:
        response = await client.get("/api/conversations", headers={"Authorization": "Bearer not-a-token"})
    assert response.status_code == 401
    assert response.headers["X-Frame-Options"] == "DENY"
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert response.headers["Referrer-Policy"] == "same-origin"
    assert response.headers["Cross-Origin-Opener-Policy"] == "same-origin"
    assert middleware_hops(hops) == []


async def test_an_api_turn_request_runs_no_middleware_hook_in_a_thread(
    client: httpx.AsyncClient, hops: list[Any]
) -> None:
    user = await sync_to_async(User.objects.create_user)(username="asyncapi", password=PASSWORD)
    token = (await sync_to_async(api_token_create)(user=user))[1]
    async with client:
        response = await client.post(
            "/api/conversations", json={}, headers={"Authorization": f"Bearer {token}", "Origin": "http://evil"}
        )
    assert response.status_code == 201  # the API is exempt from CSRF: bearer tokens are not ambient
    assert middleware_hops(hops) == []


async def test_signing_in_through_asgi_checks_csrf_and_saves_the_session_in_a_thread(
    client: httpx.AsyncClient, hops: list[Any]
) -> None:
    await sync_to_async(User.objects.create_user)(username="asyncuser", password=PASSWORD)
    async with client:
        page = await client.get("/accounts/login/")
        assert page.status_code == 200 and "csrftoken" in page.cookies
        assert middleware_hops(hops) == []  # the CSRF cookie is set on the loop
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
        assert token
        form = {"username": "asyncuser", "password": PASSWORD, "csrfmiddlewaretoken": token[1]}
        signed_in = await client.post("/accounts/login/", data=form)
        assert signed_in.status_code == 302
        assert "sessionid" in signed_in.cookies
        assert "HttpOnly" in signed_in.headers["set-cookie"]
        assert (middleware.SessionMiddleware, "process_response") in hops  # the session was saved in a thread
        hops.clear()
        home = await client.get("/")
    assert home.status_code == 200  # signed in: the session read back
    assert (middleware.SessionMiddleware, "process_response") not in hops  # nothing to save


async def test_a_form_post_without_a_csrf_token_is_rejected_and_the_page_rendered_in_a_thread(
    client: httpx.AsyncClient, hops: list[Any]
) -> None:
    async with client:
        response = await client.post("/accounts/login/", data={"username": "x", "password": "y"})
    assert response.status_code == 403
    assert "CSRF" in response.text
    assert (middleware.CsrfViewMiddleware, "_reject") in hops


async def test_a_post_from_another_origin_is_rejected(client: httpx.AsyncClient) -> None:
    async with client:
        page = await client.get("/accounts/login/")
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
        assert token
        response = await client.post(
            "/accounts/login/",
            data={"username": "x", "password": "y", "csrfmiddlewaretoken": token[1]},
            headers={"Origin": "http://elsewhere.example"},
        )
    assert response.status_code == 403


@pytest.fixture
def https_settings(settings: Any) -> Any:
    settings.SECURE_SSL_REDIRECT = True
    settings.SECURE_HSTS_SECONDS = 3600
    settings.SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    settings.X_FRAME_OPTIONS = "SAMEORIGIN"
    return settings


async def test_with_https_on_plain_http_is_redirected_and_https_gets_hsts(https_settings: Any) -> None:
    handler: Any = get_asgi_application()
    transport = httpx.ASGITransport(app=handler)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as plain:
        redirected = await plain.get("/accounts/login/")
    assert redirected.status_code == 301
    assert redirected.headers["Location"] == "https://testserver/accounts/login/"
    async with httpx.AsyncClient(transport=transport, base_url="https://testserver") as secure:
        page = await secure.get("/accounts/login/")
    assert page.status_code == 200
    assert page.headers["Strict-Transport-Security"] == "max-age=3600; includeSubDomains"
    assert page.headers["X-Frame-Options"] == "SAMEORIGIN"
