"""Django admin for accounts: smoke tests as a superuser."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from accounts.models import ApiToken, User
from accounts.services import api_token_create

pytestmark = pytest.mark.django_db


def test_user_changelist_and_change_page_load(admin_client: Client, user: User) -> None:
    assert admin_client.get(reverse("admin:accounts_user_changelist")).status_code == 200
    response = admin_client.get(reverse("admin:accounts_user_change", args=[user.pk]))
    assert response.status_code == 200
    assert b"memory_enabled" in response.content


def test_user_changelist_filters_by_memory_enabled(admin_client: Client, user: User) -> None:
    response = admin_client.get(reverse("admin:accounts_user_changelist") + "?memory_enabled__exact=1")
    assert response.status_code == 200
    assert user.username.encode() in response.content


def test_api_tokens_show_a_prefix_never_the_token(admin_client: Client, user: User) -> None:
    row, plain = api_token_create(user=user, name="laptop")
    changelist = admin_client.get(reverse("admin:accounts_apitoken_changelist"))
    change = admin_client.get(reverse("admin:accounts_apitoken_change", args=[row.pk]))
    assert changelist.status_code == change.status_code == 200
    assert row.prefix.encode() in changelist.content
    assert plain.encode() not in changelist.content + change.content
    assert admin_client.get(reverse("admin:accounts_apitoken_add")).status_code == 403
    assert ApiToken.objects.count() == 1
