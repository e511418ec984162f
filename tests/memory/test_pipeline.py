from __future__ import annotations

import threading
from datetime import UTC, timedelta
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone

from chat.llm import LLMError
from chat.models import Message
from memory import services
from memory.changes import MemoryChange
from memory.extraction import claim, outcomes, retries
from memory.extraction import clock as extraction_clock
from memory.extraction.judge import CONVERSATION_BREAK
from memory.extraction.outcomes import Outcome
from memory.models import ExtractionRun, Memory, MemoryClaim
from tests.helpers import make_conversation, make_memory, make_message, make_user, run, say

pytestmark = pytest.mark.django_db

ADD = {
    "operations": [
        {"op": "add", "content": "Prefers small phones, finds them easier to use one-handed.", "sources": [1]}
    ]
}


def statuses(*messages: Message) -> list[str]:
    return [Message.objects.get(pk=m.pk).memory_status for m in messages]


def test_background_below_threshold_makes_no_judge_call(fake_model: Any, user: Any, conversation: Any) -> None:
    first = say(conversation, "I've always liked small phones")
    second = say(conversation, "Which one is lighter?")

    result = run(user, up_to=second, trigger=ExtractionRun.Trigger.BACKGROUND)

    assert result.status == Outcome.BELOW_THRESHOLD
    assert fake_model.judge_requests == []
    assert statuses(first, second) == ["pending", "pending"]
    assert not ExtractionRun.objects.exists()


def test_three_messages_across_two_conversations_make_one_judge_call_with_break_line(
    fake_model: Any, user: Any, conversation: Any, other_conversation: Any, settings: Any
) -> None:
    settings.MEMORY_MODEL = "judge-model"
    kept = make_memory(owner=user, content="Lives in Lyon.")
    first = say(
        conversation, "I've always liked small phones, they're easy to use one-handed.", reply="ASSISTANT-SAYS-BIG"
    )
    second = say(conversation, "Today I'm helping a friend pick a phone, his budget this time is 3000.")
    third = say(other_conversation, "I want a new phone, suggest a few.")
    fake_model.judge(ADD)

    result = run(user, up_to=third, trigger=ExtractionRun.Trigger.BACKGROUND)

    assert result.status == Outcome.APPLIED and result.added == 1
    assert len(fake_model.judge_requests) == 1
    request = fake_model.judge_requests[0]
    assert (request["model"], request["temperature"], request["timeout"]) == ("judge-model", 0.3, 120.0)
    shown = request["messages"][-1]["content"]
    assert f"[{kept.pk}] Lives in Lyon." in shown
    day = f"[{first.created_at.astimezone(UTC).date().isoformat()}]"
    assert f"Today (UTC): {day[1:-1]}" in shown
    # Sent today, so shown without a day (an earlier day is shown: tests/memory/test_judge.py).
    assert f"1. {first.content}\n2. {second.content}\n{CONVERSATION_BREAK}\n3. {third.content}" in shown
    assert "ASSISTANT-SAYS-BIG" not in str(request["messages"])
    assert statuses(first, second, third) == ["processed"] * 3


def test_add_links_sources_and_records_the_run(fake_model: Any, user: Any, conversation: Any) -> None:
    message = say(conversation, "I've always liked small phones")
    fake_model.judge(ADD)

    run(user, up_to=message)

    memory = Memory.objects.get(owner=user)
    assert memory.origin == Memory.Origin.EXTRACTED and memory.invalid_at is None
    assert list(memory.sources.all()) == [message]
    extraction = ExtractionRun.objects.get()
    assert extraction.status == ExtractionRun.Status.APPLIED
    assert extraction.message_ids == [message.pk]
    assert extraction.applied_ops[0]["op"] == "add"
    assert extraction.raw_output and extraction.judge_input and extraction.finished_at


