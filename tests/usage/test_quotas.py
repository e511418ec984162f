"""Monthly token quotas: over it, a new turn, a retry and a /v1 request answer 429 with Retry-After and a
sentence saying when it resets, writing nothing; background extraction waits with the messages pending and
resumes once the quota is raised."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from accounts.models import User
from chat.models import Conversation, Message
from chat.services import conversation_create
from chat.turn import transactions
from usage import quotas
from usage.models import UserQuota
from usage.services import usage_record

pytestmark = pytest.mark.django_db(transaction=True)


def spend(user: User, tokens: int, *, days_ago: int = 0) -> None:
    usage_record(
        user_id=user.pk,
        project_id=None,
        model="m",
        kind="chat",
        prompt_tokens=tokens,
        completion_tokens=0,
        estimated=False,
        day=timezone.now().date() - timedelta(days=days_ago),
    )


def send(client: Client, conversation: Conversation, content: str = "Hello") -> Any:
    path = f"/api/conversations/{conversation.pk}/messages"
    return client.post(path, json.dumps({"content": content}), content_type="application/json")


def test_over_quota_a_new_turn_answers_429_saying_when_it_resets_and_writes_nothing(
    api_client: Client, user: User, settings: Any, fake_model: Any
) -> None:
    settings.USER_MONTHLY_TOKENS = 1000
    conversation = conversation_create(user=user)
    spend(user, 1000)

    response = send(api_client, conversation)

    assert response.status_code == 429
    now = timezone.now()
    assert abs(int(response["Retry-After"]) - (quotas.next_month(now) - now).total_seconds()) < 60
    assert "resets on" in response.json()["detail"] and "1,000" in response.json()["detail"]
    assert not Message.objects.filter(conversation=conversation).exists()


def test_under_quota_and_without_one_turns_go_through(
    api_client: Client, user: User, settings: Any, fake_model: Any
) -> None:
    settings.USER_MONTHLY_TOKENS = 1000
    spend(user, 999)
    spend(user, 50_000, days_ago=40)  # last month's tokens do not count
    fake_model.reply("Hi")
    assert send(api_client, conversation_create(user=user)).status_code == 200

    settings.USER_MONTHLY_TOKENS = 0  # unset: unlimited
    spend(user, 10**9)
    fake_model.reply("Hi")
    assert send(api_client, conversation_create(user=user)).status_code == 200


def test_the_admins_per_user_quota_wins_over_the_setting(
    api_client: Client, user: User, settings: Any, fake_model: Any
) -> None:
    settings.USER_MONTHLY_TOKENS = 100
    spend(user, 500)
    UserQuota.objects.create(user=user, monthly_tokens=1000)
    fake_model.reply("Hi")
    assert send(api_client, conversation_create(user=user)).status_code == 200

    UserQuota.objects.filter(user=user).update(monthly_tokens=400)
    assert send(api_client, conversation_create(user=user)).status_code == 429


def test_a_per_user_row_without_a_figure_leaves_the_setting_in_force(
    api_client: Client, user: User, settings: Any, fake_model: Any
) -> None:
    settings.USER_MONTHLY_TOKENS = 100
    spend(user, 500)
    UserQuota.objects.create(user=user, monthly_tokens=None)  # the admin cleared the figure
    assert quotas.monthly_limit(user_id=user.pk) == 100
    assert send(api_client, conversation_create(user=user)).status_code == 429


def test_over_quota_a_retry_answers_429_and_keeps_the_failed_reply(
    api_client: Client, user: User, settings: Any
) -> None:
    conversation = conversation_create(user=user)
    turn = transactions.turn_start(user=user, conversation=conversation, content="Hello")
    transactions.turn_finish(turn=turn, status=Message.Status.ERROR, content="", error="boom", new_items=[])
    settings.USER_MONTHLY_TOKENS = 10
    spend(user, 10)

    response = api_client.post(f"/api/conversations/{conversation.pk}/retry", "{}", content_type="application/json")

    assert response.status_code == 429 and "Retry-After" in response
    assert Message.objects.get(pk=turn.assistant_message.pk).status == Message.Status.ERROR


@pytest.mark.needs_memory
def test_over_quota_a_v1_request_answers_429_with_retry_after(
    client: Client, user: User, api_token: str, settings: Any
) -> None:
    settings.USER_MONTHLY_TOKENS = 10
    spend(user, 10)
    from chat.llm import catalogue

    body = {"model": catalogue.default_chat_model(), "messages": [{"role": "user", "content": "Hello"}]}

    response = client.post(
        "/v1/chat/completions",
        json.dumps(body),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {api_token}",
    )

    assert response.status_code == 429 and int(response["Retry-After"]) > 0
    assert "resets on" in response.json()["error"]["message"]


def test_the_quota_resets_at_the_start_of_next_month_utc() -> None:
    assert quotas.next_month(datetime(2026, 12, 31, 23, 0, tzinfo=UTC)) == datetime(2027, 1, 1, tzinfo=UTC)
    assert quotas.next_month(datetime(2026, 3, 5, tzinfo=UTC)) == datetime(2026, 4, 1, tzinfo=UTC)


@pytest.mark.needs_memory
def test_background_extraction_waits_over_quota_and_resumes_when_it_is_raised(
    user: User, settings: Any, fake_openai: Any
) -> None:
    from memory.extraction.outcomes import Outcome
    from tests.fake_openai import FakeResponse
    from tests.helpers import run, say

    settings.USER_MONTHLY_TOKENS = 100
    spend(user, 100)
    said = say(conversation_create(user=user), "I cycle to work every day.")

    waited = run(user, up_to=said, trigger="manual")

    assert waited.status == Outcome.WAITING and "resets on" in waited.error
    assert Message.objects.get(pk=said.pk).memory_status == Message.MemoryStatus.PENDING
    assert fake_openai.requests == []  # nothing was sent to the provider

    UserQuota.objects.create(user=user, monthly_tokens=100_000)
    fake_openai.queue(FakeResponse('{"operations": []}'))
    assert run(user, up_to=said, trigger="manual").status == Outcome.APPLIED
    assert Message.objects.get(pk=said.pk).memory_status == Message.MemoryStatus.PROCESSED
