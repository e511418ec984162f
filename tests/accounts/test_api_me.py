"""GET and PATCH /api/me."""

from __future__ import annotations

import pytest
from django.test import Client

from accounts.models import User

pytestmark = pytest.mark.django_db


def test_me_returns_the_authenticated_user(api_client: Client, user: User) -> None:
    response = api_client.get("/api/me")
    assert response.status_code == 200
    assert response.json() == {
        "id": user.pk,
        "username": "alice",
        "email": "",
        "memory_enabled": True,
        "memory_review": "sensitive",
        "language": "",
    }


def test_patch_me_switches_memory_off_and_on(api_client: Client, user: User) -> None:
    response = api_client.patch("/api/me", {"memory_enabled": False}, content_type="application/json")
    assert response.status_code == 200
    assert response.json()["memory_enabled"] is False
    assert User.objects.get(pk=user.pk).memory_enabled is False
    api_client.patch("/api/me", {"memory_enabled": True}, content_type="application/json")
    assert User.objects.get(pk=user.pk).memory_enabled is True


def test_patch_me_without_fields_changes_nothing(api_client: Client, user: User) -> None:
    response = api_client.patch("/api/me", {}, content_type="application/json")
    assert response.status_code == 200
    assert User.objects.get(pk=user.pk).memory_enabled is True


@pytest.mark.parametrize("body", ['{"memory_enabled": "sometimes"}', '{"memory_enabled": [1]}', "{broken"])
def test_patch_me_with_bad_input_is_4xx_and_changes_nothing(api_client: Client, user: User, body: str) -> None:
    response = api_client.patch("/api/me", body, content_type="application/json")
    assert response.status_code in (400, 422)
    assert response.json()["detail"]
    assert User.objects.get(pk=user.pk).memory_enabled is True


def test_patch_me_cannot_change_other_fields(api_client: Client, user: User) -> None:
    api_client.patch("/api/me", {"username": "root", "is_staff": True}, content_type="application/json")
    user.refresh_from_db()
    assert (user.username, user.is_staff) == ("alice", False)


@pytest.mark.django_db(transaction=True)  # runs a turn (see tests/chat/test_api.py)
def test_me_after_memory_off_skips_new_messages_for_memory(api_client: Client, user: User, fake_model: object) -> None:
    api_client.patch("/api/me", {"memory_enabled": False}, content_type="application/json")
    conversation = api_client.post("/api/conversations", {}, content_type="application/json").json()
    response = api_client.post(
        f"/api/conversations/{conversation['id']}/messages", {"content": "I like tea"}, content_type="application/json"
    )
    assert response.json()["user_message"]["memory_status"] == "skipped"
