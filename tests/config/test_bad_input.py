"""Every bad input answers a 4xx with a JSON `detail` and writes nothing, the same on SQLite and PostgreSQL."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from accounts.models import User
from chat.models import Conversation, Message
from chat.negotiation import wants_event_stream
from memory.models import Memory

pytestmark = pytest.mark.django_db(transaction=True)

JSON = "application/json"
LONE_SURROGATE = '"a\\ud800b"'  # valid JSON, invalid text


def raw(client: Client, method: str, path: str, body: str | bytes, **extra: Any) -> Any:
    return getattr(client, method)(path, body, content_type=JSON, **extra)


def written() -> tuple[int, int, int]:
    return Conversation.objects.count(), Message.objects.count(), Memory.objects.count()


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("post", "/api/memories", '{"content": ' + LONE_SURROGATE + "}"),
        ("post", "/api/conversations", '{"title": ' + LONE_SURROGATE + "}"),
        ("post", "/api/conversations/{id}/messages", '{"content": ' + LONE_SURROGATE + "}"),
        ("patch", "/api/conversations/{id}", '{"title": ' + LONE_SURROGATE + "}"),
        ("post", "/api/memories", '{"content": "ok", ' + LONE_SURROGATE + ": 1}"),
    ],
)
def test_a_lone_surrogate_answers_400_with_a_detail(
    api_client: Client, conversation: Conversation, method: str, path: str, body: str
) -> None:
    before = written()
    response = raw(api_client, method, path.format(id=conversation.pk), body)
    assert response.status_code == 400
    assert "surrogate" in response.json()["detail"]
    assert written() == before


@pytest.mark.parametrize("content", ["a\x00b", "\x00"])
def test_a_nul_in_memory_content_answers_422(api_client: Client, content: str) -> None:
    response = raw(api_client, "post", "/api/memories", json.dumps({"content": content}))
    assert response.status_code == 422
    assert "NUL" in response.json()["detail"]
    assert Memory.objects.count() == 0


def test_a_nul_in_a_memory_edit_answers_422(api_client: Client, user: User) -> None:
    memory = Memory.objects.create(owner=user, content="Likes tea.", origin=Memory.Origin.USER)
    response = raw(api_client, "patch", f"/api/memories/{memory.pk}", json.dumps({"content": "Likes\x00 coffee."}))
    assert response.status_code == 422
    assert list(Memory.objects.values_list("content", flat=True)) == ["Likes tea."]


def test_a_nul_in_the_memory_page_search_answers_400(client: Client, user: User) -> None:
    client.force_login(user)
    assert client.get("/settings/memory/", {"q": "tea\x00"}, HTTP_HX_REQUEST="true").status_code == 400
    assert client.get("/settings/memory/", {"q": "tea\x00"}).status_code == 400


def test_a_body_over_the_upload_limit_answers_413(api_client: Client, settings: Any) -> None:
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    response = raw(api_client, "post", "/api/memories", json.dumps({"content": "x" * 2000}))
    assert response.status_code == 413
    assert "1,000 bytes" in response.json()["detail"]
    assert Memory.objects.count() == 0


def test_a_body_over_the_limit_to_the_turn_route_answers_413(
    api_client: Client, conversation: Conversation, settings: Any
) -> None:
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    before = written()
    response = raw(
        api_client, "post", f"/api/conversations/{conversation.pk}/messages", json.dumps({"content": "x" * 2000})
    )
    assert response.status_code == 413
    assert written() == before


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("post", "/api/memories", {"content": "Likes tea.", "origin": "extracted"}),
        ("patch", "/api/memories/{memory}", {"content": "Likes coffee.", "owner": 1}),
        ("post", "/api/conversations", {"title": "x", "owner": 2}),
        ("patch", "/api/conversations/{id}", {"title": "x", "temporary": True}),
        ("post", "/api/conversations/{id}/messages", {"content": "hi", "role": "assistant"}),
        ("patch", "/api/me", {"memory_enabled": False, "is_staff": True}),
    ],
)
def test_unknown_fields_answer_422(
    api_client: Client, user: User, conversation: Conversation, method: str, path: str, body: dict[str, Any]
) -> None:
    memory = Memory.objects.create(owner=user, content="Likes milk.", origin=Memory.Origin.USER)
    before = written()
    response = raw(api_client, method, path.format(id=conversation.pk, memory=memory.pk), json.dumps(body))
    assert response.status_code == 422
    assert "Extra inputs are not permitted" in json.dumps(response.json()["detail"])
    assert written() == before
    user.refresh_from_db()
    assert user.memory_enabled and not user.is_staff


@pytest.mark.parametrize(
    ("method", "path"),
    [("post", "/api/memories"), ("post", "/api/conversations"), ("patch", "/api/me"), ("delete", "/api/memories")],
)
def test_anonymous_writes_answer_401_not_a_csrf_403(client: Client, method: str, path: str) -> None:
    response = raw(client, method, path, json.dumps({"content": "x"}))
    assert response.status_code == 401
    assert "detail" in response.json()


def test_a_bad_token_answers_401_even_with_a_signed_in_session(client: Client, user: User) -> None:
    client.force_login(user)
    response = raw(client, "post", "/api/memories", json.dumps({"content": "x"}), HTTP_AUTHORIZATION="Bearer mem_wrong")
    assert response.status_code == 401
    assert Memory.objects.count() == 0


def test_a_signed_in_session_without_the_csrf_token_is_still_refused() -> None:
    browser = Client(enforce_csrf_checks=True)
    user = User.objects.create_user(username="carol", password="x-long-password")
    browser.force_login(user)
    response = raw(browser, "post", "/api/memories", json.dumps({"content": "Likes tea."}))
    assert response.status_code == 403
    assert Memory.objects.count() == 0


@pytest.mark.parametrize(
    ("accept", "stream"),
    [
        ("text/event-stream", True),
        ("TEXT/EVENT-STREAM", True),
        ("text/event-stream; charset=utf-8", True),
        ("application/json, text/event-stream", True),
        ("text/event-stream;q=0", False),
        ("text/event-stream;q=0.5, application/json", False),
        ("application/json;q=0.2, text/event-stream;q=0.9", True),
        ("text/event-stream;q=0.5, */*;q=0.9", False),
        ("*/*", False),
        ("text/*", False),
        ("", False),
        (None, False),
        ("text/event-stream;q=abc", False),
        ("application/json; note=text/event-stream", False),
    ],
)
def test_accept_is_negotiated_by_media_type_and_quality(accept: str | None, stream: bool) -> None:
    assert wants_event_stream(accept) is stream


@pytest.mark.parametrize("offset", [2**31, 2**63, 10**30])
def test_an_offset_beyond_the_databases_integers_answers_4xx(api_client: Client, offset: int) -> None:
    response = api_client.get(f"/api/conversations?limit=5&offset={offset}")
    assert 400 <= response.status_code < 500
    assert response.json()["detail"]


def test_the_largest_offset_allowed_answers_an_empty_page(api_client: Client) -> None:
    response = api_client.get(f"/api/conversations?limit=5&offset={2**31 - 1}")
    assert response.status_code == 200 and response.json() == []
