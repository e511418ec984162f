"""The conversations JSON API (SPEC §5): routes, ownership, authentication, bad input, query counts."""

from __future__ import annotations

import json
import uuid
from typing import Any, cast

import pytest
from django.test import Client

from accounts.models import User
from chat.models import AgentState, Conversation, Message
from chat.services import conversation_create, conversation_rename
from chat.turn.transactions import turn_start
from tests.factories import ConversationFactory, MessageFactory, UserFactory

pytestmark = pytest.mark.django_db

# Requests that reach the agent turn: its ORM calls close the connection between steps (as they must
# in a long-lived server), which a test wrapped in a transaction cannot survive.
TURN = pytest.mark.django_db(transaction=True)

JSON = "application/json"


def send(client: Client, method: str, path: str, body: Any = None, **extra: Any) -> Any:
    data = body if isinstance(body, str) else json.dumps(body) if body is not None else ""
    return getattr(client, method.lower())(path, data, content_type=JSON, **extra)


def counts() -> tuple[int, int, int, int]:
    """Conversations, messages, states that were written to, and taken locks: what a refused request must not change."""
    states = AgentState.objects.filter(version__gt=0).count()
    locked = Conversation.objects.filter(lock_token__isnull=False).count()
    return Conversation.objects.count(), Message.objects.count(), states, locked


@pytest.fixture
def conversation(conversation: Conversation) -> Conversation:
    """The shared conversation, titled: these tests read and change its title."""
    return conversation_rename(conversation=conversation, title="Mine")


# --- conversations ---


def test_list_returns_only_my_conversations_newest_first(api_client: Client, user: User, other_user: User) -> None:
    older = conversation_create(user=user, title="Older")
    newer = conversation_create(user=user, title="Newer")
    conversation_create(user=other_user, title="Not mine")
    response = api_client.get("/api/conversations")
    assert response.status_code == 200
    body = response.json()
    assert [c["id"] for c in body] == [str(newer.id), str(older.id)]
    assert set(body[0]) == {
        "id",
        "title",
        "temporary",
        "model",
        "pinned",
        "created_at",
        "updated_at",
        "project_id",
        "imported_from",
        "imported_id",
    }


def test_create_returns_201_with_the_new_conversation(api_client: Client, user: User) -> None:
    response = send(api_client, "POST", "/api/conversations", {"title": "Trip", "temporary": True})
    assert response.status_code == 201
    body = response.json()
    conversation = Conversation.objects.get(pk=body["id"])
    assert (conversation.owner, conversation.title, conversation.temporary) == (user, "Trip", True)
    assert (body["title"], body["temporary"]) == ("Trip", True)
    assert AgentState.objects.filter(conversation=conversation).exists()


def test_create_with_an_empty_body_object_uses_defaults(api_client: Client) -> None:
    response = send(api_client, "POST", "/api/conversations", {})
    assert response.status_code == 201
    assert (response.json()["title"], response.json()["temporary"]) == ("", False)


@pytest.mark.parametrize(
    "body, expected",
    [
        ({"title": "x" * 201}, "at most 200"),
        ({"title": 5}, "valid string"),
        ({"temporary": "perhaps"}, "valid boolean"),
        ({"title": "a\u0000b"}, "NUL character"),
        ("{not json", "Cannot parse request body"),
    ],
)
def test_create_with_bad_input_answers_4xx_and_writes_nothing(api_client: Client, body: Any, expected: str) -> None:
    response = send(api_client, "POST", "/api/conversations", body)
    assert response.status_code in (400, 422)
    assert expected in response.content.decode()
    assert Conversation.objects.count() == 0


def test_get_returns_the_conversation(api_client: Client, conversation: Conversation) -> None:
    response = api_client.get(f"/api/conversations/{conversation.id}")
    assert response.status_code == 200
    assert response.json()["title"] == "Mine"


def test_patch_renames(api_client: Client, conversation: Conversation) -> None:
    response = send(api_client, "PATCH", f"/api/conversations/{conversation.id}", {"title": "  Renamed "})
    assert response.status_code == 200
    assert response.json()["title"] == "Renamed"
    assert Conversation.objects.get(pk=conversation.pk).title == "Renamed"


@pytest.mark.parametrize(
    "body", [{"title": ""}, {"title": "   "}, {}, {"title": None}, {"title": "x" * 201}, {"title": "a\u0000b"}]
)
def test_patch_with_a_bad_title_answers_422_and_changes_nothing(
    api_client: Client, conversation: Conversation, body: dict[str, Any]
) -> None:
    response = send(api_client, "PATCH", f"/api/conversations/{conversation.id}", body)
    assert response.status_code == 422
    assert response.json()["detail"]
    assert Conversation.objects.get(pk=conversation.pk).title == "Mine"


