"""The search_history tool (memory/history.py): what the model gets back, where it is offered, its bounds."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.utils import timezone

from accounts.models import User
from chat import extensions, services
from chat.extensions import TurnContext
from chat.models import Conversation, Message
from chat.turn import transactions
from chat.turn.agent import Turn
from memory import history
from memory.models import Memory
from tests.fake_openai import FakeOpenAIServer, FakeResponse
from tests.helpers import make_memory, make_user
from tests.turns import run_to_end


def exchange(user: User, conversation: Conversation, text: str, reply: str = "Noted.") -> Message:
    started = transactions.turn_start(user=user, conversation=conversation, content=text)
    transactions.turn_finish(turn=started, status="complete", content=reply, new_items=[])
    return started.user_message


def ctx_in_new_conversation(user: User, text: str = "What did I say?") -> TurnContext:
    conversation = services.conversation_create(user=user, title="Today")
    started = transactions.turn_start(user=user, conversation=conversation, content=text)
    return TurnContext(user=user, conversation=conversation, user_message=started.user_message)


def test_search_history_is_registered_with_a_query_and_optional_dates() -> None:
    schema = next(s for s in extensions.tool_schemas() if s["function"]["name"] == "search_history")
    parameters = schema["function"]["parameters"]
    assert parameters["required"] == ["query"]
    assert set(parameters["properties"]) == {"query", "after", "before"}
    assert parameters["additionalProperties"] is False


def test_the_reply_says_it_is_looking_through_earlier_conversations() -> None:
    from chat.fragments import activity_html

    assert "Looking through earlier conversations…" in activity_html(7, "search_history")


@pytest.mark.django_db
def test_the_result_quotes_dated_excerpts_with_titles_never_the_current_conversation(user: User) -> None:
    earlier = services.conversation_create(user=user, title="Phone advice")
    said = exchange(user, earlier, "I've always liked small phones.", "Then try the iPhone 13 mini.")
    ctx = ctx_in_new_conversation(user, "What did I say about small phones?")

    result = history.search_history.run(ctx, {"query": "small phones"})

    day = said.created_at.date().isoformat()
    assert f"[message {said.pk}] {day}, in “Phone advice”, the user wrote: “I've always liked small phones.”" in result
    assert "What did I say" not in result  # the current conversation is the model's already


@pytest.mark.django_db
def test_another_users_words_never_come_back(user: User, other_user: User) -> None:
    theirs = services.conversation_create(user=other_user, title="Mallory")
    exchange(other_user, theirs, "My bank PIN is about zebras")
    result = history.search_history.run(ctx_in_new_conversation(user), {"query": "zebras"})
    assert result == history.NOTHING.format(query="zebras")


@pytest.mark.django_db
def test_memories_no_longer_true_come_with_their_dates(user: User) -> None:
    now = timezone.now()
    old = make_memory(owner=user, content="Prefers small phones")
    Memory.objects.filter(pk=old.pk).update(
        created_at=now - timedelta(days=30), invalid_at=now - timedelta(days=2), invalid_reason="updated"
    )
    make_memory(owner=user, content="Prefers small cars")  # active: in the memory block, not here
    result = history.search_history.run(ctx_in_new_conversation(user), {"query": "small"})
    start, end = (now - timedelta(days=30)).date().isoformat(), (now - timedelta(days=2)).date().isoformat()
    assert f"[memory {old.pk}] “Prefers small phones”: true from {start} until {end}" in result
    assert "cars" not in result


@pytest.mark.django_db
def test_the_result_is_bounded(user: User) -> None:
    for n in range(4):
        conversation = services.conversation_create(user=user, title=f"Tea {n} " + "long title " * 15)
        for _ in range(3):
            exchange(user, conversation, "tea " + "with a lot of words about brewing " * 60, "tea " * 800)
    result = history.search_history.run(ctx_in_new_conversation(user), {"query": "tea"})
    assert len(result) <= history.RESULT_MAX_CHARS
    assert result.count("[message ") >= 3


@pytest.mark.django_db
def test_dates_bound_the_search(user: User) -> None:
    conversation = services.conversation_create(user=user, title="Notes")
    exchange(user, conversation, "coffee beans")
    ctx = ctx_in_new_conversation(user)
    tomorrow = (timezone.now() + timedelta(days=1)).date().isoformat()
    assert "[message " in history.search_history.run(ctx, {"query": "coffee", "before": tomorrow})
    assert "[message " not in history.search_history.run(ctx, {"query": "coffee", "after": tomorrow})


@pytest.mark.django_db
def test_a_bad_query_gets_a_sentence_not_an_error(user: User) -> None:
    result = history.search_history.run(ctx_in_new_conversation(user), {"query": ""})
    assert result.startswith("The search could not run:")


def _offered_tools(request: dict[str, Any]) -> list[str]:
    return [t["function"]["name"] for t in request.get("tools", [])]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    "memory_enabled, temporary, offered",
    [(True, False, True), (False, False, False), (True, True, False)],
)
async def test_search_history_is_offered_only_where_flush_memory_is(
    fake_openai: FakeOpenAIServer, memory_enabled: bool, temporary: bool, offered: bool
) -> None:
    user = await sync_to_async(make_user)()
    conversation = await sync_to_async(services.conversation_create)(user=user, temporary=temporary)
    await type(user).objects.filter(pk=user.pk).aupdate(memory_enabled=memory_enabled)
    fake_openai.queue(FakeResponse("Hello."))

    turn = await Turn.begin(user=user, conversation=conversation, content="What did I say about phones?")
    assert (await run_to_end(turn)).type == "done"

    tools = _offered_tools(fake_openai.requests[0])
    assert ("search_history" in tools) is offered
    assert ("search_history" in tools) == ("flush_memory" in tools)


@pytest.mark.django_db(transaction=True)
async def test_the_models_call_gets_the_excerpt(fake_openai: FakeOpenAIServer) -> None:
    user = await sync_to_async(make_user)()
    earlier = await sync_to_async(services.conversation_create)(user=user, title="Phones")
    said = await sync_to_async(exchange)(user, earlier, "I've always liked small phones.")
    conversation = await sync_to_async(services.conversation_create)(user=user)
    call = {"id": "call_1", "name": "search_history", "arguments": json.dumps({"query": "small phones"})}
    fake_openai.queue(FakeResponse(tool_calls=[call]), FakeResponse("You said you like small phones."))

    turn = await Turn.begin(user=user, conversation=conversation, content="Which phones do I like?")
    assert (await run_to_end(turn)).type == "done"

    results = [m for m in fake_openai.requests[1]["messages"] if m["role"] == "tool"]
    assert len(results) == 1
    assert f"[message {said.pk}]" in results[0]["content"]
    assert "I've always liked small phones." in results[0]["content"]


@pytest.mark.django_db(transaction=True)
async def test_the_demo_model_searches_when_asked_what_was_said_before() -> None:
    user = await sync_to_async(make_user)()
    earlier = await sync_to_async(services.conversation_create)(user=user, title="Phones")
    await sync_to_async(exchange)(user, earlier, "我一直喜欢小屏手机")
    conversation = await sync_to_async(services.conversation_create)(user=user)

    turn = await Turn.begin(user=user, conversation=conversation, content="上次我说的手机是什么？")
    done = await run_to_end(turn)

    assert done.type == "done" and done.assistant_message is not None
    assert "我一直喜欢小屏手机" in done.assistant_message.content