def test_update_invalidates_old_memory_and_links_successor(fake_model: Any, user: Any, conversation: Any) -> None:
    old = make_memory(owner=user, content="Prefers small phones.")
    message = say(conversation, "I prefer big screens now")
    fake_model.judge(
        {"operations": [{"op": "update", "id": old.pk, "content": "Prefers large-screen phones.", "sources": [1]}]}
    )

    result = run(user, up_to=message)

    old.refresh_from_db()
    new = Memory.objects.get(owner=user, invalid_at__isnull=True)
    assert result.updated == 1
    assert new.content == "Prefers large-screen phones."
    assert old.invalid_at is not None and old.invalid_reason == Memory.InvalidReason.UPDATED
    assert old.superseded_by == new
    assert list(new.sources.all()) == [message]
    assert result.changes == [
        MemoryChange(
            "update",
            memory_id=new.pk,
            content="Prefers large-screen phones.",
            previous_id=old.pk,
            previous_content="Prefers small phones.",
        )
    ]


def test_retract_invalidates_with_reason(fake_model: Any, user: Any, conversation: Any) -> None:
    memory = make_memory(owner=user, content="Prefers large-screen phones.")
    message = say(conversation, "Please forget my screen preference")
    fake_model.judge({"operations": [{"op": "retract", "id": memory.pk}]})

    run(user, up_to=message)

    memory.refresh_from_db()
    assert memory.invalid_reason == Memory.InvalidReason.RETRACTED and memory.invalid_at is not None
    assert not Memory.objects.filter(owner=user, invalid_at__isnull=True).exists()


def test_clear_then_add_keeps_only_the_new_fact(fake_model: Any, user: Any, conversation: Any) -> None:
    make_memory(owner=user, content="Prefers small phones.")
    make_memory(owner=user, content="Lives in Lyon.")
    say(conversation, "Forget everything about me.")
    message = say(conversation, "I'm vegetarian.")
    fake_model.judge({"operations": [{"op": "clear"}, {"op": "add", "content": "Is vegetarian.", "sources": [2]}]})

    result = run(user, up_to=message)

    assert result.cleared and result.added == 1
    active = Memory.objects.filter(owner=user, invalid_at__isnull=True)
    assert [m.content for m in active] == ["Is vegetarian."]
    assert Memory.objects.filter(owner=user, invalid_reason=Memory.InvalidReason.CLEARED).count() == 2


def test_invalid_operations_are_dropped_with_reasons(
    fake_model: Any, user: Any, other_user: Any, conversation: Any
) -> None:
    inactive = make_memory(owner=user, content="Old.", invalid_at=timezone.now(), invalid_reason="retracted")
    theirs = make_memory(owner=other_user, content="Someone else's.")
    active = make_memory(owner=user, content="Lives in Lyon.")
    message = say(conversation, "Some message")
    fake_model.judge(
        {
            "operations": [
                {"op": "update", "id": 999999, "content": "Unknown."},
                {"op": "retract", "id": inactive.pk},
                {"op": "retract", "id": theirs.pk},
                {"op": "add", "content": "   "},
                {"op": "add", "content": "x" * 501},
                {"op": "add", "content": "Lives in Lyon."},
                {"op": "add", "content": "Drinks tea.", "sources": [1]},
                {"op": "add", "content": "Drinks tea."},
            ]
        }
    )

    run(user, up_to=message)

    dropped = ExtractionRun.objects.get().dropped_ops
    reasons = [d["reason"] for d in dropped]
    assert reasons == [
        "unknown memory id 999999",
        f"memory {inactive.pk} is not active",
        f"memory {theirs.pk} belongs to another user",
        "blank content",
        "content longer than 500 characters (501)",
        f"the same content as active memory {active.pk}",
        "a duplicate of another operation in this answer",
    ]
    theirs.refresh_from_db()
    assert theirs.invalid_at is None
    assert sorted(Memory.objects.filter(owner=user, invalid_at__isnull=True).values_list("content", flat=True)) == [
        "Drinks tea.",
        "Lives in Lyon.",
    ]


