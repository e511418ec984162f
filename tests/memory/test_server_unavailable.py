"""Slow is not poison: a judge call that times out, cannot connect or meets a 5xx leaves its batch pending
and is retried with backoff for MEMORY_RETRY_HOURS, never counted toward skipping the batch."""

from __future__ import annotations

from typing import Any

import pytest
from celery.exceptions import Retry

from chat.llm import LLMError
from chat.models import Message
from memory.extraction import clock as extraction_clock
from memory.extraction import retries
from memory.extraction.outcomes import Outcome
from memory.models import ExtractionRun
from memory.tasks import extract_memories_task
from tests.helpers import run, say
from tests.memory.test_pipeline import ADD, Clock

pytestmark = pytest.mark.django_db

TIMEOUT = LLMError("The model provider did not answer within 120 s.", kind="timeout")


@pytest.fixture
def clock(monkeypatch: Any, settings: Any) -> Clock:
    settings.MEMORY_RETRY_BASE_SECONDS, settings.MEMORY_RETRY_MAX_SECONDS, settings.MEMORY_RETRY_HOURS = 30, 600, 24
    moved = Clock()
    monkeypatch.setattr(extraction_clock, "now", lambda: moved.now)
    return moved


def status_of(message: Message) -> str:
    return Message.objects.get(pk=message.pk).memory_status


def test_three_timeouts_in_a_row_leave_the_batch_pending_and_it_is_extracted_once_the_server_answers(
    fake_model: Any, user: Any, conversation: Any, clock: Clock
) -> None:
    message = say(conversation, "I've always liked small phones")
    outcomes = []
    for _ in range(3):
        fake_model.judge(TIMEOUT)
        result = run(user, up_to=message, trigger=ExtractionRun.Trigger.BACKGROUND, min_pending=1)
        outcomes.append((result.status, result.retry_in))
        clock.advance(result.retry_in)

    assert outcomes == [(Outcome.UNAVAILABLE, 30.0), (Outcome.UNAVAILABLE, 60.0), (Outcome.UNAVAILABLE, 120.0)]
    assert status_of(message) == "pending"
    fake_model.judge(ADD)
    assert run(user, up_to=message, trigger=ExtractionRun.Trigger.BACKGROUND, min_pending=1).added == 1
    assert status_of(message) == "processed"
    runs = list(ExtractionRun.objects.order_by("id").values_list("attempt", "status"))
    assert runs == [(1, "unavailable")] * 3 + [(1, "applied")]


@pytest.mark.parametrize(
    "error",
    [
        LLMError("Could not reach the model provider (Connection refused).", kind="connection"),
        LLMError("The model provider answered HTTP 503.", kind="status", status=503),
        LLMError("The model provider answered HTTP 429.", kind="status", status=429),
    ],
)
def test_refused_connections_and_server_errors_never_skip_a_batch(
    fake_model: Any, user: Any, conversation: Any, clock: Clock, error: LLMError
) -> None:
    message = say(conversation, "I'm vegetarian")
    for _ in range(6):
        fake_model.judge(error)
        result = run(user, up_to=message)
        assert result.status == Outcome.UNAVAILABLE
        clock.advance(result.retry_in)

    assert status_of(message) == "pending"
    assert not ExtractionRun.objects.filter(status__in=["failed", "dropped"]).exists()


def test_only_unusable_answers_count_toward_skipping(
    fake_model: Any, user: Any, conversation: Any, clock: Clock
) -> None:
    message = say(conversation, "I'm vegetarian")
    for answer in ("garbage", TIMEOUT, "garbage", TIMEOUT, "garbage"):
        fake_model.judge(answer)
        result = run(user, up_to=message)
        clock.advance(max(result.retry_in, 600))

    statuses = list(ExtractionRun.objects.order_by("id").values_list("attempt", "status"))
    assert statuses == [(1, "failed"), (2, "unavailable"), (2, "failed"), (3, "unavailable"), (3, "dropped")]
    assert status_of(message) == "skipped"


def test_the_backoff_grows_to_at_most_ten_minutes_and_stops_after_the_retry_hours(
    fake_model: Any, user: Any, conversation: Any, clock: Clock, settings: Any
) -> None:
    settings.MEMORY_RETRY_HOURS = 1
    message = say(conversation, "I'm vegetarian")
    waits = []
    while True:
        fake_model.judge(TIMEOUT)
        result = run(user, up_to=message, trigger=ExtractionRun.Trigger.BACKGROUND, min_pending=1)
        assert result.status == Outcome.UNAVAILABLE
        waits.append(result.retry_in)
        if not result.retry_in:
            break
        clock.advance(result.retry_in)

    assert waits[:6] == [30.0, 60.0, 120.0, 240.0, 480.0, 600.0]
    assert max(waits) == 600.0 and waits[-1] == 0.0
    assert sum(waits) >= 3600
    assert status_of(message) == "pending"
    assert retries.task_countdown(result, retries=len(waits)) is None  # the task stops; the sweep picks it up


def test_background_triggers_during_the_wait_send_nothing(
    fake_model: Any, user: Any, conversation: Any, clock: Clock
) -> None:
    message = say(conversation, "I'm vegetarian")
    fake_model.judge(TIMEOUT)
    run(user, up_to=message, trigger=ExtractionRun.Trigger.BACKGROUND, min_pending=1)
    clock.advance(10)

    later = run(user, up_to=message, trigger=ExtractionRun.Trigger.BACKGROUND, min_pending=1)

    assert (later.status, later.retry_in) == (Outcome.BACKING_OFF, 20.0)
    assert len(fake_model.judge_requests) == 1


def test_the_task_retries_an_unavailable_server_with_the_backoff(
    fake_model: Any, user: Any, conversation: Any, monkeypatch: Any
) -> None:
    messages = [say(conversation, f"message {i}") for i in range(3)]
    fake_model.judge(TIMEOUT)
    scheduled: list[float] = []

    def record_retry(*args: Any, countdown: float = 0, **kwargs: Any) -> Retry:
        scheduled.append(countdown)
        return Retry()

    monkeypatch.setattr(extract_memories_task, "retry", record_retry)
    with pytest.raises(Retry):
        extract_memories_task.run(user.pk, messages[-1].pk)

    assert scheduled == [30.0]
    assert ExtractionRun.objects.get().status == ExtractionRun.Status.UNAVAILABLE
    assert retries.MAX_ATTEMPTS == 3  # unchanged: the attempts are for unusable answers
