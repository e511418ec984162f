"""A token's scopes (SPEC §9): made without any, a token may do everything; a narrower one is held to
the routes of its scopes on the JSON API, and answers 403 in the one error shape outside them."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from accounts.models import ALL_SCOPES, ApiToken, User
from accounts.services import TokenRejected, api_token_create

pytestmark = pytest.mark.django_db


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_a_token_made_without_scopes_has_them_all(user: User) -> None:
    token, _plain = api_token_create(user=user)
    assert token.scopes == ALL_SCOPES and token.has_full_access


def test_scopes_are_kept_in_their_order_and_unknown_ones_refused(user: User) -> None:
    token, _plain = api_token_create(user=user, scopes=["chat", "memory:read", "chat"])
    assert token.scopes == ["memory:read", "chat"]
    with pytest.raises(TokenRejected):
        api_token_create(user=user, scopes=["memory:everything"])
    with pytest.raises(TokenRejected):
        api_token_create(user=user, scopes=[])


def test_the_api_creates_a_scoped_token_and_lists_its_scopes(client: Client, user: User) -> None:
    client.force_login(user)
    made = client.post("/api/tokens", {"name": "editor", "scopes": ["memory:read"]}, content_type="application/json")
    assert made.status_code == 201 and made.json()["scopes"] == ["memory:read"]
    listed = client.get("/api/tokens").json()
    assert listed[0]["scopes"] == ["memory:read"] and listed[0]["reads"] == [] and listed[0]["last_client"] == ""
    unknown = client.post("/api/tokens", {"scopes": ["root"]}, content_type="application/json")
    assert unknown.status_code == 422


@pytest.mark.needs_memory
def test_a_read_only_token_reads_memories_and_nothing_else(client: Client, user: User) -> None:
    _token, plain = api_token_create(user=user, scopes=["memory:read"])
    assert client.get("/api/memories", headers=bearer(plain)).status_code == 200
    assert client.get("/api/me", headers=bearer(plain)).status_code == 200
    auth = bearer(plain)
    refused = [
        client.post("/api/memories", {"content": "I like tea."}, content_type="application/json", headers=auth),
        client.get("/api/conversations", headers=bearer(plain)),
        client.get("/api/tokens", headers=bearer(plain)),
        client.patch("/api/me", {"language": "en"}, content_type="application/json", headers=bearer(plain)),
    ]
    assert [r.status_code for r in refused] == [403, 403, 403, 403]
    assert set(refused[0].json()) == {"detail"} and "scopes" in refused[0].json()["detail"]


def test_a_chat_token_may_use_conversations_but_not_memories(client: Client, user: User) -> None:
    _token, plain = api_token_create(user=user, scopes=["chat"])
    assert client.get("/api/conversations", headers=bearer(plain)).status_code == 200
    assert client.get("/api/memories", headers=bearer(plain)).status_code in (403, 404)  # 404 without the memory app


def test_tokens_made_before_scopes_keep_full_access(user: User, client: Client) -> None:
    token, plain = api_token_create(user=user)
    ApiToken.objects.filter(pk=token.pk).update(scopes=ALL_SCOPES)  # as the migration's default fills them
    assert client.get("/api/tokens", headers=bearer(plain)).status_code == 200


def test_the_tokens_page_makes_a_scoped_token(client: Client, user: User, django_assert_max_num_queries: Any) -> None:
    client.force_login(user)
    response = client.post(
        "/settings/tokens/", {"name": "reader", "expires_in": "30", "scopes": ["memory:read", "chat"]}
    )
    assert response.status_code == 200
    assert ApiToken.objects.get(name="reader").scopes == ["memory:read", "chat"]
    refused = client.post("/settings/tokens/", {"name": "none", "expires_in": "30"})
    assert refused.status_code == 422 and not ApiToken.objects.filter(name="none").exists()
    with django_assert_max_num_queries(12):
        assert client.get("/settings/tokens/").status_code == 200


def test_a_token_is_limited_to_one_of_the_users_projects(client: Client, user: User, other_user: User) -> None:
    from chat.projects import project_create

    mine = project_create(user=user, name="Thesis")
    theirs = project_create(user=other_user, name="Secret")
    client.force_login(user)
    made = client.post("/api/tokens", {"project_id": mine.pk}, content_type="application/json")
    assert made.status_code == 201 and made.json()["project_id"] == mine.pk
    refused = client.post("/api/tokens", {"project_id": theirs.pk}, content_type="application/json")
    assert refused.status_code == 404 and set(refused.json()) == {"detail"}
    plain = made.json()["token"]
    assert client.get("/api/me", headers=bearer(plain)).status_code == 200
    assert client.get("/api/conversations", headers=bearer(plain)).status_code == 403  # MCP and /v1 only


def test_the_tokens_page_offers_the_users_projects(client: Client, user: User, other_user: User) -> None:
    from chat.projects import project_create

    mine = project_create(user=user, name="Thesis")
    project_create(user=other_user, name="Secret")
    client.force_login(user)
    page = client.get("/settings/tokens/").content.decode()
    assert "Thesis" in page and "Secret" not in page
    client.post("/settings/tokens/", {"name": "t", "expires_in": "30", "scopes": ["chat"], "project": str(mine.pk)})
    assert ApiToken.objects.get(name="t").project_id == mine.pk
    assert "in the project" in client.get("/settings/tokens/").content.decode()
