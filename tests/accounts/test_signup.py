"""Sign-up: an operator can close it (ACCOUNTS_SIGNUP=closed), and one address creates at most
ACCOUNTS_SIGNUPS_PER_HOUR accounts an hour."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from accounts.models import User

pytestmark = pytest.mark.django_db


def sign_up(name: str, address: str = "192.0.2.10") -> Any:
    data = {"username": name, "password1": "a-long-passphrase", "password2": "a-long-passphrase"}
    return Client().post("/accounts/signup/", data, REMOTE_ADDR=address)


def test_one_address_creates_a_limited_number_of_accounts(settings: Any) -> None:
    settings.ACCOUNTS_SIGNUPS_PER_HOUR = 3
    for number in range(3):
        assert sign_up(f"user{number}").status_code == 302
    refused = sign_up("user3")
    assert refused.status_code == 429
    assert 1 <= int(refused["Retry-After"]) <= 3600
    assert "Too many accounts" in refused.content.decode()
    assert not User.objects.filter(username="user3").exists()
    assert sign_up("user4", address="192.0.2.11").status_code == 302  # another address is not affected


def test_a_form_with_errors_does_not_count(settings: Any) -> None:
    settings.ACCOUNTS_SIGNUPS_PER_HOUR = 1
    data = {"username": "x", "password1": "a-long-passphrase", "password2": "different-passphrase"}
    assert Client().post("/accounts/signup/", data, REMOTE_ADDR="192.0.2.12").status_code == 200
    assert sign_up("real", address="192.0.2.12").status_code == 302


def test_closed_sign_up_creates_no_account(settings: Any) -> None:
    settings.ACCOUNTS_SIGNUP = "closed"
    assert Client().get("/accounts/signup/").status_code == 403
    response = sign_up("intruder")
    assert response.status_code == 403
    assert "Sign-up is closed" in response.content.decode()
    assert not User.objects.exists()


def test_the_sign_up_setting_accepts_only_open_or_closed(monkeypatch: Any, tmp_path: Any) -> None:
    from django.core.exceptions import ImproperlyConfigured

    from tests.helpers import load_settings

    monkeypatch.setenv("MEMORA_VAR_DIR", str(tmp_path))
    monkeypatch.setenv("ACCOUNTS_SIGNUP", "closed")
    assert load_settings("config.settings.base")["ACCOUNTS_SIGNUP"] == "closed"
    monkeypatch.setenv("ACCOUNTS_SIGNUP", "maybe")
    with pytest.raises(ImproperlyConfigured):
        load_settings("config.settings.base")