@pytest.mark.parametrize(
    "answer",
    [
        "not json",
        '{"ops": []}',
        '{"operations": [{"op": "delete", "id": 1}]}',
        '{"operations": [{"op": "add"}]}',
        '{"operations": [{"op": "update", "id": "1", "content": "x"}]}',
        '{"operations": [{"op": "clear"}, {"op": "retract", "id": 1}]}',
    ],
)
def test_malformed_output_fails_the_batch_and_leaves_messages_pending(
    fake_model: Any, user: Any, conversation: Any, answer: str
) -> None:
    memory = make_memory(owner=user, content="Prefers small phones.")
    message = say(conversation, "Forget everything about me")
    fake_model.judge(answer.replace('"id": 1', f'"id": {memory.pk}'))

    result = run(user, up_to=message)

    assert result.status == Outcome.FAILED
    assert statuses(message) == ["pending"]
    memory.refresh_from_db()
    assert memory.invalid_at is None
    extraction = ExtractionRun.objects.get()
    assert extraction.status == ExtractionRun.Status.FAILED and "Malformed" in extraction.error
    assert not MemoryClaim.objects.filter(token__isnull=False).exists()


def test_an_unreadable_answer_fails_the_batch(fake_model: Any, user: Any, conversation: Any) -> None:
    message = say(conversation, "I'm vegetarian")
    fake_model.judge(LLMError("The model provider sent an answer that could not be read.", kind="bad_response"))

    result = run(user, up_to=message)

    assert result.status == Outcome.FAILED
    assert statuses(message) == ["pending"]
    assert "bad_response" in ExtractionRun.objects.get().error


class Clock:
    """memory.extraction.clock.now, moved by hand."""

    def __init__(self) -> None:
        self.now = timezone.now()

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


@pytest.fixture
def clock(monkeypatch: Any, settings: Any) -> Clock:
    settings.MEMORY_RETRY_BASE_SECONDS = 30
    clock = Clock()
    monkeypatch.setattr(extraction_clock, "now", lambda: clock.now)
    return clock


def test_third_failed_attempt_skips_the_batch_and_drops_the_run(
    fake_model: Any, user: Any, conversation: Any, clock: Clock
) -> None:
    message = say(conversation, "I'm vegetarian")
    for _ in range(3):
        fake_model.judge("garbage")

    outcomes = []
    for attempt in range(1, 4):
        outcomes.append(run(user, up_to=message).status)
        clock.advance(retries.retry_delay(attempt))

    assert outcomes == [Outcome.FAILED, Outcome.FAILED, Outcome.DROPPED]
    assert statuses(message) == ["skipped"]
    runs = list(ExtractionRun.objects.order_by("id").values_list("attempt", "status"))
    assert runs == [(1, "failed"), (2, "failed"), (3, "dropped")]
    # The next message starts a fresh batch: one poisoned batch never blocks the user.
    later = say(conversation, "I live in Lyon")
    fake_model.judge({"operations": []})
    assert run(user, up_to=later).status == Outcome.APPLIED


def test_background_triggers_within_the_backoff_window_start_no_attempt(
    fake_model: Any, user: Any, conversation: Any, clock: Clock
) -> None:
    messages = [say(conversation, f"message {i}") for i in range(3)]
    fake_model.judge(LLMError("The model provider sent an answer that could not be read.", kind="bad_response"))
    assert run(user, up_to=messages[-1], trigger=ExtractionRun.Trigger.BACKGROUND).status == Outcome.FAILED

    # New turns keep arriving during a short outage: each would have been an attempt.
    later = []
    for seconds in (2, 5, 10):
        clock.advance(seconds)
        later.append(run(user, up_to=messages[-1], trigger=ExtractionRun.Trigger.BACKGROUND))

    assert [r.status for r in later] == [Outcome.BACKING_OFF] * 3
    assert [r.retry_in for r in later] == [28.0, 23.0, 13.0]
    assert len(fake_model.judge_requests) == 1
    assert ExtractionRun.objects.count() == 1
    assert statuses(*messages) == ["pending"] * 3

    # The scheduled retry, when the window has passed, is attempt 2.
    clock.advance(13)
    fake_model.judge({"operations": []})
    assert run(user, up_to=messages[-1], trigger=ExtractionRun.Trigger.BACKGROUND).status == Outcome.APPLIED
    assert list(ExtractionRun.objects.order_by("id").values_list("attempt", "status")) == [
        (1, "failed"),
        (2, "applied"),
    ]


