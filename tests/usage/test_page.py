"""Settings → Usage: this month by kind and by project, memory's share and the last twelve months, for the
signed-in user only; "memory: N tokens" beside "Used N memories" under a reply."""

from __future__ import annotations

from datetime import date
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from accounts.models import User
from chat.extensions import annotate_messages
from chat.models import Message, Project
from tests.helpers import make_conversation, make_message
from usage.models import ReplyMemoryTokens
from usage.page import months_back
from usage.services import usage_record

pytestmark = pytest.mark.django_db


def spend(user: User, kind: str, tokens: int, *, project_id: int | None = None, day: date | None = None) -> None:
    usage_record(user_id=user.pk, project_id=project_id, model="gpt-4o-mini", kind=kind, prompt_tokens=tokens,
                 completion_tokens=0, estimated=False, day=day or timezone.now().date())  # fmt: skip


def test_the_page_shows_this_months_usage_by_kind_and_project_and_memorys_share(
    client: Client, user: User, settings: Any
) -> None:
    settings.MODEL_PRICES = {"gpt-4o-mini": {"input": 1, "output": 2}}
    project = Project.objects.create(owner=user, name="Thesis")
    spend(user, "chat", 1_000_000, project_id=project.pk)
    spend(user, "memory_block", 2000)
    spend(user, "judge", 3000)
    client.force_login(user)

    page = client.get("/settings/usage/").content.decode()

    assert "1,005,000 tokens" in page
    assert "5,000 tokens this month" in page  # memory: its block and the judge
    assert "Thesis" in page and "No project" in page
    assert "Memory in replies" in page and "Memory judge" in page
    assert "1.0050 USD" in page  # priced: a million tokens in at 1, plus memory's


def test_another_users_usage_is_not_on_the_page(client: Client, user: User, other_user: User) -> None:
    spend(other_user, "chat", 777_777)
    client.force_login(user)

    page = client.get("/settings/usage/").content.decode()

    assert "777,777" not in page and "Nothing used yet this month." in page


def test_the_page_needs_a_signed_in_user(client: Client) -> None:
    assert client.get("/settings/usage/").status_code == 302


def test_the_last_twelve_months_end_with_this_one() -> None:
    firsts = months_back(date(2026, 2, 14), 12)
    assert firsts[0] == date(2025, 3, 1) and firsts[-1] == date(2026, 2, 1) and len(firsts) == 12


def test_a_reply_carries_its_memory_block_tokens(user: User) -> None:
    conversation = make_conversation(owner=user)
    reply = make_message(conversation=conversation, role=Message.Role.ASSISTANT, content="Hi")
    other = make_message(conversation=conversation, role=Message.Role.ASSISTANT, content="Again")
    ReplyMemoryTokens.objects.create(message=reply, tokens=312)

    annotate_messages([reply, other])

    assert reply.memory_tokens == 312 and other.memory_tokens == 0  # type: ignore[attr-defined]


def test_the_user_menu_links_to_the_usage_page(client: Client, user: User) -> None:
    client.force_login(user)
    assert 'href="/settings/usage/"' in client.get("/").content.decode()


@pytest.mark.needs_memory
def test_used_n_memories_says_what_the_memory_block_cost(user: User) -> None:
    from django.template.loader import render_to_string

    from tests.helpers import make_memory

    reply = make_message(conversation=make_conversation(owner=user), role=Message.Role.ASSISTANT, content="Hi")
    reply.used_memories = [make_memory(owner=user, content="I live in Lyon.")]  # type: ignore[attr-defined]
    reply.memory_tokens = 312  # type: ignore[attr-defined]

    html = render_to_string("memory/chat/_reply.html", {"message": reply})

    assert "Used 1 memory" in html and "memory: 312 tokens" in html
