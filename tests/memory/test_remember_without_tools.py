"""'Remember this' without tools: with CHAT_TOOLS=off, or a provider that does not handle tools, an explicit
request runs the flush pipeline after the turn and the conversation shows what came of it."""

from __future__ import annotations

import contextlib
import time
from typing import Any

import pytest

from chat.extensions import turn_finished
from chat.llm import LLMError, tools_fallback, tools_usable
from chat.models import ConversationMarker, Message
from memory.models import ExtractionRun, Memory
from memory.tasks import extract_memories_task
from tests.helpers import say

pytestmark = pytest.mark.django_db


@pytest.fixture
def sent(monkeypatch: Any) -> list[dict[str, Any]]:
    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(extract_memories_task, "apply_async", lambda **kwargs: calls.append(kwargs))
    return calls


def finish_turn(message: Message, capture: Any) -> None:
    with capture(execute=True):
        turn_finished.send(
            sender=Message,
            user_id=message.user_id,
            conversation_id=message.conversation_id,
            user_message_id=message.pk,
            assistant_message_id=None,
            status="complete",
        )


def run_sent(sent: list[dict[str, Any]]) -> None:
    for call in sent:
        extract_memories_task.apply(args=call["args"], kwargs=call["kwargs"])


def markers(conversation: Any) -> list[str]:
    return list(ConversationMarker.objects.filter(conversation=conversation).values_list("text", flat=True))


@pytest.mark.parametrize(
    ("said", "stored"),
    [("Remember that I am vegetarian.", "vegetarian"), ("请记住我吃素。", "吃素")],
)
def test_remember_that_i_am_vegetarian_without_tools_is_stored_and_said_in_the_conversation(
    user: Any,
    conversation: Any,
    settings: Any,
    sent: list[dict[str, Any]],
    django_capture_on_commit_callbacks: Any,
    said: str,
    stored: str,
) -> None:
    settings.LLM_BACKEND, settings.CHAT_TOOLS = "demo", "off"
    message = say(conversation, said)

    finish_turn(message, django_capture_on_commit_callbacks)
    assert [c["kwargs"]["trigger"] for c in sent] == ["flush"] and sent[0]["kwargs"]["announce"]
    with django_capture_on_commit_callbacks(execute=True):
        run_sent(sent)

    memory = Memory.objects.get(owner=user)
    assert stored in memory.content
    assert Message.objects.get(pk=message.pk).memory_status == "processed"
    assert any(stored in text for text in markers(conversation))
    assert ExtractionRun.objects.get().trigger == "flush"


def test_an_explicit_request_that_stores_nothing_says_so_in_the_conversation(
    fake_model: Any,
    user: Any,
    conversation: Any,
    settings: Any,
    sent: list[dict[str, Any]],
    django_capture_on_commit_callbacks: Any,
) -> None:
    settings.CHAT_TOOLS = "off"
    message = say(conversation, "Remember to buy milk today.")
    fake_model.judge('{"operations": []}')

    finish_turn(message, django_capture_on_commit_callbacks)
    with django_capture_on_commit_callbacks(execute=True):
        run_sent(sent)

    assert not Memory.objects.filter(owner=user).exists()
    assert markers(conversation) == ["Memory checked: nothing from this message was remembered."]


def test_with_tools_an_explicit_request_the_model_flushed_is_not_flushed_again(
    fake_model: Any,
    user: Any,
    conversation: Any,
    settings: Any,
    sent: list[dict[str, Any]],
    django_capture_on_commit_callbacks: Any,
) -> None:
    settings.CHAT_TOOLS = "auto"
    message = say(conversation, "Remember that I am vegetarian.")
    Message.objects.filter(pk=message.pk).update(memory_status="processed")  # flush_memory covered it
    finish_turn(message, django_capture_on_commit_callbacks)
    assert sent == []  # below the background threshold; the model had flush_memory


def test_an_ordinary_message_without_tools_waits_for_the_background_threshold(
    fake_model: Any,
    user: Any,
    conversation: Any,
    settings: Any,
    sent: list[dict[str, Any]],
    django_capture_on_commit_callbacks: Any,
) -> None:
    settings.CHAT_TOOLS = "off"
    finish_turn(say(conversation, "What is the capital of Peru?"), django_capture_on_commit_callbacks)
    assert sent == []


def test_tools_a_provider_ignored_are_offered_again_after_a_while(
    fake_openai: Any, settings: Any, monkeypatch: Any
) -> None:
    from chat.llm import get_chat_model

    monkeypatch.setattr(tools_fallback, "TOOLS_RETRY_SECONDS", 0.2)
    model = get_chat_model()
    model.tools.disable("an empty answer when tools were offered")  # type: ignore[attr-defined]
    assert not model.tools_supported and not tools_usable()
    time.sleep(0.3)
    assert model.tools_supported and tools_usable()


@pytest.mark.parametrize("fails", ["hang", "empty twice"])
def test_tools_offered_again_are_turned_off_again_when_the_turn_fails_before_any_answer(
    fake_openai: Any, settings: Any, monkeypatch: Any, fails: str
) -> None:
    from asgiref.sync import async_to_sync

    from chat.llm import get_chat_model
    from tests.fake_openai import FakeResponse

    settings.LLM_FIRST_TOKEN_TIMEOUT = 2
    monkeypatch.setattr(tools_fallback, "TOOLS_RETRY_SECONDS", 0.2)
    model = get_chat_model()
    model.tools.disable("an empty answer when tools were offered")  # type: ignore[attr-defined]
    time.sleep(0.3)
    assert tools_usable()  # offered again after the pause
    monkeypatch.setattr(tools_fallback, "TOOLS_RETRY_SECONDS", 600)
    if fails == "hang":  # the server works through its tool grammar past the first-token deadline
        fake_openai.queue(FakeResponse(hang=True))
    else:  # empty with tools, and empty again without them
        fake_openai.queue(FakeResponse(""), FakeResponse(""))
    tool = {"type": "function", "function": {"name": "flush_memory", "parameters": {"type": "object"}}}

    async def ask() -> list[Any]:
        return [c async for c in model.stream(messages=[{"role": "user", "content": "Hi"}], tools=[tool])]

    with contextlib.suppress(LLMError):  # the hang ends in a timeout; two empty answers in nothing
        async_to_sync(ask)()
    assert fake_openai.requests[0].get("tools")
    assert not tools_usable()  # the next turns go without them for another while