def test_delete_removes_the_conversation_with_its_messages(api_client: Client, conversation: Conversation) -> None:
    MessageFactory(conversation=conversation)
    response = api_client.delete(f"/api/conversations/{conversation.id}")
    assert response.status_code == 204
    assert not Conversation.objects.exists() and not Message.objects.exists()
    assert api_client.get(f"/api/conversations/{conversation.id}").status_code == 404


# --- messages ---


def test_message_list_returns_the_display_log_in_order(api_client: Client, conversation: Conversation) -> None:
    first = cast(Message, MessageFactory(conversation=conversation, content="first"))
    second = cast(Message, MessageFactory(conversation=conversation, role="assistant", content="second"))
    MessageFactory(content="another conversation")
    response = api_client.get(f"/api/conversations/{conversation.id}/messages")
    assert response.status_code == 200
    body = response.json()
    assert [m["id"] for m in body] == [first.id, second.id]
    assert set(body[0]) == {
        "id",
        "conversation_id",
        "role",
        "content",
        "status",
        "error",
        "memory_status",
        "created_at",
        "updated_at",
        "memories_used",
        "version",
        "alternatives",
    }
    assert (body[1]["role"], body[1]["memory_status"]) == ("assistant", "")
    assert body[1]["memories_used"] == []  # nothing recorded (and [] without the memory app)


@TURN
def test_send_runs_one_turn_and_returns_both_messages(
    api_client: Client, conversation: Conversation, fake_model: Any
) -> None:
    fake_model.reply("Hello ", "back")
    response = send(api_client, "POST", f"/api/conversations/{conversation.id}/messages", {"content": "Hello"})
    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["user_message"]["content"], body["user_message"]["role"]) == ("Hello", "user")
    assert (body["assistant_message"]["content"], body["assistant_message"]["status"]) == ("Hello back", "complete")
    assert fake_model.requests[0]["messages"][-1] == {"role": "user", "content": "Hello"}
    assert Message.objects.filter(conversation=conversation).count() == 2


@TURN
def test_send_with_a_provider_failure_answers_502_and_keeps_the_user_message(
    api_client: Client, conversation: Conversation, fake_model: Any
) -> None:
    fake_model.fail("Partial", kind="timeout", message="The model provider timed out.")
    response = send(api_client, "POST", f"/api/conversations/{conversation.id}/messages", {"content": "Hello"})
    assert response.status_code == 502
    body = response.json()
    assert body["detail"] == "The model provider timed out."
    assert body["user_message"]["content"] == "Hello"
    assert (body["assistant_message"]["status"], body["assistant_message"]["content"]) == ("error", "Partial")
    assert Message.objects.filter(role="user", content="Hello").exists()
    again = send(api_client, "POST", f"/api/conversations/{conversation.id}/messages", {"content": "Again"})
    assert again.status_code == 200


@TURN
def test_send_while_another_turn_runs_answers_409_and_writes_nothing(
    api_client: Client, user: User, conversation: Conversation, fake_model: Any
) -> None:
    turn_start(user=user, conversation=conversation, content="Running")
    before = counts()
    response = send(api_client, "POST", f"/api/conversations/{conversation.id}/messages", {"content": "Me too"})
    assert response.status_code == 409
    assert "Another reply is still being written" in response.json()["detail"]
    assert counts() == before
    assert fake_model.requests == []


@TURN
def test_send_with_all_run_slots_taken_answers_429(
    api_client: Client, user: User, conversation: Conversation, fake_model: Any
) -> None:
    for _ in range(2):
        turn_start(user=user, conversation=conversation_create(user=user), content="Running")
    before = counts()
    response = send(api_client, "POST", f"/api/conversations/{conversation.id}/messages", {"content": "Third"})
    assert response.status_code == 429
    assert "2 replies" in response.json()["detail"]
    assert counts() == before


@TURN
@pytest.mark.parametrize(
    "body, status, expected",
    [
        ({"content": ""}, 422, "String should have at least 1 character"),
        ({"content": "  \n\t  "}, 422, "Must not be blank"),
        ({"content": "x" * 8001}, 422, "String should have at most 8000 characters"),
        ({"content": "a\u0000b"}, 422, "NUL character"),
        ("{not json", 400, "Cannot parse request body"),
        ("", 422, "Field required"),
        ({}, 422, "Field required"),
        ({"text": "hello"}, 422, "Field required"),
        ({"content": 5}, 422, "Input should be a valid string"),
        ({"content": None}, 422, "Input should be a valid string"),
        ({"content": ["a"]}, 422, "Input should be a valid string"),
        (["content"], 422, "valid dictionary"),
    ],
)
def test_send_with_bad_input_answers_a_clear_4xx_and_writes_nothing(
    api_client: Client, conversation: Conversation, fake_model: Any, body: Any, status: int, expected: str
) -> None:
    before = counts()
    response = send(api_client, "POST", f"/api/conversations/{conversation.id}/messages", body)
    assert response.status_code == status
    assert expected in response.content.decode()
    assert counts() == before
    assert fake_model.requests == []