def test_flush_may_retry_at_once_but_never_drops_a_batch_before_the_backoff(
    fake_model: Any, user: Any, conversation: Any, clock: Clock
) -> None:
    message = say(conversation, "Remember that I'm vegetarian")
    for _ in range(3):
        fake_model.judge(LLMError("The model provider sent an answer that could not be read.", kind="bad_response"))

    first = run(user, up_to=message)
    clock.advance(1)
    second = run(user, up_to=message)  # the user asked again: one more attempt now
    clock.advance(1)
    third = run(user, up_to=message)  # the last attempt waits for the window

    assert (first.status, second.status, third.status) == (Outcome.FAILED, Outcome.FAILED, Outcome.BACKING_OFF)
    assert (first.retry_in, second.retry_in, third.retry_in) == (30.0, 60.0, 59.0)
    assert len(fake_model.judge_requests) == 2
    assert statuses(message) == ["pending"]
    clock.advance(59)
    assert run(user, up_to=message).status == Outcome.DROPPED
    assert statuses(message) == ["skipped"]


def test_run_records_the_model_that_judged(user: Any, conversation: Any, settings: Any) -> None:
    settings.MEMORY_MODEL = "gpt-4o-mini"
    message = say(conversation, "I'm vegetarian")

    run(user, up_to=message)  # the offline demo model answers

    assert ExtractionRun.objects.get().model == "Offline demo model"


def test_run_records_memory_model_for_a_provider(fake_model: Any, user: Any, conversation: Any, settings: Any) -> None:
    settings.MEMORY_MODEL = "judge-model"
    message = say(conversation, "I'm vegetarian")
    fake_model.judge({"operations": []})

    run(user, up_to=message)

    assert ExtractionRun.objects.get().model == "judge-model"


def test_a_message_after_the_trigger_waits_for_the_next_run(fake_model: Any, user: Any, conversation: Any) -> None:
    first = say(conversation, "I'm vegetarian")
    later = say(conversation, "I live in Lyon")

    run(user, up_to=first)

    assert statuses(first, later) == ["processed", "pending"]
    assert "I live in Lyon" not in fake_model.judge_requests[0]["messages"][-1]["content"]


def test_a_message_arriving_during_the_run_is_left_for_the_next_run(
    fake_model: Any, user: Any, conversation: Any
) -> None:
    first = say(conversation, "I'm vegetarian")
    arrived: list[Message] = []

    def judge_while_a_message_arrives(messages: Any) -> str:
        arrived.append(say(conversation, "I live in Lyon"))  # committed before this run commits
        return '{"operations": []}'

    fake_model.judge(judge_while_a_message_arrives)
    run(user, up_to=None, trigger=ExtractionRun.Trigger.MANUAL)

    assert statuses(first, arrived[0]) == ["processed", "pending"]
    assert ExtractionRun.objects.get().message_ids == [first.pk]


def test_batches_hold_at_most_forty_messages_oldest_first(fake_model: Any, user: Any, conversation: Any) -> None:
    messages = [say(conversation, f"Message {i}") for i in range(45)]

    result = run(user, up_to=messages[-1])

    assert result.batches == 2 and len(fake_model.judge_requests) == 2
    runs = list(ExtractionRun.objects.order_by("id"))
    assert runs[0].message_ids == [m.pk for m in messages[:40]]
    assert runs[1].message_ids == [m.pk for m in messages[40:]]


def test_busy_when_another_run_holds_the_claim(fake_model: Any, user: Any, conversation: Any) -> None:
    message = say(conversation, "I'm vegetarian")
    token = claim.claim_take(user_id=user.pk)
    assert token is not None

    assert run(user, up_to=message).status == Outcome.BUSY
    assert fake_model.judge_requests == []
    claim.claim_release(user_id=user.pk, token=token)
    assert run(user, up_to=message).status == Outcome.APPLIED


def test_a_crashed_runs_claim_expires_and_counts_as_a_failed_attempt(
    fake_model: Any, user: Any, conversation: Any
) -> None:
    message = say(conversation, "I'm vegetarian")
    stale = ExtractionRun.objects.create(
        owner=user, trigger="background", message_ids=[message.pk], first_message_id=message.pk
    )
    ExtractionRun.objects.filter(pk=stale.pk).update(started_at=timezone.now() - timedelta(hours=1))
    MemoryClaim.objects.create(
        user=user, token="00000000-0000-0000-0000-000000000001", expires_at=timezone.now() - timedelta(seconds=1)
    )

    result = run(user, up_to=message)

    assert result.status == Outcome.APPLIED
    stale.refresh_from_db()
    assert stale.status == ExtractionRun.Status.FAILED and "claim expired" in stale.error
    assert ExtractionRun.objects.exclude(pk=stale.pk).get().attempt == 2


