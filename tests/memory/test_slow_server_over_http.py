"""Small, slow servers against the fake OpenAI-compatible server over HTTP (tests/fake_openai.py), one
slot (LLM_MAX_CONCURRENCY=1): judge calls that run past MEMORY_JUDGE_TIMEOUT leave their batch pending
until the server answers, and "Remember that I'm vegetarian" with the judge's answers unusable ends with
a "not remembered" marker saying why, whether the chat model called flush_memory or not."""

from __future__ import annotations

import json
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from celery.exceptions import Retry
from django.db import connections

from chat.models import ConversationMarker, Message, ProviderTicket
from chat.services import conversation_create
from chat.turn.agent import Turn
from memory import tasks
from memory.extraction import clock as extraction_clock
from memory.extraction.outcomes import Outcome
from memory.models import ExtractionRun, Memory
from memory.tasks import extract_memories_task
from tests.fake_openai import FakeOpenAIServer, FakeResponse
from tests.helpers import run, say
from tests.memory.test_pipeline import ADD, Clock
from tests.memory.test_remember_markers import NOT_REMEMBERED
from tests.turns import run_to_end

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def server(fake_openai: FakeOpenAIServer, settings: Any) -> FakeOpenAIServer:
    settings.LLM_MAX_CONCURRENCY, settings.MEMORY_JUDGE_TIMEOUT, settings.MEMORY_MODEL = 1, 1, "judge-model"
    settings.MEMORY_RETRY_BASE_SECONDS, settings.MEMORY_RETRY_MAX_SECONDS = 30, 600
    fake_openai.slots = True  # the hold after an abandoned call ends when the server is idle
    return fake_openai


def test_three_judge_calls_past_their_timeout_leave_the_batch_pending_and_it_is_extracted_once_the_server_answers(
    server: FakeOpenAIServer, user: Any, conversation: Any, monkeypatch: Any
) -> None:
    clock = Clock()
    monkeypatch.setattr(extraction_clock, "now", lambda: clock.now)
    message = say(conversation, "I've always liked small phones")
    server.queue(*[FakeResponse('{"operations": []}', delay_before=1.6) for _ in range(3)])
    outcomes = []
    for _ in range(3):
        result = run(user, up_to=message, trigger=ExtractionRun.Trigger.BACKGROUND, min_pending=1)
        outcomes.append((result.status, result.retry_in))
        clock.advance(result.retry_in)

    assert outcomes == [(Outcome.UNAVAILABLE, 30.0), (Outcome.UNAVAILABLE, 60.0), (Outcome.UNAVAILABLE, 120.0)]
    assert Message.objects.get(pk=message.pk).memory_status == "pending"
    assert len(server.requests) == 3 and server.max_in_flight == 1

    server.queue(FakeResponse(json.dumps(ADD)))
    assert run(user, up_to=message, trigger=ExtractionRun.Trigger.BACKGROUND, min_pending=1).added == 1
    assert Message.objects.get(pk=message.pk).memory_status == "processed"
    runs = list(ExtractionRun.objects.order_by("id").values_list("attempt", "status"))
    assert runs == [(1, "unavailable")] * 3 + [(1, "applied")]
    assert not ProviderTicket.objects.exists()


@pytest.mark.parametrize("tools", ["auto", "off"])
async def test_remember_that_im_vegetarian_with_the_judge_failing_says_not_remembered_and_why(
    server: FakeOpenAIServer, user: Any, settings: Any, monkeypatch: Any, tools: str
) -> None:
    settings.CHAT_TOOLS, settings.MEMORY_EXTRACT_MIN_TURNS, settings.MEMORY_JUDGE_TIMEOUT = tools, 5, 10
    called: list[bool] = []

    def respond(body: dict[str, Any]) -> FakeResponse:
        if body.get("response_format"):
            return FakeResponse("this is not the JSON object asked for")
        if body.get("tools") and not called:  # the chat model asks for the flush, then answers
            called.append(True)
            return FakeResponse(tool_calls=[{"id": "call_1", "name": "flush_memory", "arguments": "{}"}])
        return FakeResponse("Noted.")

    server.responder = respond
    sent: list[dict[str, Any]] = []

    def run_now(user_id: int, message_id: int, min_pending: int | None, trigger: str, **kwargs: Any) -> None:
        sent.append({"trigger": trigger, **kwargs})
        try:
            kwargs = {"min_pending": min_pending, "trigger": trigger, **kwargs}
            extract_memories_task.apply(args=(user_id, message_id), kwargs=kwargs)
        finally:
            connections.close_all()

    monkeypatch.setattr(tasks, "_send", run_now)
    monkeypatch.setattr(extract_memories_task, "retry", lambda **kwargs: Retry())  # the retry's outcome: later
    conversation = await sync_to_async(conversation_create)(user=user)

    turn = await Turn.begin(user=user, conversation=conversation, content="Remember that I'm vegetarian")
    final = await run_to_end(turn)

    assert final.type == "done"
    assert bool(called) == (tools == "auto")  # with tools the model flushed; without, the turn's end did
    texts = await sync_to_async(lambda: list(ConversationMarker.objects.values_list("text", flat=True)))()
    assert texts == [NOT_REMEMBERED]
    assert not await Memory.objects.filter(owner=user).aexists()
    statuses = await sync_to_async(lambda: list(ExtractionRun.objects.values_list("trigger", "status")))()
    assert ("flush", "failed") in statuses
