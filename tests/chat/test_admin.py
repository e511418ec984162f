"""Django admin for chat: conversations with their messages (read-only) and agent state. Smoke tests."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from accounts.models import User
from chat.models import AgentState, Conversation, Message
from chat.services import conversation_create, conversation_rename
from tests.factories import MessageFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def conversation(conversation: Conversation) -> Conversation:
    """The shared conversation, titled, with a reply and an agent state to show."""
    conversation_rename(conversation=conversation, title="Phones")
    MessageFactory(conversation=conversation, content="I like small phones")
    MessageFactory(conversation=conversation, role=Message.Role.ASSISTANT, content="Noted <b>bold</b>")
    AgentState.objects.filter(conversation=conversation).update(
        context=[{"role": "user", "content": "I like small phones"}], version=1
    )
    return conversation


def test_conversation_changelist_loads(admin_client: Client, conversation: Conversation) -> None:
    response = admin_client.get(reverse("admin:chat_conversation_changelist"))
    assert response.status_code == 200
    assert b"Phones" in response.content


def test_conversation_change_page_shows_messages_read_only_and_the_state(
    admin_client: Client, conversation: Conversation
) -> None:
    response = admin_client.get(reverse("admin:chat_conversation_change", args=[conversation.pk]))
    assert response.status_code == 200
    html = response.content.decode()
    assert "I like small phones" in html
    assert "Noted &lt;b&gt;bold&lt;/b&gt;" in html  # escaped, never rendered
    assert 'name="messages-0-content"' not in html  # read-only inline: no editable message fields
    assert "messages-TOTAL_FORMS" in html and 'name="messages-0-DELETE"' not in html


def test_conversation_admin_search(admin_client: Client, conversation: Conversation, user: User) -> None:
    response = admin_client.get(reverse("admin:chat_conversation_changelist") + f"?q={user.username}")
    assert response.status_code == 200
    assert b"Phones" in response.content


def test_message_changelist_and_change_page_load(admin_client: Client, conversation: Conversation) -> None:
    message = Message.objects.get(content="I like small phones")
    assert admin_client.get(reverse("admin:chat_message_changelist")).status_code == 200
    assert admin_client.get(reverse("admin:chat_message_change", args=[message.pk])).status_code == 200


def test_agent_state_changelist_and_change_page_load(admin_client: Client, conversation: Conversation) -> None:
    state = AgentState.objects.get()
    assert admin_client.get(reverse("admin:chat_agentstate_changelist")).status_code == 200
    response = admin_client.get(reverse("admin:chat_agentstate_change", args=[state.pk]))
    assert response.status_code == 200
    assert "I like small phones" in response.content.decode()


def test_admin_list_pages_do_not_query_per_row(
    admin_client: Client, user: User, django_assert_max_num_queries: object
) -> None:
    for i in range(15):
        conversation_create(user=user, title=f"C{i}")
    with django_assert_max_num_queries(12):  # type: ignore[operator]
        assert admin_client.get(reverse("admin:chat_conversation_changelist")).status_code == 200


def test_conversations_are_not_added_in_the_admin(admin_client: Client) -> None:
    # A conversation needs an owner and an agent state; it is created by its user's chat.
    assert admin_client.get("/admin/chat/conversation/add/").status_code == 403
    assert "/admin/chat/conversation/add/" not in admin_client.get("/admin/chat/conversation/").content.decode()