@TURN
def test_send_of_exactly_8000_characters_is_accepted(
    api_client: Client, conversation: Conversation, fake_model: Any
) -> None:
    response = send(api_client, "POST", f"/api/conversations/{conversation.id}/messages", {"content": "x" * 8000})
    assert response.status_code == 200


@TURN
def test_retry_writes_the_failed_reply_again_in_place(
    api_client: Client, conversation: Conversation, fake_model: Any
) -> None:
    fake_model.fail("Partial", kind="timeout", message="The model provider timed out.")
    failed = send(api_client, "POST", f"/api/conversations/{conversation.id}/messages", {"content": "Hello"}).json()
    fake_model.reply("Hello again")
    response = send(api_client, "POST", f"/api/conversations/{conversation.id}/retry")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["user_message"]["id"] == failed["user_message"]["id"]
    assert body["assistant_message"]["id"] == failed["assistant_message"]["id"]
    assert (body["assistant_message"]["status"], body["assistant_message"]["content"]) == ("complete", "Hello again")
    assert Message.objects.filter(conversation=conversation).count() == 2
    state = AgentState.objects.get(conversation=conversation)
    assert state.context == [{"role": "user", "content": "Hello"}, {"role": "assistant", "content": "Hello again"}]


@TURN
def test_retry_with_nothing_failed_answers_409_and_writes_nothing(
    api_client: Client, conversation: Conversation, fake_model: Any
) -> None:
    empty = send(api_client, "POST", f"/api/conversations/{conversation.id}/retry")
    fake_model.reply("Fine")
    send(api_client, "POST", f"/api/conversations/{conversation.id}/messages", {"content": "Hello"})
    before = counts()
    response = send(api_client, "POST", f"/api/conversations/{conversation.id}/retry")
    assert (empty.status_code, response.status_code) == (409, 409)
    assert "Only the latest reply can be retried" in response.json()["detail"]
    assert counts() == before
    assert Message.objects.get(role="assistant").content == "Fine"


# --- ownership, unknown ids, authentication ---


def _route(method: str, path: str, body: Any) -> Any:
    # The turn routes authenticate and look the conversation up in the event loop's thread pool, on
    # another connection than the test's own: what they read must be committed.
    turn = method == "POST" and path.endswith(("/messages", "/retry"))
    return pytest.param(method, path, body, marks=[TURN] if turn else [])


CONVERSATION_ROUTES = [
    _route("GET", "/api/conversations/{id}", None),
    _route("PATCH", "/api/conversations/{id}", {"title": "Stolen"}),
    _route("DELETE", "/api/conversations/{id}", None),
    _route("GET", "/api/conversations/{id}/messages", None),
    _route("POST", "/api/conversations/{id}/messages", {"content": "Hi"}),
    _route("POST", "/api/conversations/{id}/retry", None),
]
ALL_ROUTES = [
    _route("GET", "/api/me", None),
    _route("PATCH", "/api/me", {"memory_enabled": False}),
    _route("GET", "/api/conversations", None),
    _route("POST", "/api/conversations", {"title": "New"}),
    *CONVERSATION_ROUTES,
]


@pytest.mark.parametrize("method, path, body", CONVERSATION_ROUTES)
def test_another_users_conversation_is_404_on_every_route_and_untouched(
    api_client: Client, other_user: User, fake_model: Any, method: str, path: str, body: Any
) -> None:
    theirs = conversation_create(user=other_user, title="Theirs")
    MessageFactory(conversation=theirs, content="private")
    before = counts()
    response = send(api_client, method, path.format(id=theirs.id), body)
    assert response.status_code == 404
    assert "private" not in response.content.decode()
    assert counts() == before
    assert Conversation.objects.get(pk=theirs.pk).title == "Theirs"
    assert fake_model.requests == []


@pytest.mark.parametrize("method, path, body", CONVERSATION_ROUTES)
def test_an_unknown_conversation_id_is_404(api_client: Client, method: str, path: str, body: Any) -> None:
    response = send(api_client, method, path.format(id=uuid.uuid4()), body)
    assert response.status_code == 404
    assert response.json() == {"detail": "Not Found"}


@pytest.mark.parametrize("method, path, body", CONVERSATION_ROUTES)
@pytest.mark.parametrize("bad_id", ["not-a-uuid", "123", "00000000-0000-0000-0000"])
def test_a_malformed_conversation_id_is_422_with_a_message(
    api_client: Client, method: str, path: str, body: Any, bad_id: str
) -> None:
    before = counts()
    response = send(api_client, method, path.format(id=bad_id), body)
    assert response.status_code == 422
    assert "valid UUID" in response.content.decode()
    assert counts() == before


