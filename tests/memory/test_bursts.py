"""Bursts are batched: a background run waits for a quiet spell in the user's writing
(MEMORY_EXTRACT_IDLE_SECONDS), at most MEMORY_EXTRACT_MAX_WAIT_SECONDS, so one judge call covers a burst;
flushes and explicit requests do not wait."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest

from chat.models import Message
from memory.extraction import recovery
from memory.tasks import extract_memories_task
from tests.helpers import say
from tests.memory.chatting import START, Clock, chat, clock_at_start, tasks_recorded

pytestmark = pytest.mark.django_db


@pytest.fixture
def clock(monkeypatch: Any, settings: Any) -> Clock:
    return clock_at_start(monkeypatch, settings)


@pytest.fixture
def sent(monkeypatch: Any) -> list[dict[str, Any]]:
    return tasks_recorded(monkeypatch)


def messages_at(conversation: Any, times: list[datetime]) -> list[tuple[Any, str, datetime]]:
    return [(conversation, f"Message number {i}, still chatting.", at) for i, at in enumerate(times)]


def test_a_burst_of_six_messages_within_a_minute_makes_one_background_judge_call(
    fake_model: Any, user: Any, conversation: Any, clock: Clock, sent: list[dict[str, Any]],
    django_capture_on_commit_callbacks: Any,
) -> None:  # fmt: skip
    times = [START + timedelta(seconds=10 * i) for i in range(6)]

    outcomes = chat(messages_at(conversation, times), sent, clock, django_capture_on_commit_callbacks)

    assert [call.get("countdown") for call in sent] == [60, 60, 60, 60]  # from the third message on
    assert outcomes == ["waiting", "waiting", "waiting", "applied"]
    assert len(fake_model.judge_requests) == 1
    assert set(Message.objects.filter(user=user, role="user").values_list("memory_status", flat=True)) == {"processed"}


def test_a_user_who_never_pauses_is_served_after_the_longest_wait(
    fake_model: Any, user: Any, conversation: Any, clock: Clock, sent: list[dict[str, Any]],
    django_capture_on_commit_callbacks: Any,
) -> None:  # fmt: skip
    times = [START + timedelta(seconds=40 * i) for i in range(20)]  # one message every 40 s for 13 minutes

    outcomes = chat(messages_at(conversation, times), sent, clock, django_capture_on_commit_callbacks)

    # The first run is the first task due once the oldest message has waited 600 s (sent at 560 s, due at 620 s).
    assert outcomes.index("applied") == (560 - 80) // 40
    assert outcomes.count("applied") == 2 and len(fake_model.judge_requests) == 2
    assert set(Message.objects.filter(user=user, role="user").values_list("memory_status", flat=True)) == {"processed"}


def test_an_idle_users_pending_messages_are_due_for_the_sweep_once_the_idle_wait_is_over(
    user: Any, conversation: Any, clock: Clock, settings: Any
) -> None:
    messages = [say(conversation, f"Message {i}.") for i in range(3)]
    Message.objects.filter(pk__in=[m.pk for m in messages]).update(created_at=START)

    clock.now = START + timedelta(seconds=59)
    assert recovery.pending_work() == []
    clock.now = START + timedelta(seconds=60)
    assert recovery.pending_work() == [(user.pk, messages[-1].pk)]


def test_a_task_for_one_message_does_not_wait_for_quiet(
    fake_model: Any, user: Any, conversation: Any, clock: Clock
) -> None:
    said = [say(conversation, f"Message {i}.") for i in range(3)]
    Message.objects.filter(pk__in=[m.pk for m in said]).update(created_at=START)
    clock.now = START + timedelta(seconds=5)

    waiting = extract_memories_task.apply(args=(user.pk, said[-1].pk)).get()
    follow_up = extract_memories_task.apply(args=(user.pk, said[-1].pk), kwargs={"min_pending": 1}).get()

    assert (waiting, follow_up) == ("waiting", "applied")
    assert len(fake_model.judge_requests) == 1
