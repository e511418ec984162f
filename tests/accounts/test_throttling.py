"""Sign-ins are throttled per account and per address (django-axes); failed bearer tokens per address."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from accounts.models import User

pytestmark = pytest.mark.django_db

PASSWORD = "correct-horse-battery"


@pytest.fixture
def alice(db: None) -> User:
    return User.objects.create_user(username="alice", password=PASSWORD)


def log_in(client: Client, username: str, password: str, address: str = "10.0.0.1") -> Any:
    return client.post("/accounts/login/", {"username": username, "password": password}, REMOTE_ADDR=address)


def test_wrong_passwords_lock_the_account_at_that_address_with_a_clear_message_even_for_the_right_one(
    client: Client, alice: User, settings: Any
) -> None:
    settings.AXES_FAILURE_LIMIT = 3
    for _ in range(2):
        assert log_in(client, "alice", "wrong").status_code == 200  # the form again, with its error
    locked = log_in(client, "alice", "wrong")
    assert locked.status_code == 429
    assert "Too many sign-in attempts" in locked.content.decode()
    assert "Try again in 15 minutes" in locked.content.decode()
    assert int(locked["Retry-After"]) == 15 * 60
    # The right password does not get through from that address while it is locked.
    right = log_in(client, "alice", PASSWORD)
    assert right.status_code == 429
    assert "_auth_user_id" not in client.session


def test_a_guesser_does_not_lock_the_real_owner_out_from_a_fresh_address(
    client: Client, alice: User, settings: Any
) -> None:
    settings.AXES_FAILURE_LIMIT = 3
    for _ in range(5):
        log_in(client, "alice", "wrong", address="10.6.6.6")
    assert log_in(client, "alice", PASSWORD, address="10.6.6.6").status_code == 429
    assert log_in(Client(), "alice", PASSWORD, address="10.0.0.2").status_code == 302


def test_one_accounts_wrong_passwords_do_not_lock_others_out_of_the_same_address(
    client: Client, alice: User, settings: Any
) -> None:
    User.objects.create_user(username="bob", password=PASSWORD)
    for _ in range(settings.AXES_FAILURE_LIMIT + 5):
        log_in(client, "mallory", "guess", address="10.5.5.5")
    assert log_in(client, "mallory", "guess", address="10.5.5.5").status_code == 429
    assert log_in(Client(), "alice", PASSWORD, address="10.5.5.5").status_code == 302
    assert log_in(Client(), "bob", PASSWORD, address="10.5.5.5").status_code == 302


def test_many_accounts_tried_from_one_address_lock_that_address(client: Client, alice: User, settings: Any) -> None:
    settings.AXES_FAILURE_LIMIT = 3
    for name in ("bob", "carol", "dave"):
        log_in(client, name, "guess", address="10.9.9.9")
    assert log_in(client, "alice", PASSWORD, address="10.9.9.9").status_code == 429
    assert log_in(Client(), "alice", PASSWORD, address="10.0.0.7").status_code == 302  # others still sign in


def test_a_successful_sign_in_resets_the_count(client: Client, alice: User, settings: Any) -> None:
    settings.AXES_FAILURE_LIMIT = 3
    log_in(client, "alice", "wrong")
    log_in(client, "alice", "wrong")
    assert log_in(client, "alice", PASSWORD).status_code == 302
    client.logout()
    log_in(client, "alice", "wrong")
    assert log_in(client, "alice", PASSWORD).status_code == 302


def test_failed_bearer_tokens_from_one_address_answer_429_with_retry_after(
    client: Client, api_token: str, settings: Any
) -> None:
    settings.API_AUTH_FAILURE_LIMIT = 3
    for attempt in range(3):
        response = client.get("/api/me", HTTP_AUTHORIZATION=f"Bearer mem_guess{attempt}", REMOTE_ADDR="10.1.1.1")
        assert response.status_code == 401
    throttled = client.get("/api/me", HTTP_AUTHORIZATION="Bearer mem_guess-again", REMOTE_ADDR="10.1.1.1")
    assert throttled.status_code == 429
    assert 1 <= int(throttled["Retry-After"]) <= settings.API_AUTH_FAILURE_WINDOW
    assert "Too many failed token attempts" in throttled.json()["detail"]
    # Another address, and a correct token, are unaffected.
    assert client.get("/api/me", HTTP_AUTHORIZATION=f"Bearer {api_token}", REMOTE_ADDR="10.1.1.2").status_code == 200


def test_the_failure_limit_refuses_guesses_not_a_valid_token_from_the_same_address(
    client: Client, api_token: str, settings: Any
) -> None:
    settings.API_AUTH_FAILURE_LIMIT = 2
    for attempt in range(3):
        client.get("/api/me", HTTP_AUTHORIZATION=f"Bearer mem_guess{attempt}", REMOTE_ADDR="10.1.1.3")
    assert client.get("/api/me", HTTP_AUTHORIZATION="Bearer mem_guess", REMOTE_ADDR="10.1.1.3").status_code == 429
    assert client.get("/api/me", HTTP_AUTHORIZATION=f"Bearer {api_token}", REMOTE_ADDR="10.1.1.3").status_code == 200


def test_good_tokens_do_not_count_as_failures(client: Client, api_token: str, settings: Any) -> None:
    settings.API_AUTH_FAILURE_LIMIT = 2
    for _ in range(5):
        assert client.get("/api/me", HTTP_AUTHORIZATION=f"Bearer {api_token}").status_code == 200


def test_a_failed_sign_in_from_a_client_without_an_ip_address_is_recorded_without_one() -> None:
    from django.test import RequestFactory

    from accounts.throttle import axes_client_ip

    assert axes_client_ip(RequestFactory().get("/", REMOTE_ADDR="testclient")) is None
    assert axes_client_ip(RequestFactory().get("/", REMOTE_ADDR="2001:db8::1")) == "2001:db8::1"
