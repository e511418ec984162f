"""Conversation lists come in pages: the API takes limit/offset (and answers as before without them),
the sidebar shows the newest and loads more on request."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from accounts.models import User
from chat import selectors
from chat.models import Conversation
from chat.services import conversation_create

pytestmark = pytest.mark.django_db


def make(user: User, n: int) -> list[Conversation]:
    """n conversations, the first the newest."""
    now = timezone.now()
    made = [conversation_create(user=user, title=f"Chat {i}") for i in range(n)]
    for i, conversation in enumerate(made):
        Conversation.objects.filter(pk=conversation.pk).update(updated_at=now - timedelta(minutes=i))
    return made


def titles(data: list[dict[str, Any]]) -> list[str]:
    return [c["title"] for c in data]


def test_without_limit_and_offset_the_api_answers_the_whole_list_as_before(api_client: Client, user: User) -> None:
    make(user, 7)
    response = api_client.get("/api/conversations")
    assert titles(response.json()) == [f"Chat {i}" for i in range(7)]
    assert "X-Total-Count" not in response


def test_limit_and_offset_page_through_the_list(api_client: Client, user: User, other_user: User) -> None:
    make(user, 7)
    make(other_user, 3)
    first = api_client.get("/api/conversations", {"limit": 3})
    assert titles(first.json()) == ["Chat 0", "Chat 1", "Chat 2"]
    assert first["X-Total-Count"] == "7"
    last = api_client.get("/api/conversations", {"limit": 3, "offset": 6})
    assert titles(last.json()) == ["Chat 6"]


@pytest.mark.parametrize("query", [{"limit": 0}, {"limit": 101}, {"offset": -1}, {"limit": "x"}])
def test_bad_paging_answers_422(api_client: Client, query: dict[str, Any]) -> None:
    assert api_client.get("/api/conversations", query).status_code == 422


def test_the_sidebar_shows_the_newest_and_a_button_for_more(client: Client, user: User, settings: Any) -> None:
    make(user, 52)
    client.force_login(user)
    page = client.get("/").content.decode()
    assert "Chat 49" in page and "Chat 50" not in page
    assert "Show more conversations" in page


def test_show_more_loads_the_next_page_once_each(client: Client, user: User) -> None:
    made = make(user, 5)
    first, cursor = selectors.conversation_sidebar_page(user=user, limit=2)
    assert [c.title for c in first] == ["Chat 0", "Chat 1"]
    # A conversation on a later page moves to the top: it is not shown again further down.
    Conversation.objects.filter(pk=made[3].pk).update(updated_at=timezone.now() + timedelta(minutes=1))
    second, end = selectors.conversation_sidebar_page(user=user, before=cursor, limit=2)
    assert [c.title for c in second] == ["Chat 2", "Chat 4"]
    assert end is None


def test_the_more_endpoint_answers_the_items_and_the_next_button(client: Client, user: User) -> None:
    make(user, 53)
    client.force_login(user)
    page = client.get("/").content.decode()
    more = page.split('class="conversation-more"', 1)[1].split('hx-get="', 1)[1].split('"', 1)[0].replace("&amp;", "&")
    response = client.get(more, HTTP_HX_REQUEST="true").content.decode()
    assert "Chat 50" in response and "Chat 52" in response and "Chat 49" not in response
    assert "Show more conversations" not in response


def test_the_more_endpoint_is_scoped_to_the_user(client: Client, user: User, other_user: User) -> None:
    make(other_user, 3)
    client.force_login(user)
    response = client.get(
        "/c/more/", {"before": timezone.now().isoformat(), "id": "ffffffff-ffff-ffff-ffff-ffffffffffff"}
    )
    assert response.status_code == 200 and "Chat" not in response.content.decode()
    assert client.get("/c/more/", {"before": "yesterday"}).status_code == 400
