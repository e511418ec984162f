"""A conversation saved as Markdown: messages, who and when, the memories each reply used; only the owner's."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from accounts.models import User
from chat.models import Message
from chat.services import conversation_create

pytestmark = pytest.mark.django_db


def test_the_api_answers_the_conversation_as_a_markdown_file(api_client: Client, user: User) -> None:
    conversation = conversation_create(user=user, title="Phones: small ones")
    Message.objects.create(conversation=conversation, user=user, role="user", content="I like small phones")
    Message.objects.create(conversation=conversation, user=user, role="assistant", content="**Noted.**")
    response = api_client.get(f"/api/conversations/{conversation.pk}/export?format=markdown")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/markdown")
    assert "Phones-small-ones.md" in response["Content-Disposition"]
    text = response.content.decode()
    assert text.startswith("# Phones: small ones\n")
    assert "## You · " in text and "I like small phones" in text
    assert "## Memora · " in text and "**Noted.**" in text
    assert text.index("I like small phones") < text.index("**Noted.**")


def test_an_unknown_format_answers_422(api_client: Client, user: User) -> None:
    conversation = conversation_create(user=user)
    assert api_client.get(f"/api/conversations/{conversation.pk}/export?format=pdf").status_code == 422


def test_another_users_conversation_is_not_exported(api_client: Client, client: Client, other_user: User) -> None:
    theirs = conversation_create(user=other_user)
    assert api_client.get(f"/api/conversations/{theirs.pk}/export").status_code == 404


@pytest.mark.needs_memory
def test_a_reply_lists_the_memories_it_used(api_client: Client, user: User) -> None:
    from memory.models import Memory, MemoryUse

    conversation = conversation_create(user=user)
    Message.objects.create(conversation=conversation, user=user, role="user", content="Suggest a phone")
    reply = Message.objects.create(conversation=conversation, user=user, role="assistant", content="The mini.")
    memory = Memory.objects.create(owner=user, content="Prefers small phones.")
    MemoryUse.objects.create(memory=memory, message=reply)
    text = api_client.get(f"/api/conversations/{conversation.pk}/export").content.decode()
    assert "Memories used:\n\n- Prefers small phones." in text


def test_the_page_menu_offers_the_download(client: Client, user: User, **_: Any) -> None:
    client.force_login(user)
    conversation = conversation_create(user=user, title="Trip")
    page = client.get(f"/c/{conversation.pk}/").content.decode()
    assert f'href="/c/{conversation.pk}/export.md" download' in page
    download = client.get(f"/c/{conversation.pk}/export.md")
    assert download.status_code == 200 and download.content.decode().startswith("# Trip")
