"""Personal API tokens: created by a command, stored hashed, used as bearer tokens."""

from __future__ import annotations

import re
from datetime import timedelta
from io import StringIO
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from django.utils import timezone

from accounts.models import ApiToken, User
from accounts.services import api_token_authenticate, api_token_create

pytestmark = pytest.mark.django_db


def run_command(*args: str) -> list[str]:
    out = StringIO()
    call_command("create_api_token", *args, stdout=out)
    return out.getvalue().strip().splitlines()


def test_create_api_token_prints_a_working_token_on_its_last_line(user: User, client: Client) -> None:
    token = run_command(user.username)[-1]
    assert token.startswith("mem_") and " " not in token
    assert api_token_authenticate(token=token) == user
    response = client.get("/api/me", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert response.status_code == 200
    assert response.json()["username"] == user.username


def test_create_api_token_with_create_user_makes_the_account(client: Client) -> None:
    lines = run_command("bob", "--create-user")
    user = User.objects.get(username="bob")
    assert user.memory_enabled is True
    assert not user.has_usable_password()
    assert api_token_authenticate(token=lines[-1]) == user


def test_create_api_token_with_create_user_reuses_an_existing_account(user: User) -> None:
    token = run_command(user.username, "--create-user")[-1]
    assert User.objects.count() == 1
    assert api_token_authenticate(token=token) == user


def test_create_api_token_for_an_unknown_user_without_the_flag_fails(db: None) -> None:
    with pytest.raises(CommandError, match=re.escape("No user named 'nobody'. Pass --create-user")):
        run_command("nobody")
    assert not User.objects.exists()
    assert not ApiToken.objects.exists()


def test_each_run_makes_a_new_token_and_old_ones_keep_working(user: User) -> None:
    first, second = run_command(user.username)[-1], run_command(user.username, "--name", "laptop")[-1]
    assert first != second
    assert api_token_authenticate(token=first) == api_token_authenticate(token=second) == user
    assert ApiToken.objects.filter(user=user, name="laptop").exists()


def test_tokens_are_stored_hashed(user: User) -> None:
    row, plain = api_token_create(user=user)
    stored = ApiToken.objects.filter(pk=row.pk).values().get()
    assert plain not in {str(value) for value in stored.values()}
    assert len(stored["digest"]) == 64
    assert plain.startswith(stored["prefix"]) and len(stored["prefix"]) < len(plain) // 2


@pytest.mark.parametrize("token", ["", "mem_wrong", "x" * 500])
def test_an_unknown_token_authenticates_nobody(user: User, token: str) -> None:
    api_token_create(user=user)
    assert api_token_authenticate(token=token) is None


def test_a_deactivated_users_token_stops_working(user: User) -> None:
    _, plain = api_token_create(user=user)
    User.objects.filter(pk=user.pk).update(is_active=False)
    assert api_token_authenticate(token=plain) is None


def test_using_a_token_records_when(user: User) -> None:
    row, plain = api_token_create(user=user)
    assert row.last_used_at is None
    api_token_authenticate(token=plain)
    row.refresh_from_db()
    assert row.last_used_at is not None


@pytest.mark.parametrize("header", ["Bearer mem_wrong", "Bearer ", "Token abc", "mem_abc"])
def test_a_bad_authorization_header_is_401(client: Client, user: User, header: str) -> None:
    response = client.get("/api/me", HTTP_AUTHORIZATION=header)
    assert response.status_code == 401
    assert response.json()["detail"] in {"Unauthorized", "Invalid, revoked or expired API token."}


def test_last_use_is_recorded_at_most_once_a_minute(user: User, django_assert_num_queries: Any) -> None:
    row, plain = api_token_create(user=user)
    api_token_authenticate(token=plain)
    with django_assert_num_queries(1):  # the lookup only: no write for a token used seconds ago
        assert api_token_authenticate(token=plain) == user
    ApiToken.objects.filter(pk=row.pk).update(last_used_at=timezone.now() - timedelta(minutes=5))
    api_token_authenticate(token=plain)
    row.refresh_from_db()
    assert row.last_used_at is not None
    assert timezone.now() - row.last_used_at < timedelta(minutes=1)
