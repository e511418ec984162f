"""'Remember that …' always ends with a marker in the conversation: remembered, waiting (and why) or not
remembered (and why), in English and Chinese, whether the chat model called flush_memory or not."""

from __future__ import annotations

from typing import Any

import pytest
from celery.exceptions import Retry
from django.utils import translation

from chat.extensions import TurnContext
from chat.llm import LLMError
from chat.models import ConversationMarker, Message
from memory import tools
from memory.tasks import extract_memories_task
from tests.helpers import say
from tests.memory.test_remember_without_tools import finish_turn, markers, run_sent

pytestmark = pytest.mark.django_db

NOT_REMEMBERED = "Not remembered: the memory model's answer could not be used. It will try again shortly."


@pytest.fixture
def sent(monkeypatch: Any) -> list[dict[str, Any]]:
    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(extract_memories_task, "apply_async", lambda **kwargs: calls.append(kwargs))
    return calls


def test_remember_that_im_vegetarian_with_the_judge_failing_says_not_remembered_and_why(
    fake_model: Any, user: Any, conversation: Any, sent: list[dict[str, Any]], django_capture_on_commit_callbacks: Any
) -> None:
    message = say(conversation, "Remember that I'm vegetarian")
    fake_model.judge("this is not the JSON object asked for")

    with django_capture_on_commit_callbacks(execute=True):
        sentence = tools.flush_memory.run(TurnContext(user=user, conversation=conversation, user_message=message), {})

    assert sentence == tools.FAILED
    assert markers(conversation) == [NOT_REMEMBERED]
    # The tool answered the request: the turn's end does not flush it a second time, the retry announces.
    finish_turn(message, django_capture_on_commit_callbacks)
    assert [(c["kwargs"]["trigger"], c["kwargs"].get("announce")) for c in sent] == [("flush", True)]


def test_without_tools_the_judge_failing_says_not_remembered_and_why(
    fake_model: Any,
    user: Any,
    conversation: Any,
    settings: Any,
    sent: list[dict[str, Any]],
    django_capture_on_commit_callbacks: Any,
    monkeypatch: Any,
) -> None:
    settings.CHAT_TOOLS = "off"
    message = say(conversation, "Remember that I'm vegetarian")
    fake_model.judge("this is not the JSON object asked for")
    monkeypatch.setattr(extract_memories_task, "retry", lambda **kwargs: Retry())  # the retry's outcome: later

    finish_turn(message, django_capture_on_commit_callbacks)
    with django_capture_on_commit_callbacks(execute=True):
        run_sent(sent)

    assert markers(conversation) == [NOT_REMEMBERED]


def test_with_tools_a_request_the_model_did_not_flush_is_flushed_after_the_turn_and_marked(
    fake_model: Any, user: Any, conversation: Any, sent: list[dict[str, Any]], django_capture_on_commit_callbacks: Any
) -> None:
    message = say(conversation, "Remember that I'm vegetarian")  # the model answered without calling the tool

    finish_turn(message, django_capture_on_commit_callbacks)

    assert [(c["kwargs"]["trigger"], c["kwargs"].get("announce")) for c in sent] == [("flush", True)]


def test_a_server_that_does_not_answer_leaves_a_waiting_marker_with_why(
    fake_model: Any, user: Any, conversation: Any, sent: list[dict[str, Any]], django_capture_on_commit_callbacks: Any
) -> None:
    message = say(conversation, "Remember that I'm vegetarian")
    fake_model.judge(LLMError("The model provider did not answer within 120 s.", kind="timeout"))

    with django_capture_on_commit_callbacks(execute=True):
        tools.flush_memory.run(TurnContext(user=user, conversation=conversation, user_message=message), {})

    assert markers(conversation) == [
        "Not remembered yet: the model server did not answer in time. This message waits and will be reviewed "
        "once it does."
    ]
    assert Message.objects.get(pk=message.pk).memory_status == "pending"
    assert sent and sent[0]["kwargs"]["announce"]


def test_the_markers_reasons_are_in_chinese_too(fake_model: Any, user: Any, conversation: Any) -> None:
    from memory.extraction.outcomes import Outcome, Result
    from memory.notices import outcome_text

    with translation.override("zh-hans"):
        texts = [outcome_text(Result(status)) for status in (Outcome.FAILED, Outcome.DROPPED, Outcome.UNAVAILABLE)]
    assert all(text and not text.isascii() for text in texts)
    assert ConversationMarker.objects.count() == 0