def test_lost_claim_applies_nothing(fake_model: Any, user: Any, conversation: Any) -> None:
    message = say(conversation, "I'm vegetarian")

    def judge_then_lose_the_claim(messages: Any) -> str:
        MemoryClaim.objects.filter(user=user).update(token="00000000-0000-0000-0000-000000000002")
        return '{"operations": [{"op": "add", "content": "Is vegetarian.", "sources": [1]}]}'

    fake_model.judge(judge_then_lose_the_claim)
    result = run(user, up_to=message)

    assert result.status == Outcome.ABANDONED
    assert not Memory.objects.exists()
    assert statuses(message) == ["pending"]


@pytest.mark.parametrize("action", ["delete", "edit", "forget_all"])
def test_user_control_skips_older_pending_messages(fake_model: Any, user: Any, conversation: Any, action: str) -> None:
    memory = make_memory(owner=user, content="Prefers small phones.")
    backlog = say(conversation, "I prefer small phones, definitely")
    if action == "delete":
        services.memory_delete(user=user, memory=memory)
    elif action == "edit":
        services.memory_edit(user=user, memory=memory, content="Prefers large-screen phones.")
    else:
        services.memory_forget_all(user=user)
    later = say(conversation, "I'm vegetarian")

    assert statuses(backlog, later) == ["skipped", "pending"]
    run(user, up_to=later)
    shown = fake_model.judge_requests[0]["messages"][-1]["content"]
    assert backlog.content not in shown and later.content in shown


def test_user_delete_during_a_run_means_nothing_is_applied(fake_model: Any, user: Any, conversation: Any) -> None:
    memory = make_memory(owner=user, content="Prefers small phones.")
    message = say(conversation, "I prefer big screens now")

    def judge_while_the_user_deletes(messages: Any) -> str:
        services.memory_delete(user=user, memory=memory)
        return '{"operations": [{"op": "add", "content": "Prefers large-screen phones.", "sources": [1]}]}'

    fake_model.judge(judge_while_the_user_deletes)
    result = run(user, up_to=message)

    assert result.status == Outcome.ABANDONED
    assert not Memory.objects.filter(owner=user).exists()
    assert statuses(message) == ["skipped"]


def test_memory_off_is_never_extracted(fake_model: Any, user: Any, conversation: Any) -> None:
    message = say(conversation, "I'm vegetarian")
    user.memory_enabled = False
    user.save()

    assert run(user, up_to=message).status == Outcome.MEMORY_OFF
    assert fake_model.judge_requests == []


def test_skipped_messages_are_never_extracted(fake_model: Any, user: Any) -> None:
    temporary = make_conversation(owner=user, temporary=True)
    skipped = make_message(conversation=temporary, content="I'm vegetarian", memory_status="skipped")

    assert run(user, up_to=skipped).status == Outcome.NOTHING_PENDING
    assert fake_model.judge_requests == []


def test_another_users_messages_are_never_in_the_batch(
    fake_model: Any, user: Any, other_user: Any, conversation: Any
) -> None:
    theirs = say(make_conversation(owner=other_user), "I am Mallory and I like secrets")
    mine = say(conversation, "I'm vegetarian")

    run(user, up_to=theirs if theirs.pk > mine.pk else mine, trigger=ExtractionRun.Trigger.MANUAL)

    assert "Mallory" not in fake_model.judge_requests[0]["messages"][-1]["content"]
    assert statuses(theirs) == ["pending"]


