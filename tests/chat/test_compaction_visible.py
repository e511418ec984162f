"""What people see of compaction: the page's divider with the summary, the admin's state size, the API's
context_tokens and compactions. The display log itself never changes."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from accounts.models import User
from chat.models import AgentState, Conversation, Message
from chat.services import conversation_create
from chat.turn import compaction, context_budget, cut
from tests.factories import MessageFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def compacted(user: User) -> Conversation:
    """Three exchanges in the display log; the state summarizes the first two and keeps the third."""
    conversation = conversation_create(user=user, title="Phones")
    users = []
    for i in range(3):
        users.append(MessageFactory(conversation=conversation, user=user, content=f"question {i}"))
        MessageFactory(conversation=conversation, user=user, role=Message.Role.ASSISTANT, content=f"answer {i}")
    context = [
        cut.summary_item("The user compares two small phones; budget 600 euros."),
        {"role": "user", "content": "question 2"},
        {"role": "assistant", "content": "answer 2"},
    ]
    AgentState.objects.filter(conversation=conversation).update(
        context=context, version=5, compactions=2, summarized_through=users[1]
    )
    return conversation


def test_the_page_shows_a_divider_before_the_first_message_not_summarized(
    client: Client, user: User, compacted: Conversation
) -> None:
    client.force_login(user)
    html = client.get(reverse("chat:conversation", args=[compacted.pk])).content.decode()
    assert html.count('class="summary-divider"') == 1
    divider = html.index('class="summary-divider"')
    assert html.index("answer 1") < divider < html.index("question 2")
    assert "Earlier messages were summarized for the assistant" in html
    assert "budget 600 euros" in html  # expandable: inside the <details>
    for i in range(3):  # the display log keeps every message
        assert f"question {i}" in html and f"answer {i}" in html


def test_no_divider_without_a_summary(client: Client, user: User) -> None:
    conversation = conversation_create(user=user)
    MessageFactory(conversation=conversation, user=user, content="hello")
    client.force_login(user)
    html = client.get(reverse("chat:conversation", args=[conversation.pk])).content.decode()
    assert 'class="summary-divider"' not in html


def test_the_api_reports_context_tokens_and_compactions(api_client: Client, compacted: Conversation) -> None:
    body = api_client.get(f"/api/conversations/{compacted.pk}").json()
    state = AgentState.objects.get(conversation=compacted)
    assert body["compactions"] == 2
    assert body["context_tokens"] == context_budget.state_tokens(state) > 0
    assert body["title"] == "Phones"


def test_the_api_message_list_keeps_every_message(api_client: Client, compacted: Conversation) -> None:
    body = api_client.get(f"/api/conversations/{compacted.pk}/messages").json()
    assert [m["content"] for m in body] == [f"{kind} {i}" for i in range(3) for kind in ("question", "answer")]


def test_a_new_conversation_reports_an_empty_context(api_client: Client, user: User) -> None:
    conversation = conversation_create(user=user)
    body = api_client.get(f"/api/conversations/{conversation.pk}").json()
    assert (body["context_tokens"], body["compactions"]) == (0, 0)


def test_the_admin_shows_state_size_and_compactions(admin_client: Client, compacted: Conversation) -> None:
    state = AgentState.objects.get(conversation=compacted)
    listing = admin_client.get(reverse("admin:chat_agentstate_changelist")).content.decode()
    assert f"3 items, ~{context_budget.state_tokens(state):,} tokens" in listing
    page = admin_client.get(reverse("admin:chat_conversation_change", args=[compacted.pk])).content.decode()
    assert "3 items" in page and "Compactions" in page


def test_the_page_costs_one_more_query_at_most(
    client: Client, user: User, compacted: Conversation, django_assert_max_num_queries: Any
) -> None:
    client.force_login(user)
    # 13 with the replies' memory tokens ("memory: N tokens"), one query whatever the number of replies
    with django_assert_max_num_queries(13):
        assert client.get(reverse("chat:conversation", args=[compacted.pk])).status_code == 200


def test_the_page_says_it_is_summarizing_while_a_turn_compacts() -> None:
    from chat.fragments import activity_html

    html = activity_html(7, compaction.SUMMARIZING)
    assert 'id="message-7-activity"' in html and "Summarizing earlier messages…" in html


def test_the_divider_follows_the_last_message_when_every_message_is_summarized(
    client: Client, user: User, compacted: Conversation
) -> None:
    last = Message.objects.filter(conversation=compacted, role=Message.Role.USER).order_by("id").last()
    AgentState.objects.filter(conversation=compacted).update(summarized_through=last)
    client.force_login(user)
    html = client.get(reverse("chat:conversation", args=[compacted.pk])).content.decode()
    assert html.count('class="summary-divider"') == 1
    assert html.index("answer 2") < html.index('class="summary-divider"')


def test_the_live_divider_moves_to_where_the_summary_now_ends(user: User, compacted: Conversation) -> None:
    from chat.fragments import summary_divider_html
    from chat.selectors import summary_divider

    divider = summary_divider(conversation=compacted)
    assert divider is not None
    second = Message.objects.get(conversation=compacted, content="question 2")
    assert divider.before_message_id == second.pk
    html = summary_divider_html(divider)
    assert '<div id="summary-divider" hx-swap-oob="delete"></div>' in html
    assert f'hx-swap-oob="beforebegin:#message-{second.pk}"' in html and "budget 600 euros" in html
