"""Sign up, log in, log out, password change; every other page requires login."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth import get_user
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from accounts.models import User
from chat.services import conversation_create

pytestmark = pytest.mark.django_db

PASSWORD = "correct-horse-battery"
NEW_PASSWORD = "another-long-passphrase-9"


@pytest.mark.parametrize("name", ["login", "signup"])
def test_auth_pages_are_open_to_anonymous_visitors(client: Client, name: str) -> None:
    response = client.get(reverse(name))
    assert response.status_code == 200
    assert b"csrfmiddlewaretoken" in response.content


def test_signup_creates_a_user_with_memory_on_and_logs_them_in(client: Client) -> None:
    response = client.post(reverse("signup"), {"username": "alice", "password1": PASSWORD, "password2": PASSWORD})
    assert response.status_code == 302
    assert response["Location"] == reverse("chat:index")
    user = User.objects.get(username="alice")
    assert user.memory_enabled is True
    assert user.check_password(PASSWORD)
    assert get_user(client).pk == user.pk


@pytest.mark.parametrize(
    "data, error",
    [
        ({"username": "alice", "password1": PASSWORD, "password2": "different-thing-1"}, "didn’t match"),
        ({"username": "alice", "password1": "short", "password2": "short"}, "too short"),
        ({"username": "", "password1": PASSWORD, "password2": PASSWORD}, "This field is required"),
    ],
)
def test_signup_with_bad_input_shows_the_error_and_creates_nobody(
    client: Client, data: dict[str, str], error: str
) -> None:
    response = client.post(reverse("signup"), data)
    assert response.status_code == 200
    assert error in response.content.decode()
    assert not User.objects.exists()


def test_signup_with_a_taken_username_is_refused(client: Client, user: User) -> None:
    response = client.post(reverse("signup"), {"username": user.username, "password1": PASSWORD, "password2": PASSWORD})
    assert response.status_code == 200
    assert "already exists" in response.content.decode()
    assert User.objects.count() == 1


def test_signed_in_users_are_sent_from_signup_and_login_to_the_chat(client: Client, user: User) -> None:
    client.force_login(user)
    assert client.get(reverse("signup"))["Location"] == reverse("chat:index")
    assert client.get(reverse("login"))["Location"] == reverse("chat:index")


def test_login_with_the_right_password_opens_the_chat(client: Client, user: User) -> None:
    response = client.post(reverse("login"), {"username": user.username, "password": PASSWORD})
    assert response.status_code == 302
    assert response["Location"] == reverse("chat:index")
    assert get_user(client).pk == user.pk


def test_login_with_a_wrong_password_shows_an_error(client: Client, user: User) -> None:
    response = client.post(reverse("login"), {"username": user.username, "password": "wrong-password"})
    assert response.status_code == 200
    assert "enter a correct username and password" in response.content.decode()
    assert not get_user(client).is_authenticated


def test_login_follows_next(client: Client, user: User) -> None:
    response = client.post(
        reverse("login") + "?next=/settings/", {"username": user.username, "password": PASSWORD, "next": "/settings/"}
    )
    assert response["Location"] == "/settings/"


def test_logout_is_a_post_and_ends_the_session(client: Client, user: User) -> None:
    client.force_login(user)
    assert client.get(reverse("logout")).status_code == 405
    response = client.post(reverse("logout"))
    assert response.status_code == 302
    assert response["Location"] == reverse("logged_out")
    assert not get_user(client).is_authenticated
    assert "You’re logged out" in client.get(response["Location"]).content.decode()


def test_password_change_requires_login(client: Client) -> None:
    response = client.get(reverse("password_change"))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


def test_password_change_sets_the_new_password_and_keeps_the_session(client: Client, user: User) -> None:
    client.force_login(user)
    assert client.get(reverse("password_change")).status_code == 200
    response = client.post(
        reverse("password_change"),
        {"old_password": PASSWORD, "new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD},
    )
    assert response["Location"] == reverse("password_change_done")
    assert client.get(response["Location"]).status_code == 200
    user.refresh_from_db()
    assert user.check_password(NEW_PASSWORD)
    assert get_user(client).is_authenticated


def test_password_change_with_a_wrong_old_password_changes_nothing(client: Client, user: User) -> None:
    client.force_login(user)
    response = client.post(
        reverse("password_change"),
        {"old_password": "not-it", "new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD},
    )
    assert response.status_code == 200
    user.refresh_from_db()
    assert user.check_password(PASSWORD)


def test_pages_redirect_anonymous_visitors_to_login(client: Client, user: User) -> None:
    conversation = conversation_create(user=user)
    for path in ("/", f"/c/{conversation.id}/"):
        response = client.get(path)
        assert response.status_code == 302, path
        assert response["Location"] == f"{reverse('login')}?next={path}"


def test_the_chat_page_opens_after_login(client: Client, user: User) -> None:
    client.force_login(user)
    assert client.get("/").status_code == 200


def test_admin_requires_staff(client: Client, user: User) -> None:
    client.force_login(user)
    assert client.get("/admin/").status_code == 302


def _routes(patterns: list[Any], prefix: str = "") -> Iterator[str]:
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            yield from _routes(pattern.url_patterns, prefix + str(pattern.pattern))
        elif isinstance(pattern, URLPattern):
            yield prefix + str(pattern.pattern)


def _page_paths() -> list[str]:
    """Every page route outside the auth pages, admin, the APIs (the JSON API and the OpenAI-compatible
    /v1, which answer a bearer token) and the JavaScript catalogue, with sample values for its parameters."""
    paths = []
    for route in _routes(get_resolver().url_patterns):
        # jsi18n/: the JavaScript catalogue, which the signed-out pages load too.
        if route.startswith(("admin/", "api/", "v1/", "accounts/", "static/", "jsi18n/", "^")):
            continue
        route = re.sub(r"<uuid:\w+>", str(uuid.uuid4()), route)
        route = re.sub(r"<int:\w+>", "1", route)
        paths.append("/" + re.sub(r"<(?:\w+:)?\w+>", "x", route))
    return paths


def test_every_page_outside_the_auth_pages_requires_login(client: Client) -> None:
    paths = _page_paths()
    assert "/" in paths
    for path in paths:
        response = client.get(path)
        assert response.status_code in (302, 405), path  # 405: a POST-only endpoint
        if response.status_code == 302:
            assert response["Location"].startswith(reverse("login") + "?next="), path