def test_queries_per_run_do_not_grow_with_memories_or_messages(
    fake_model: Any, user: Any, conversation: Any, django_assert_max_num_queries: Any
) -> None:
    from django.test.utils import CaptureQueriesContext

    def queries_for(memories: int, messages: int) -> int:
        Memory.objects.filter(owner=user).delete()
        Memory.objects.bulk_create([Memory(owner=user, content=f"Fact {i}.") for i in range(memories)])
        batch = [say(conversation, f"Message {i}") for i in range(messages)]
        fake_model.judge({"operations": [{"op": "add", "content": f"New fact {memories}.", "sources": [1]}]})
        with CaptureQueriesContext(connection) as captured:
            run(user, up_to=batch[-1])
        return len(captured)

    queries_for(0, 1)  # the first run ever also creates the user's claim row
    assert queries_for(10, 3) == queries_for(200, 39) <= 24


@pytest.mark.django_db(transaction=True)
def test_two_concurrent_runs_for_one_user_make_one_judge_call(fake_model: Any, settings: Any) -> None:

    user = make_user()
    conversation = make_conversation(owner=user)
    message = say(conversation, "I'm vegetarian")
    inside, release = threading.Event(), threading.Event()

    def slow_judge(messages: Any) -> str:
        inside.set()
        release.wait(10)
        return '{"operations": [{"op": "add", "content": "Is vegetarian.", "sources": [1]}]}'

    fake_model.judge(slow_judge)
    results: list[outcomes.Result] = []

    def first_run() -> None:
        try:
            results.append(run(user, up_to=message, trigger=ExtractionRun.Trigger.BACKGROUND, min_pending=1))
        finally:
            connection.close()

    thread = threading.Thread(target=first_run)
    thread.start()
    assert inside.wait(10)
    second = run(user, up_to=message, trigger=ExtractionRun.Trigger.BACKGROUND, min_pending=1)
    release.set()
    thread.join(10)

    assert second.status == Outcome.BUSY
    assert [r.status for r in results] == [Outcome.APPLIED]
    assert len(fake_model.judge_requests) == 1
    assert Memory.objects.filter(owner=user).count() == 1


def test_memories_changed_is_sent_on_commit_only_when_something_changed(
    fake_model: Any, user: Any, conversation: Any, django_capture_on_commit_callbacks: Any
) -> None:
    from memory.signals import memories_changed

    received: list[dict[str, Any]] = []

    def receiver(sender: Any, **kwargs: Any) -> None:
        received.append(kwargs)

    memories_changed.connect(receiver)
    try:
        first = say(conversation, "I'm vegetarian")
        fake_model.judge({"operations": [{"op": "add", "content": "Is vegetarian.", "sources": [1]}]})
        with django_capture_on_commit_callbacks(execute=False) as callbacks:
            run(user, up_to=first)
        assert received == []  # not before the commit
        for callback in callbacks:
            callback()
        second = say(conversation, "Thanks")
        with django_capture_on_commit_callbacks(execute=True):
            run(user, up_to=second)  # the judge answers no operations
    finally:
        memories_changed.disconnect(receiver)

    run_id = ExtractionRun.objects.get(message_ids=[first.pk]).pk
    memory_id = Memory.objects.get(owner=user).pk
    assert [(r["user_id"], r["run_id"], r["changes"]) for r in received] == [
        (user.pk, run_id, [MemoryChange("add", memory_id=memory_id, content="Is vegetarian.")])
    ]


def test_an_earlier_id_committed_late_is_left_pending_not_skipped(
    fake_model: Any, user: Any, conversation: Any
) -> None:
    # Two concurrent turns can commit out of order: id 900_001 commits and triggers a run while
    # id 900_000 is still in flight. The run records the ids it saw and marks only those.
    trigger = make_message(id=900_001, conversation=conversation, content="I'm vegetarian")
    late: list[Message] = []

    def judge_while_the_earlier_turn_commits(messages: Any) -> str:
        late.append(make_message(id=900_000, conversation=conversation, content="I live in Lyon"))
        return '{"operations": []}'

    fake_model.judge(judge_while_the_earlier_turn_commits)
    run(user, up_to=trigger)

    assert statuses(late[0], trigger) == ["pending", "processed"]
    run(user, up_to=trigger)  # the next run up to the same message picks it up
    assert statuses(late[0]) == ["processed"]
    assert [r.message_ids for r in ExtractionRun.objects.order_by("id")] == [[900_001], [900_000]]