@pytest.mark.parametrize("method, path, body", ALL_ROUTES)
def test_every_route_answers_401_without_authentication(
    client: Client, conversation: Conversation, method: str, path: str, body: Any
) -> None:
    before = counts()
    response = send(client, method, path.format(id=conversation.id), body)
    assert response.status_code == 401
    assert counts() == before


@pytest.mark.parametrize("method, path, body", ALL_ROUTES)
def test_a_bad_bearer_token_is_401(
    client: Client, conversation: Conversation, method: str, path: str, body: Any
) -> None:
    response = send(client, method, path.format(id=conversation.id), body, HTTP_AUTHORIZATION="Bearer mem_wrong")
    assert response.status_code == 401


UNSAFE = [route for route in ALL_ROUTES if route.values[0] != "GET"]


@pytest.mark.parametrize("method, path, body", UNSAFE)
def test_session_auth_without_csrf_is_403_on_unsafe_methods(
    user: User, conversation: Conversation, fake_model: Any, method: str, path: str, body: Any
) -> None:
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(user)
    before = counts()
    response = send(browser, method, path.format(id=conversation.id), body)
    assert response.status_code == 403
    assert "CSRF" in response.content.decode()
    assert counts() == before
    assert User.objects.get(pk=user.pk).memory_enabled is True


@TURN
@pytest.mark.parametrize("method, path, body", UNSAFE)
def test_session_auth_with_csrf_token_works(
    user: User, conversation: Conversation, fake_model: Any, method: str, path: str, body: Any
) -> None:
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(user)
    secret = "a" * 32
    browser.cookies["csrftoken"] = secret
    response = send(browser, method, path.format(id=conversation.id), body, HTTP_X_CSRFTOKEN=secret)
    if path.endswith("/retry"):  # past authentication and CSRF: there is just nothing to retry yet
        assert response.status_code == 409, response.content
        return
    assert response.status_code in (200, 201, 204), response.content


def test_session_auth_reads_without_csrf(user: User, conversation: Conversation) -> None:
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(user)
    assert browser.get("/api/conversations").status_code == 200


@TURN
@pytest.mark.parametrize("method, path, body", UNSAFE)
def test_bearer_auth_needs_no_csrf(
    api_token: str, conversation: Conversation, fake_model: Any, method: str, path: str, body: Any
) -> None:
    client = Client(enforce_csrf_checks=True)
    response = send(client, method, path.format(id=conversation.id), body, HTTP_AUTHORIZATION=f"Bearer {api_token}")
    expected = (409,) if path.endswith("/retry") else (200, 201, 204)  # 409: authenticated, nothing to retry
    assert response.status_code in expected, response.content


# --- docs and query counts ---


def test_api_docs_render(client: Client) -> None:
    response = client.get("/api/docs")
    assert response.status_code == 200
    assert b"openapi.json" in response.content


def test_openapi_schema_lists_every_route(client: Client) -> None:
    paths = client.get("/api/openapi.json").json()["paths"]
    assert set(paths["/api/conversations"]) >= {"get", "post"}
    assert set(paths["/api/conversations/{conversation_id}"]) >= {"get", "patch", "delete"}
    assert set(paths["/api/conversations/{conversation_id}/messages"]) >= {"get", "post"}
    assert set(paths["/api/conversations/{conversation_id}/retry"]) == {"post"}
    assert set(paths["/api/me"]) >= {"get", "patch"}


def test_conversation_list_query_count_does_not_grow_with_conversations(
    api_client: Client, user: User, django_assert_max_num_queries: Any
) -> None:
    ConversationFactory(owner=user)
    with django_assert_max_num_queries(3):  # token lookup, token last-used, the list
        assert len(api_client.get("/api/conversations").json()) == 1
    ConversationFactory.create_batch(20, owner=user)
    with django_assert_max_num_queries(3):
        assert len(api_client.get("/api/conversations").json()) == 21


def test_message_list_query_count_does_not_grow_with_messages(
    api_client: Client, conversation: Conversation, django_assert_max_num_queries: Any
) -> None:
    MessageFactory(conversation=conversation)
    url = f"/api/conversations/{conversation.id}/messages"
    with django_assert_max_num_queries(4):  # token lookup, token last-used, the conversation, the list
        assert len(api_client.get(url).json()) == 1
    MessageFactory.create_batch(30, conversation=conversation)
    with django_assert_max_num_queries(4):
        assert len(api_client.get(url).json()) == 31


def test_session_authenticated_list_query_count(client: Client, user: User, django_assert_max_num_queries: Any) -> None:
    ConversationFactory.create_batch(5, owner=UserFactory())
    ConversationFactory.create_batch(5, owner=user)
    client.force_login(user)
    with django_assert_max_num_queries(3):  # session, user, the list
        assert len(client.get("/api/conversations").json()) == 5
