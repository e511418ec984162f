"""The search page and the sidebar's search (HTMX partial): results, marks, escaping, temporary chats."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from accounts.models import User
from chat import services
from chat.models import Conversation, Message
from chat.turn import transactions

pytestmark = pytest.mark.django_db


@pytest.fixture
def alice(client: Client, user: User) -> Client:
    client.force_login(user)
    return client


def exchange(user: User, conversation: Conversation, text: str, reply: str = "Noted.") -> Message:
    started = transactions.turn_start(user=user, conversation=conversation, content=text)
    transactions.turn_finish(turn=started, status="complete", content=reply, new_items=[])
    return started.user_message


def test_the_plain_page_lists_hits_linked_at_their_message_with_the_match_marked(alice: Client, user: User) -> None:
    conversation = services.conversation_create(user=user, title="Notes")
    said = exchange(user, conversation, "I like <b>small</b> phones")
    page = alice.get("/search/", {"q": "phones"}).content.decode()
    assert f'href="/c/{conversation.pk}/#message-{said.pk}"' in page
    assert "I like &lt;b&gt;small&lt;/b&gt; <mark>phones</mark>" in page
    assert "1 result" in page
    assert 'id="search-input"' in page and 'value="phones"' in page


def test_htmx_gets_only_the_results_and_the_announced_count(alice: Client, user: User) -> None:
    conversation = services.conversation_create(user=user, title="Notes")
    exchange(user, conversation, "我一直喜欢小屏手机")
    exchange(user, conversation, "手机 again")
    body = alice.get("/search/", {"q": "手机"}, HTTP_HX_REQUEST="true").content.decode()
    assert "<html" not in body
    assert body.count('class="search-hit"') == 2
    assert '<p id="search-status" hx-swap-oob="innerHTML">2 results</p>' in body
    assert "<mark>手机</mark>" in body


def test_an_empty_search_shows_nothing_and_a_bad_one_says_why(alice: Client) -> None:
    assert 'class="search-hit"' not in alice.get("/search/", {"q": ""}, HTTP_HX_REQUEST="true").content.decode()
    body = alice.get("/search/", {"q": "x" * 201}, HTTP_HX_REQUEST="true").content.decode()
    assert "The search is too long" in body


def test_the_open_temporary_chat_is_searched_only_while_open(alice: Client, user: User) -> None:
    temporary = services.conversation_create(user=user, temporary=True)
    exchange(user, temporary, "A secret about bicycles")
    assert 'class="search-hit"' not in alice.get("/search/", {"q": "bicycle"}).content.decode()
    page = alice.get("/search/", {"q": "bicycle", "current": str(temporary.pk)}).content.decode()
    assert page.count('class="search-hit"') == 2  # the message and the title it gave


def test_another_users_conversation_as_current_is_ignored(alice: Client, other_user: User) -> None:
    theirs = services.conversation_create(user=other_user, temporary=True)
    exchange(other_user, theirs, "Mallory's bicycles")
    page = alice.get("/search/", {"q": "bicycle", "current": str(theirs.pk)})
    assert page.status_code == 200
    assert "Mallory" not in page.content.decode()


@pytest.mark.parametrize("current", ["not-a-uuid", "1", "' OR 1=1 --", "0" * 40])
def test_a_current_that_is_not_a_conversation_id_is_ignored(alice: Client, user: User, current: str) -> None:
    conversation = services.conversation_create(user=user, title="Notes")
    exchange(user, conversation, "I like small phones")
    response = alice.get("/search/", {"q": "phones", "current": current})
    assert response.status_code == 200
    assert "1 result" in response.content.decode()


def test_the_sidebar_search_names_the_open_conversation(alice: Client, user: User) -> None:
    conversation = services.conversation_create(user=user, title="Notes")
    page = alice.get(f"/c/{conversation.pk}/").content.decode()
    assert 'role="search"' in page
    assert f'<input type="hidden" name="current" value="{conversation.pk}">' in page


def test_search_needs_a_login(client: Client) -> None:
    assert client.get("/search/", {"q": "x"}).status_code == 302


def test_the_page_takes_the_same_queries_whatever_it_finds(
    alice: Client, user: User, django_assert_max_num_queries: Any
) -> None:
    conversation = services.conversation_create(user=user, title="Notes")
    for n in range(10):
        exchange(user, conversation, f"tea {n}", f"tea reply {n}")
    with django_assert_max_num_queries(4):  # session, user, the count, the page
        alice.get("/search/", {"q": "tea"}, HTTP_HX_REQUEST="true")
