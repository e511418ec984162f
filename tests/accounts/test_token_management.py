"""Settings → API tokens and /api/tokens: create with a name and an optional expiry, list with last use,
revoke. Expired and revoked tokens authenticate nothing; a password change revokes them all."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from accounts.models import ApiToken, User
from accounts.services import api_token_authenticate, api_token_create

pytestmark = pytest.mark.django_db


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture
def signed_in(client: Client, user: User) -> Client:
    client.force_login(user)
    return client


def test_the_api_creates_lists_and_revokes_tokens(signed_in: Client, user: User) -> None:
    expires = (timezone.now() + timedelta(days=30)).isoformat()
    created = signed_in.post(
        "/api/tokens", json.dumps({"name": "laptop", "expires_at": expires}), content_type="application/json"
    )
    assert created.status_code == 201
    new = created.json()
    assert new["name"] == "laptop" and new["token"].startswith(new["prefix"]) and new["expires_at"]
    assert Client().get("/api/me", headers=bearer(new["token"])).status_code == 200

    listed = signed_in.get("/api/tokens").json()
    assert {t["name"] for t in listed} == {"laptop"}
    laptop = listed[0]
    assert laptop["last_used_at"] is not None and "token" not in laptop

    assert signed_in.delete(f"/api/tokens/{new['id']}").status_code == 204
    assert Client().get("/api/me", headers=bearer(new["token"])).status_code == 401


def test_another_users_token_is_404_and_stays(signed_in: Client, other_user: User) -> None:
    theirs, plain = api_token_create(user=other_user, name="theirs")
    assert signed_in.delete(f"/api/tokens/{theirs.pk}").status_code == 404
    assert api_token_authenticate(token=plain) == other_user
    assert "theirs" not in json.dumps(signed_in.get("/api/tokens").json())


def test_an_expiry_in_the_past_is_refused(signed_in: Client) -> None:
    past = (timezone.now() - timedelta(minutes=1)).isoformat()
    response = signed_in.post("/api/tokens", json.dumps({"expires_at": past}), content_type="application/json")
    assert response.status_code == 400
    assert "future" in response.json()["detail"]


def test_an_expiry_without_a_timezone_is_refused_with_a_clear_422(signed_in: Client) -> None:
    naive = (timezone.now() + timedelta(days=2)).replace(tzinfo=None, microsecond=0)
    response = signed_in.post(
        "/api/tokens", json.dumps({"expires_at": naive.isoformat()}), content_type="application/json"
    )
    assert response.status_code == 422
    assert "expires_at" in str(response.json()) and not ApiToken.objects.exists()


def test_a_token_cannot_create_a_token(api_client: Client, user: User) -> None:
    response = api_client.post("/api/tokens", json.dumps({"name": "more"}), content_type="application/json")
    assert response.status_code == 403
    assert "cannot create or revoke tokens" in response.json()["detail"]
    wrong = json.dumps({"name": "more", "password": "guess"})
    assert api_client.post("/api/tokens", wrong, content_type="application/json").status_code == 403
    assert ApiToken.objects.filter(user=user).count() == 1


def test_a_token_with_the_password_may_create_a_token(api_client: Client, user: User) -> None:
    body = json.dumps({"name": "more", "password": "correct-horse-battery"})
    response = api_client.post("/api/tokens", body, content_type="application/json")
    assert response.status_code == 201
    assert ApiToken.objects.filter(user=user).count() == 2


def test_a_token_cannot_revoke_a_token(api_client: Client, user: User) -> None:
    other, _ = api_token_create(user=user, name="other")
    assert api_client.delete(f"/api/tokens/{other.pk}").status_code == 403
    own = ApiToken.objects.exclude(pk=other.pk).get()
    assert api_client.delete(f"/api/tokens/{own.pk}").status_code == 403
    assert ApiToken.objects.filter(user=user).count() == 2


def test_an_expired_token_authenticates_nothing(user: User) -> None:
    row, plain = api_token_create(user=user, expires_at=timezone.now() + timedelta(hours=1))
    assert api_token_authenticate(token=plain) == user
    ApiToken.objects.filter(pk=row.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert api_token_authenticate(token=plain) is None
    assert Client().get("/api/me", headers=bearer(plain)).status_code == 401


def test_the_page_creates_a_token_shown_once_and_lists_it(client: Client, user: User) -> None:
    client.force_login(user)
    scopes = ["memory:read", "memory:propose", "memory:write", "chat"]  # every box ticked, as the form starts
    response = client.post("/settings/tokens/", {"name": "backup script", "expires_in": "30", "scopes": scopes})
    assert response.status_code == 200
    token = ApiToken.objects.get(user=user)
    page = response.content.decode()
    assert 'id="new-token"' in page and "backup script" in page
    assert token.expires_at is not None and token.expires_at > timezone.now() + timedelta(days=29)
    again = client.get("/settings/tokens/").content.decode()
    assert 'id="new-token"' not in again and token.prefix in again and "never" in again  # last used: never


def test_the_page_revokes_a_token(client: Client, user: User) -> None:
    row, plain = api_token_create(user=user, name="old")
    client.force_login(user)
    response = client.post(f"/settings/tokens/{row.pk}/revoke/", follow=True)
    assert "Revoked the token" in response.content.decode()
    assert api_token_authenticate(token=plain) is None


def test_revoke_asks_first_and_revokes_nothing_until_confirmed(client: Client, user: User) -> None:
    row, plain = api_token_create(user=user, name="laptop")
    client.force_login(user)
    page = client.get(f"/settings/tokens/{row.pk}/revoke/").content.decode()
    assert "Revoke “laptop”? Scripts using it stop working at once." in page
    assert 'id="sidebar"' in page  # the app's layout
    assert api_token_authenticate(token=plain) == user


def test_the_page_cannot_revoke_another_users_token(client: Client, user: User, other_user: User) -> None:
    theirs, plain = api_token_create(user=other_user)
    client.force_login(user)
    assert client.post(f"/settings/tokens/{theirs.pk}/revoke/").status_code == 404
    assert client.get(f"/settings/tokens/{theirs.pk}/revoke/").status_code == 404
    assert api_token_authenticate(token=plain) == other_user


def test_the_page_needs_a_signed_in_user(client: Client) -> None:
    assert client.get("/settings/tokens/").status_code == 302


def test_a_password_change_revokes_the_users_tokens_and_keeps_them_signed_in(
    client: Client, user: User, other_user: User
) -> None:
    user.set_password("old-password-123")
    user.save()
    _, mine = api_token_create(user=user)
    _, theirs = api_token_create(user=other_user)
    client.force_login(user)
    response = client.post(
        "/accounts/password/",
        {"old_password": "old-password-123", "new_password1": "n3w-passw0rd-xyz", "new_password2": "n3w-passw0rd-xyz"},
    )
    assert response.status_code == 302
    assert api_token_authenticate(token=mine) is None
    assert api_token_authenticate(token=theirs) == other_user
    assert client.get("/settings/tokens/").status_code == 200  # this browser stays signed in


def test_saving_a_user_without_a_new_password_keeps_their_tokens(user: User) -> None:
    _, plain = api_token_create(user=user)
    user.first_name = "Alice"
    user.save()
    assert api_token_authenticate(token=plain) == user


def test_the_user_menu_links_to_the_tokens_page(client: Client, user: User) -> None:
    client.force_login(user)
    assert 'href="/settings/tokens/"' in client.get("/").content.decode()


def test_anyone_elses_tokens_are_not_listed(client: Client, user: User, other_user: User, api_token: Any) -> None:
    api_token_create(user=other_user, name="mallorys")
    client.force_login(user)
    assert "mallorys" not in client.get("/settings/tokens/").content.decode()


def test_a_password_with_a_nul_character_is_refused_before_it_reaches_the_sign_in_records(api_client: Client) -> None:
    # PostgreSQL text cannot hold NUL: a failed sign-in record of such a password would be a 500.
    body = json.dumps({"name": "x", "password": "pass\u0000word"})
    response = api_client.post("/api/tokens", body, content_type="application/json")
    assert response.status_code == 422
    assert not ApiToken.objects.filter(name="x").exists()
