"""Against the fake single-slot server (tests/fake_openai.py, `single_slot=True`: a new request cuts off
the one being answered, no usage in streams, an empty reply to tools while streaming): with
LLM_MAX_CONCURRENCY=1 three users and a background extraction cut no reply, and a judge request never
overlaps a chat request."""

from __future__ import annotations

import asyncio
import threading
from typing import Any, cast

import pytest
from asgiref.sync import sync_to_async
from django.db import connections

from accounts.models import User
from chat.llm import get_chat_model
from chat.models import ConversationMarker, Message, ProviderTicket
from chat.services import conversation_create
from chat.turn.agent import Turn
from memory import tasks
from memory.models import ExtractionRun, Memory
from memory.tasks import extract_memories_task
from tests.factories import UserFactory
from tests.fake_openai import FakeOpenAIServer, FakeResponse
from tests.helpers import run, say
from tests.turns import run_to_end

pytestmark = pytest.mark.django_db(transaction=True)


def make_user(username: str) -> User:
    return cast(User, UserFactory(username=username))


@pytest.fixture
def single_slot(settings: Any) -> Any:
    server = FakeOpenAIServer(single_slot=True).start()
    settings.LLM_BACKEND, settings.OPENAI_BASE_URL, settings.OPENAI_API_KEY = "openai", server.base_url, "test-key"
    settings.LLM_MAX_RETRIES, settings.LLM_TIMEOUT, settings.CHAT_TOOLS = 0, 10.0, "off"
    settings.MEMORY_EXTRACT_MIN_TURNS = 1

    def respond(body: dict[str, Any]) -> FakeResponse:
        if body.get("response_format"):
            return FakeResponse('{"operations": []}', delay_before=0.4)
        return FakeResponse("one two three four five six seven eight", chunk_delay=0.05)

    server.responder = respond
    yield server
    server.stop()


async def _three_users_and_a_background_run(server: FakeOpenAIServer) -> list[Any]:
    users: list[User] = [await sync_to_async(make_user)(f"user{i}") for i in range(4)]
    conversations = [await sync_to_async(conversation_create)(user=u) for u in users]
    pending = await sync_to_async(say)(conversations[3], "I am vegetarian.")

    def background() -> Any:
        try:
            return run(users[3], up_to=pending, trigger=ExtractionRun.Trigger.BACKGROUND)
        finally:
            connections.close_all()

    async def turn(i: int) -> Any:
        await asyncio.sleep(0.1 * i)
        started = await Turn.begin(user=users[i], conversation=conversations[i], content=f"Hello from {i}")
        return await run_to_end(started)

    judged: list[Any] = []
    thread = threading.Thread(target=lambda: judged.append(background()))
    thread.start()
    events = await asyncio.gather(*(turn(i) for i in range(3)))
    await asyncio.to_thread(thread.join, 30)
    return [*events, *judged]


async def test_with_one_slot_three_users_and_a_background_run_cut_no_reply(
    single_slot: FakeOpenAIServer, settings: Any
) -> None:
    settings.LLM_MAX_CONCURRENCY = 1
    results = await _three_users_and_a_background_run(single_slot)

    assert [e.type for e in results[:3]] == ["done"] * 3
    assert single_slot.interrupted == 0 and single_slot.max_in_flight == 1  # a judge request never overlaps chat
    replies = await sync_to_async(
        lambda: set(Message.objects.filter(role="assistant").values_list("status", flat=True))
    )()
    assert replies == {"complete"}
    assert results[3].status == "applied"
    assert await sync_to_async(ProviderTicket.objects.count)() == 0


async def test_without_the_queue_the_single_slot_server_cuts_replies(
    single_slot: FakeOpenAIServer, settings: Any
) -> None:
    settings.LLM_MAX_CONCURRENCY, settings.MEMORY_YIELD_TO_CHAT = 0, False
    results = await _three_users_and_a_background_run(single_slot)

    assert single_slot.interrupted > 0
    assert any(e.type == "error" for e in results[:3])


def test_the_single_slot_server_sends_no_usage_in_streams(single_slot: FakeOpenAIServer) -> None:
    model = get_chat_model()

    async def collect(**kwargs: Any) -> list[Any]:
        return [c async for c in model.stream(messages=[{"role": "user", "content": "hi"}], **kwargs)]

    chunks = asyncio.run(collect())
    assert not any(type(c).__name__ == "Usage" for c in chunks)


async def test_remember_on_a_server_that_answers_tools_with_an_empty_reply_reaches_the_pipeline(
    single_slot: FakeOpenAIServer, settings: Any, monkeypatch: Any
) -> None:
    settings.CHAT_TOOLS, settings.LLM_MAX_CONCURRENCY, settings.MEMORY_EXTRACT_MIN_TURNS = "auto", 1, 3
    single_slot.responder = lambda body: (
        FakeResponse('{"operations": [{"op": "add", "content": "Is vegetarian.", "sources": [1]}]}')
        if body.get("response_format")
        else FakeResponse("Noted!")
    )
    sent: list[dict[str, Any]] = []

    def run_now(user_id: int, message_id: int, min_pending: int | None, trigger: str, **kwargs: Any) -> None:
        sent.append({"trigger": trigger, **kwargs})
        try:
            kwargs = {"min_pending": min_pending, "trigger": trigger, **kwargs}
            extract_memories_task.apply(args=(user_id, message_id), kwargs=kwargs)
        finally:
            connections.close_all()

    monkeypatch.setattr(tasks, "_send", run_now)
    user = await sync_to_async(make_user)("vegetarian")
    conversation = await sync_to_async(conversation_create)(user=user)

    turn = await Turn.begin(user=user, conversation=conversation, content="Remember that I am vegetarian.")
    final = await run_to_end(turn)

    assert final.type == "done"
    assert [bool(r.get("tools")) for r in single_slot.requests[:2]] == [True, False]  # empty reply, asked again
    assert sent == [{"trigger": "flush", "announce": True}]
    memories = await sync_to_async(lambda: list(Memory.objects.filter(owner=user).values_list("content", flat=True)))()
    assert memories == ["Is vegetarian."]
    texts = await sync_to_async(lambda: list(ConversationMarker.objects.values_list("text", flat=True)))()
    assert any("Is vegetarian." in text for text in texts)
