"""Regenerate the latest reply, keep its versions, show another: the API, the state, the next request."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from accounts.models import User
from chat.models import AgentState, Conversation, Message
from chat.services import conversation_create

TURN = pytest.mark.django_db(transaction=True)
pytestmark = pytest.mark.django_db
JSON = "application/json"


def post(client: Client, path: str, body: Any = None) -> Any:
    return client.post(path, json.dumps(body) if body is not None else "", content_type=JSON)


def replies(conversation: Conversation) -> list[Message]:
    return list(Message.objects.filter(conversation=conversation, role="assistant"))


@TURN
def test_regenerating_twice_keeps_three_versions_and_the_state_holds_the_shown_one(
    api_client: Client, conversation: Conversation, fake_model: Any
) -> None:
    url = f"/api/conversations/{conversation.pk}"
    fake_model.reply("First answer")
    post(api_client, f"{url}/messages", {"content": "Hello"})
    fake_model.reply("Second answer")
    assert post(api_client, f"{url}/regenerate").status_code == 200
    fake_model.reply("Third answer")
    body = post(api_client, f"{url}/regenerate").json()["assistant_message"]
    assert (body["content"], body["version"]) == ("Third answer", 3)
    assert [(a["version"], a["content"]) for a in body["alternatives"]] == [(1, "First answer"), (2, "Second answer")]
    [reply] = replies(conversation)
    assert reply.pk == body["id"]  # one reply, written again in place
    state = AgentState.objects.get(conversation=conversation).context
    assert state == [{"role": "user", "content": "Hello"}, {"role": "assistant", "content": "Third answer"}]

    # Showing version 1: the page's text and the state both say it; the next turn carries it alone.
    shown = post(api_client, f"{url}/messages/{reply.pk}/version", {"version": 1})
    assert shown.status_code == 200, shown.content
    assert (shown.json()["content"], shown.json()["version"]) == ("First answer", 1)
    assert [a["version"] for a in shown.json()["alternatives"]] == [2, 3]
    state = AgentState.objects.get(conversation=conversation).context
    assert state[-1] == {"role": "assistant", "content": "First answer"}
    fake_model.reply("Next")
    post(api_client, f"{url}/messages", {"content": "And then?"})
    sent = " ".join(str(m.get("content")) for m in fake_model.model.requests[-1]["messages"])
    assert "First answer" in sent and "Second answer" not in sent and "Third answer" not in sent

    # The earlier reply's versions stay in the API, and can no longer be switched.
    listed = api_client.get(f"{url}/messages").json()
    assert [a["content"] for a in listed[1]["alternatives"]] == ["Second answer", "Third answer"]
    assert post(api_client, f"{url}/messages/{reply.pk}/version", {"version": 2}).status_code == 409


@TURN
def test_regenerate_takes_a_failed_reply_too_and_keeps_it(
    api_client: Client, conversation: Conversation, fake_model: Any
) -> None:
    url = f"/api/conversations/{conversation.pk}"
    fake_model.fail("Part", kind="timeout")
    post(api_client, f"{url}/messages", {"content": "Hello"})
    fake_model.reply("Whole")
    body = post(api_client, f"{url}/regenerate").json()["assistant_message"]
    assert body["content"] == "Whole"
    assert [(a["status"], a["content"]) for a in body["alternatives"]] == [("error", "Part")]


@TURN
def test_regenerate_without_a_reply_answers_409_and_writes_nothing(
    api_client: Client, conversation: Conversation, fake_model: Any
) -> None:
    response = post(api_client, f"/api/conversations/{conversation.pk}/regenerate")
    assert response.status_code == 409
    assert "regenerated" in response.json()["detail"]
    assert not Message.objects.filter(conversation=conversation).exists()


def test_an_unknown_version_answers_409(api_client: Client, user: User) -> None:
    conversation = conversation_create(user=user)
    Message.objects.create(conversation=conversation, user=user, role="user", content="Hi")
    reply = Message.objects.create(conversation=conversation, user=user, role="assistant", content="Yo")
    response = post(api_client, f"/api/conversations/{conversation.pk}/messages/{reply.pk}/version", {"version": 4})
    assert response.status_code == 409


def test_another_users_reply_versions_are_404(api_client: Client, other_user: User) -> None:
    theirs = conversation_create(user=other_user)
    reply = Message.objects.create(conversation=theirs, user=other_user, role="assistant", content="Yo")
    response = post(api_client, f"/api/conversations/{theirs.pk}/messages/{reply.pk}/version", {"version": 1})
    assert response.status_code == 404


@TURN
def test_another_users_conversation_cannot_be_regenerated(
    api_client: Client, other_user: User, fake_model: Any
) -> None:
    theirs = conversation_create(user=other_user)
    assert post(api_client, f"/api/conversations/{theirs.pk}/regenerate").status_code == 404


def test_the_page_shows_the_versions_and_switches_them(client: Client, user: User) -> None:
    client.force_login(user)
    conversation = conversation_create(user=user)
    Message.objects.create(conversation=conversation, user=user, role="user", content="Hi")
    reply = Message.objects.create(
        conversation=conversation,
        user=user,
        role="assistant",
        content="Second",
        version=2,
        alternatives=[{"version": 1, "content": "First", "status": "complete", "error": ""}],
    )
    page = client.get(f"/c/{conversation.pk}/").content.decode()
    assert "2/2" in page and 'name="version" value="1"' in page and "Regenerate" in page
    url = f"/c/{conversation.pk}/messages/{reply.pk}/version/"
    swapped = client.post(url, {"version": "1"}, HTTP_HX_REQUEST="true")
    assert swapped.status_code == 200
    assert "First" in swapped.content.decode() and "1/2" in swapped.content.decode()
