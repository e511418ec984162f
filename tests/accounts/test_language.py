"""Which language a page, an API answer or a socket speaks (SPEC §8, "Languages"): the user's own
setting, else the browser's Accept-Language, else LANGUAGE_CODE."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from accounts.middleware import background_language, socket_language
from accounts.models import User

pytestmark = pytest.mark.django_db

ZH = {"accept-language": "zh-CN,zh;q=0.9"}
EN = {"accept-language": "en-US,en;q=0.9"}


def _set_language(user: User, language: str) -> None:
    user.language = language
    user.save(update_fields=["language"])


def test_signed_out_pages_follow_the_browser(client: Client) -> None:
    page = client.get(reverse("login"), headers=ZH).content.decode()
    assert '<html lang="zh-hans">' in page
    assert "登录" in page and "Log in" not in page
    page = client.get(reverse("login"), headers=EN).content.decode()
    assert '<html lang="en">' in page
    assert "Log in" in page


def test_without_accept_language_pages_use_language_code(client: Client) -> None:
    response = client.get(reverse("login"))
    assert '<html lang="en">' in response.content.decode()
    assert response["Content-Language"] == "en"


def test_a_chinese_user_gets_chinese_in_an_english_browser(client: Client, user: User) -> None:
    _set_language(user, "zh-hans")
    client.force_login(user)
    response = client.get(reverse("chat:index"), headers=EN)
    page = response.content.decode()
    assert '<html lang="zh-hans">' in page
    assert "新对话" in page and "New conversation" not in page
    assert response["Content-Language"] == "zh-hans"


def test_an_english_user_gets_english_in_a_chinese_browser(client: Client, user: User) -> None:
    _set_language(user, "en")
    client.force_login(user)
    page = client.get(reverse("chat:index"), headers=ZH).content.decode()
    assert '<html lang="en">' in page
    assert "New conversation" in page


def test_a_user_who_follows_the_browser_gets_the_browsers_language(client: Client, user: User) -> None:
    client.force_login(user)
    assert "新对话" in client.get(reverse("chat:index"), headers=ZH).content.decode()
    assert "New conversation" in client.get(reverse("chat:index"), headers=EN).content.decode()


def test_after_login_the_users_setting_wins(client: Client, user: User) -> None:
    user.set_password("correct horse battery")
    user.language = "zh-hans"
    user.save()
    response = client.post(
        reverse("login"), {"username": "alice", "password": "correct horse battery"}, follow=True, headers=EN
    )
    assert '<html lang="zh-hans">' in response.content.decode()


def test_the_javascript_catalogue_speaks_the_pages_language(client: Client) -> None:
    copied = '"Copied": "\\u5df2\\u590d\\u5236"'  # 已复制, as the catalogue's JSON writes it
    assert copied in client.get(reverse("javascript-catalog"), headers=ZH).content.decode()
    assert copied not in client.get(reverse("javascript-catalog"), headers=EN).content.decode()


def test_api_errors_follow_accept_language(client: Client) -> None:
    response = client.get("/api/me", HTTP_AUTHORIZATION="Bearer mem_wrong", headers=ZH)
    assert response.status_code == 401
    assert response.json()["detail"] == "API 令牌无效、已撤销或已过期。"
    response = client.get("/api/me", HTTP_AUTHORIZATION="Bearer mem_wrong", headers=EN)
    assert response.json()["detail"] == "Invalid, revoked or expired API token."


def test_api_not_found_follows_accept_language(api_client: Client) -> None:
    response = api_client.get("/api/conversations/00000000-0000-0000-0000-000000000000", headers=ZH)
    assert response.status_code == 404
    assert response.json() == {"detail": "未找到"}


def test_a_token_client_gets_its_users_language(api_client: Client, user: User) -> None:
    _set_language(user, "zh-hans")
    response = api_client.post("/api/tokens", {"name": "x" * 101}, content_type="application/json", headers=EN)
    assert response.status_code in (400, 422)
    response = api_client.patch("/api/me", {"language": "en"}, content_type="application/json", headers=ZH)
    assert response.status_code == 200
    response = api_client.get("/api/conversations/00000000-0000-0000-0000-000000000000", headers=ZH)
    assert response.json() == {"detail": "Not Found"}


def test_validation_errors_keep_the_one_shape_in_the_users_language(api_client: Client, user: User) -> None:
    response = api_client.patch("/api/me", {"language": "fr"}, content_type="application/json", headers=ZH)
    assert response.status_code == 422
    body = response.json()
    assert body["detail"].startswith("输入无效：body.language")
    assert [error["loc"] for error in body["errors"]] == [["body", "language"]]
    _set_language(user, "zh-hans")  # the token user's setting wins over the header
    response = api_client.patch("/api/me", {"language": "fr"}, content_type="application/json", headers=EN)
    assert response.json()["detail"].startswith("输入无效：")
    _set_language(user, "en")
    response = api_client.patch("/api/me", {"language": "fr"}, content_type="application/json", headers=ZH)
    assert response.json()["detail"].startswith("Invalid input: body.language")


def test_django_failures_under_api_follow_the_language(client: Client) -> None:
    response = client.get("/api/no-such-route", headers=ZH)
    assert response.status_code == 404
    assert response.json() == {"detail": "没有这个 API 路由。"}
    response = client.get("/api/no-such-route", headers=EN)
    assert response.json() == {"detail": "No such API route."}


def test_patch_me_sets_and_clears_the_language(api_client: Client, user: User) -> None:
    response = api_client.patch("/api/me", {"language": "zh-hans"}, content_type="application/json")
    assert response.status_code == 200
    assert response.json()["language"] == "zh-hans"
    assert api_client.get("/api/me").json()["language"] == "zh-hans"
    response = api_client.patch("/api/me", {"language": ""}, content_type="application/json")
    assert response.json()["language"] == ""
    user.refresh_from_db()
    assert user.language == ""


@pytest.mark.parametrize("language", ["fr", "zh", "ZH-HANS", 3])
def test_patch_me_refuses_an_unknown_language(api_client: Client, user: User, language: Any) -> None:
    response = api_client.patch("/api/me", {"language": language}, content_type="application/json")
    assert response.status_code == 422
    user.refresh_from_db()
    assert user.language == ""


def test_the_language_form_saves_and_comes_back(client: Client, user: User) -> None:
    client.force_login(user)
    page = client.get(reverse("account"), headers=EN).content.decode()
    assert 'id="language-form"' in page
    response = client.post(reverse("language"), {"language": "zh-hans", "next": "/settings/account/"}, headers=EN)
    assert response.status_code == 302
    assert response["Location"] == "/settings/account/"
    user.refresh_from_db()
    assert user.language == "zh-hans"
    page = client.get(reverse("account"), headers=EN).content.decode()
    assert "语言已保存。" in page
    assert '<option value="zh-hans" lang="zh-hans" selected>' in page


def test_the_language_form_refuses_an_unknown_language_and_an_outside_next(client: Client, user: User) -> None:
    client.force_login(user)
    response = client.post(reverse("language"), {"language": "fr", "next": "https://evil.example/"})
    assert response["Location"] == reverse("account")
    user.refresh_from_db()
    assert user.language == ""


def test_the_language_form_needs_a_signed_in_user(client: Client) -> None:
    response = client.post(reverse("language"), {"language": "zh-hans"})
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


def test_socket_language_prefers_the_user_then_the_handshake(user: User) -> None:
    scope: dict[str, Any] = {"user": user, "headers": [(b"accept-language", b"zh-CN,zh;q=0.9")]}
    assert socket_language(scope) == "zh-hans"
    user.language = "en"
    assert socket_language(scope) == "en"
    assert socket_language({"user": None, "headers": [(b"accept-language", b"fr-FR")]}) == "en"


def test_background_work_uses_the_setting_else_language_code(user: User) -> None:
    assert background_language(user) == "en"
    user.language = "zh-hans"
    assert background_language(user) == "zh-hans"


@pytest.mark.django_db(transaction=True)
async def test_under_asgi_a_signed_in_users_setting_wins(async_client: Any) -> None:
    from asgiref.sync import sync_to_async

    from tests.factories import UserFactory

    user = await sync_to_async(UserFactory)(username="bo", language="zh-hans")
    await async_client.aforce_login(user)
    response = await async_client.get(reverse("chat:index"), headers={"accept-language": "en"})
    assert '<html lang="zh-hans">' in response.content.decode()
    async_client.cookies.clear()
    response = await async_client.get(reverse("login"), headers={"accept-language": "en"})
    assert '<html lang="en">' in response.content.decode()


def test_the_admin_follows_the_language_with_our_labels_translated(client: Client, user: User) -> None:
    user.is_staff = user.is_superuser = True
    user.save()
    client.force_login(user)
    page = client.get("/admin/", headers=ZH).content.decode()
    assert '<html lang="zh-hans"' in page
    assert "站点管理" in page  # Django's own translation
    assert "账户" in page  # our app's name (gettext_lazy)
    assert "Site administration" in client.get("/admin/", headers=EN).content.decode()
