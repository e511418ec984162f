from __future__ import annotations

from typing import Any

import pytest
from celery.exceptions import Retry

from chat.extensions import turn_finished
from chat.llm import LLMError
from chat.models import Message
from memory.extraction import batches, outcomes
from memory.extraction.retries import retry_delay
from memory.models import ExtractionRun, Memory
from memory.tasks import extract_memories_task
from tests.helpers import say

pytestmark = pytest.mark.django_db


@pytest.fixture
def sent(monkeypatch: Any) -> list[dict[str, Any]]:
    """Tasks handed to the broker (recorded instead of sent)."""
    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(extract_memories_task, "apply_async", lambda **kwargs: calls.append(kwargs))
    return calls


def finish_turn(message: Message) -> None:
    turn_finished.send(
        sender=Message,
        user_id=message.user_id,
        conversation_id=message.conversation_id,
        user_message_id=message.pk,
        assistant_message_id=None,
        status="complete",
    )


def test_below_the_threshold_nothing_is_enqueued(
    user: Any, conversation: Any, sent: list[dict[str, Any]], django_capture_on_commit_callbacks: Any
) -> None:
    say(conversation, "one")
    second = say(conversation, "two")
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        finish_turn(second)
    assert callbacks == [] and sent == []


def test_at_the_threshold_one_task_with_ids_is_enqueued_on_commit(
    user: Any,
    conversation: Any,
    other_conversation: Any,
    sent: list[dict[str, Any]],
    django_capture_on_commit_callbacks: Any,
) -> None:
    say(conversation, "one")
    say(conversation, "two")
    third = say(other_conversation, "three")
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        finish_turn(third)
    assert sent == []  # not before the commit
    for callback in callbacks:
        callback()
    assert [call["args"] for call in sent] == [(user.pk, third.pk)]


def test_memory_off_enqueues_nothing(
    user: Any, conversation: Any, sent: list[dict[str, Any]], django_capture_on_commit_callbacks: Any
) -> None:
    messages = [say(conversation, f"message {i}") for i in range(3)]
    user.memory_enabled = False
    user.save()
    with django_capture_on_commit_callbacks(execute=True):
        finish_turn(messages[-1])
    assert sent == []


def test_a_broken_broker_never_breaks_the_turn(
    user: Any, conversation: Any, monkeypatch: Any, django_capture_on_commit_callbacks: Any
) -> None:
    def broker_down(**kwargs: Any) -> None:
        raise ConnectionError("broker down")

    monkeypatch.setattr(extract_memories_task, "apply_async", broker_down)
    messages = [say(conversation, f"message {i}") for i in range(3)]
    with django_capture_on_commit_callbacks(execute=True):
        finish_turn(messages[-1])  # no exception
    assert Message.objects.filter(pk=messages[-1].pk, memory_status="pending").exists()


def test_task_is_idempotent(fake_model: Any, user: Any, conversation: Any) -> None:
    messages = [say(conversation, f"message {i}") for i in range(3)]
    fake_model.judge({"operations": [{"op": "add", "content": "Is vegetarian.", "sources": [1]}]})

    first = extract_memories_task.apply(args=(user.pk, messages[-1].pk)).get()
    second = extract_memories_task.apply(args=(user.pk, messages[-1].pk)).get()

    assert (first, second) == (outcomes.Outcome.APPLIED, outcomes.Outcome.NOTHING_PENDING)
    assert len(fake_model.judge_requests) == 1
    assert Memory.objects.filter(owner=user).count() == 1


def test_task_retries_a_failed_attempt_with_backoff(
    fake_model: Any, user: Any, conversation: Any, monkeypatch: Any
) -> None:
    messages = [say(conversation, f"message {i}") for i in range(3)]
    fake_model.judge(LLMError("The model provider sent an answer that could not be read.", kind="bad_response"))
    retries: list[float] = []

    def record_retry(*args: Any, countdown: float = 0, **kwargs: Any) -> Retry:
        retries.append(countdown)
        return Retry()

    monkeypatch.setattr(extract_memories_task, "retry", record_retry)
    with pytest.raises(Retry):
        extract_memories_task.run(user.pk, messages[-1].pk)

    assert retries == [retry_delay(1)]
    assert retry_delay(2) == 2 * retry_delay(1)
    assert ExtractionRun.objects.get().status == ExtractionRun.Status.FAILED


def test_a_new_trigger_during_the_backoff_window_neither_runs_nor_schedules_another_retry(
    fake_model: Any, user: Any, conversation: Any, monkeypatch: Any
) -> None:
    messages = [say(conversation, f"message {i}") for i in range(3)]
    fake_model.judge(LLMError("The model provider sent an answer that could not be read.", kind="bad_response"))
    retries: list[float] = []

    def record_retry(*args: Any, countdown: float = 0, **kwargs: Any) -> Retry:
        retries.append(countdown)
        return Retry()

    monkeypatch.setattr(extract_memories_task, "retry", record_retry)
    with pytest.raises(Retry):
        extract_memories_task.run(user.pk, messages[-1].pk)
    newer = say(conversation, "message 3")

    assert extract_memories_task.run(user.pk, newer.pk) == outcomes.Outcome.BACKING_OFF

    assert retries == [retry_delay(1)]  # only the failed task's own retry is scheduled
    assert len(fake_model.judge_requests) == 1 and ExtractionRun.objects.count() == 1


def test_a_retry_that_finds_a_newer_failure_waits_out_its_window(
    fake_model: Any, user: Any, conversation: Any, monkeypatch: Any
) -> None:
    messages = [say(conversation, f"message {i}") for i in range(3)]
    fake_model.judge(LLMError("The model provider sent an answer that could not be read.", kind="bad_response"))
    batches.extract(user_id=user.pk, trigger=ExtractionRun.Trigger.BACKGROUND, up_to_message_id=messages[-1].pk)
    retries: list[float] = []

    def record_retry(*args: Any, countdown: float = 0, **kwargs: Any) -> Retry:
        retries.append(countdown)
        return Retry()

    monkeypatch.setattr(extract_memories_task, "retry", record_retry)
    extract_memories_task.push_request(retries=1)
    try:
        with pytest.raises(Retry):
            extract_memories_task.run(user.pk, messages[-1].pk)
    finally:
        extract_memories_task.pop_request()

    assert len(retries) == 1 and 0 < retries[0] <= retry_delay(1)
    assert len(fake_model.judge_requests) == 1


def test_task_declares_acks_late() -> None:
    assert extract_memories_task.acks_late is True
