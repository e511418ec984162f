"""A slot is free only when the server is: a judge request given up at its deadline keeps its place in the
provider queue while the server still works on it (tests/fake_openai.py with a `delay_before` past the
judge's timeout, as llama-cpp-python runs a non-streamed generation on to its end), so with
LLM_MAX_CONCURRENCY=1 no chat request reaches the server beside it; the chat turn completes afterwards."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from asgiref.sync import async_to_sync

from chat.llm import server_load
from chat.models import Message, ProviderTicket
from chat.services import conversation_create
from chat.turn.agent import Turn
from memory.models import ExtractionRun
from tests.fake_openai import FakeOpenAIServer, FakeResponse
from tests.helpers import run, say
from tests.turns import run_to_end

pytestmark = pytest.mark.django_db(transaction=True)

JUDGE_WORKS_FOR = 2.5  # seconds the server goes on with the judge request after it was given up at 1 s


@pytest.fixture
def server(fake_openai: FakeOpenAIServer, settings: Any) -> FakeOpenAIServer:
    settings.LLM_MAX_CONCURRENCY, settings.MEMORY_JUDGE_TIMEOUT, settings.MEMORY_MODEL = 1, 1, "judge-model"
    settings.LLM_FIRST_TOKEN_TIMEOUT = 10
    fake_openai.queue(FakeResponse('{"operations": []}', delay_before=JUDGE_WORKS_FOR))
    return fake_openai


def judge_then_chat(server: FakeOpenAIServer, user: Any, conversation: Any) -> tuple[Any, float]:
    """A background judge call the server keeps working on after its timeout, and a chat turn sent while
    it does; returns the turn's last event and when the chat request reached the server."""
    message = say(conversation, "I've always liked small phones")
    judge = threading.Thread(
        target=run, args=(user,), kwargs={"up_to": message, "trigger": "background", "min_pending": 1}
    )
    judge.start()
    while not server.requests:
        time.sleep(0.02)
    sent = time.monotonic()
    other = conversation_create(user=user)

    async def chat() -> Any:
        return await run_to_end(await Turn.begin(user=user, conversation=other, content="Hello"))

    event = async_to_sync(chat)()
    judge.join(30)
    return event, time.monotonic() - sent


def test_with_slots_no_chat_request_reaches_the_server_while_it_works_on_an_abandoned_judge_request(
    server: FakeOpenAIServer, user: Any, conversation: Any
) -> None:
    server.slots = True  # llama.cpp says when it is idle

    event, _ = judge_then_chat(server, user, conversation)

    assert server.max_in_flight == 1
    assert [bool(r.get("response_format")) for r in server.requests] == [True, False]  # the judge, then chat
    assert event.type == "done"
    assert Message.objects.filter(role="assistant", status="complete").count() == 2
    assert ExtractionRun.objects.get().status == ExtractionRun.Status.UNAVAILABLE
    assert not ProviderTicket.objects.exists()


def test_without_a_way_to_ask_the_hold_lasts_as_long_as_max_tokens_at_the_speed_the_server_showed(
    server: FakeOpenAIServer, user: Any, conversation: Any, settings: Any
) -> None:
    # llama-cpp-python states nothing: the judge model wrote 100 tokens a second before, so 150 tokens
    # take 1.5 s; the hold adds its margin (5 s), longer than the 2.5 s the server goes on.
    settings.MEMORY_JUDGE_MAX_TOKENS = 150
    server_load.observe_speed(model="judge-model", completion_tokens=1000, seconds=10)

    event, _ = judge_then_chat(server, user, conversation)

    assert server.max_in_flight == 1
    assert event.type == "done"
    assert Message.objects.filter(role="assistant", status="complete").count() == 2


def test_the_hold_is_bounded_by_the_calls_max_tokens_at_the_speed_shown() -> None:
    server_load.observe_speed(model="m", completion_tokens=200, seconds=10)  # 20 tokens a second

    assert server_load.hold_seconds(model="m", max_tokens=400, elapsed=5, time_limit=120) == 20.0
    assert server_load.hold_seconds(model="unknown", max_tokens=400, elapsed=5, time_limit=120) == 120.0
    assert server_load.hold_seconds(model="m", max_tokens=100_000, elapsed=0, time_limit=120) == 600.0
