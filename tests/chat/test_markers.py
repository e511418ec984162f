"""Conversation markers: lasting notes other apps add to a conversation's timeline."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import translation

from chat import marker_kinds, markers, push
from chat.consumers import user_group
from chat.models import Conversation, ConversationMarker, Message

pytestmark = pytest.mark.django_db


@pytest.fixture
def alice_client(client: Client, user: Any) -> Client:
    client.force_login(user)
    return client


def test_markers_show_between_messages_in_time_order(alice_client: Client, conversation: Conversation) -> None:
    first = Message.objects.create(conversation=conversation, user=conversation.owner, role="user", content="First")
    marker = markers.marker_add(conversation=conversation, kind="note", text="Something <changed>", link="/x/")
    second = Message.objects.create(conversation=conversation, user=conversation.owner, role="user", content="Later")
    ConversationMarker.objects.filter(pk=marker.pk).update(created_at=first.created_at + timedelta(microseconds=1))
    Message.objects.filter(pk=second.pk).update(created_at=first.created_at + timedelta(seconds=1))
    page = alice_client.get(reverse("chat:conversation", args=[conversation.pk])).content.decode()
    assert page.index(">First<") < page.index(f'id="marker-{marker.pk}"') < page.index(">Later<")
    assert "Something &lt;changed&gt;" in page
    assert '<a href="/x/">Open</a>' in page


def test_a_new_marker_is_pushed_to_the_owners_pages_after_commit(
    conversation: Conversation, django_capture_on_commit_callbacks: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent: list[tuple[str, dict[str, Any]]] = []

    class Layer:
        async def group_send(self, group: str, event: dict[str, Any]) -> None:
            sent.append((group, event))

    monkeypatch.setattr(push, "get_channel_layer", Layer)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        markers.marker_add(conversation=conversation, kind="note", text="Noted")
    assert sent == []
    for callback in callbacks:
        callback()
    [(group, event)] = sent
    assert group == user_group(conversation.owner_id)
    assert event["type"] == "chat.marker" and event["conversation_id"] == str(conversation.pk)
    assert "Noted" in event["html"]


def test_markers_go_with_their_conversation(conversation: Conversation) -> None:
    markers.marker_add(conversation=conversation, kind="note", text="Noted")
    conversation.delete()
    assert not ConversationMarker.objects.exists()


def test_a_pushed_marker_carries_each_languages_wording(
    conversation: Conversation, django_capture_on_commit_callbacks: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent: list[dict[str, Any]] = []

    class Layer:
        async def group_send(self, group: str, event: dict[str, Any]) -> None:
            sent.append(event)

    monkeypatch.setattr(push, "get_channel_layer", Layer)
    monkeypatch.setattr(
        marker_kinds, "_renderers", {"note": lambda data: (f"{translation.get_language()}:{data['n']}", "")}
    )
    with django_capture_on_commit_callbacks(execute=True):
        markers.marker_add(conversation=conversation, kind="note", text="Stored", data={"n": 3})
    assert "en:3" in sent[0]["html"] and "zh-hans:3" in sent[0]["translations"]["zh-hans"]
