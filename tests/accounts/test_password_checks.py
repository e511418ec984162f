"""Every password check outside sign-in (deleting the account, changing the password, creating a token
with the password) shares one limiter per account and address: the 11th wrong password answers 429
with Retry-After, on the API and on the pages alike."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from accounts.models import ApiToken, User

pytestmark = pytest.mark.django_db

PASSWORD = "correct-horse-battery"
ADDRESS = "10.1.1.1"


def delete_api(client: Client, password: str, address: str = ADDRESS) -> Any:
    body = json.dumps({"password": password})
    return client.delete("/api/me", body, content_type="application/json", REMOTE_ADDR=address)


def delete_page(client: Client, password: str, address: str = ADDRESS) -> Any:
    return client.post("/settings/account/", {"password": password}, REMOTE_ADDR=address)


def change_page(client: Client, password: str, address: str = ADDRESS) -> Any:
    new = "n3w-passw0rd-xyz"
    body = {"old_password": password, "new_password1": new, "new_password2": new}
    return client.post("/accounts/password/", body, REMOTE_ADDR=address)


def token_api(client: Client, password: str, address: str = ADDRESS) -> Any:
    body = json.dumps({"name": "script", "password": password})
    return client.post("/api/tokens", body, content_type="application/json", REMOTE_ADDR=address)


@pytest.fixture
def signed_in(client: Client, user: User) -> Client:
    client.force_login(user)
    return client


def test_the_eleventh_wrong_password_on_account_deletion_over_the_api_answers_429(
    signed_in: Client, user: User
) -> None:
    for _ in range(10):
        assert delete_api(signed_in, "guess").status_code == 403
    throttled = delete_api(signed_in, "guess")
    assert throttled.status_code == 429
    assert int(throttled["Retry-After"]) > 0
    assert "Too many wrong passwords" in throttled.json()["detail"]
    # Even the right password waits: guessing on is pointless, and nothing was deleted.
    assert delete_api(signed_in, PASSWORD).status_code == 429
    assert User.objects.filter(pk=user.pk).exists()


def test_the_eleventh_wrong_password_on_the_account_page_answers_429_beside_the_field(
    signed_in: Client, user: User
) -> None:
    for _ in range(10):
        assert delete_page(signed_in, "guess").status_code == 403
    throttled = delete_page(signed_in, "guess")
    assert throttled.status_code == 429 and int(throttled["Retry-After"]) > 0
    assert "Too many wrong passwords" in throttled.content.decode()
    assert User.objects.filter(pk=user.pk).exists()


def test_the_eleventh_wrong_old_password_on_password_change_answers_429(signed_in: Client, user: User) -> None:
    for _ in range(10):
        assert change_page(signed_in, "guess").status_code == 200  # the form again, with its error
    throttled = change_page(signed_in, "guess")
    assert throttled.status_code == 429 and int(throttled["Retry-After"]) > 0
    assert "Too many wrong passwords" in throttled.content.decode()
    user.refresh_from_db()
    assert user.check_password(PASSWORD)


def test_the_eleventh_wrong_password_on_token_creation_answers_429(api_client: Client, user: User) -> None:
    for _ in range(10):
        assert token_api(api_client, "guess").status_code == 403
    throttled = token_api(api_client, "guess")
    assert throttled.status_code == 429 and int(throttled["Retry-After"]) > 0
    assert ApiToken.objects.filter(user=user).count() == 1
    assert token_api(api_client, PASSWORD, address="10.2.2.2").status_code == 201  # another address


def test_every_password_check_shares_one_count_per_account_and_address(
    signed_in: Client, user: User, other_user: User
) -> None:
    for _ in range(4):
        delete_api(signed_in, "guess")
    for _ in range(3):
        delete_page(signed_in, "guess")
    for _ in range(3):
        change_page(signed_in, "guess")
    assert delete_api(signed_in, "guess").status_code == 429
    assert change_page(signed_in, "guess").status_code == 429
    # Another account at the same address is not throttled by this one's guesses.
    other = Client()
    other.force_login(other_user)
    assert delete_api(other, "guess").status_code == 403


def test_a_right_password_before_the_limit_still_works(signed_in: Client, user: User) -> None:
    for _ in range(9):
        delete_api(signed_in, "guess")
    assert change_page(signed_in, PASSWORD).status_code == 302
