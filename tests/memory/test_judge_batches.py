"""Judge batches bounded by size (memory.extraction.batching), split when refused for length, never dropped for it;
a dropped batch can be retried from the admin; judge calls share a bounded number of slots."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from chat import model_queue
from chat.llm import LLMError
from chat.llm.tokens import estimate_request
from chat.models import Message
from chat.services import conversation_create
from chat.turn.transactions import turn_start
from memory.extraction import batching, judge
from memory.extraction.outcomes import Outcome
from memory.models import ExtractionRun
from tests.fake_openai import FakeOpenAIServer, FakeResponse
from tests.helpers import make_memory, run, say

pytestmark = pytest.mark.django_db

LONG = "I have been thinking about phones for a long time and about many other things as well. " * 16  # ~1,400 chars
TOO_LONG = LLMError("Requested tokens (9731) exceed context window of 8192", kind="context_length")


def statuses(*messages: Message) -> list[str]:
    return [Message.objects.get(pk=m.pk).memory_status for m in messages]


def window_for(settings: Any, messages: float) -> int:
    """Set a judge window that holds the (full) prompt and about `messages` LONG messages; returns the budget."""
    settings.MEMORY_JUDGE_PROMPT = "full"
    base = estimate_request(judge.render_input(memories=[], pending=[]).messages)
    one = estimate_request(judge.render_input(memories=[], pending=[judge.PendingMessage(1, 1, LONG)]).messages)
    settings.MEMORY_JUDGE_MAX_TOKENS = 100
    settings.MEMORY_CONTEXT_TOKENS = int(base + (one - base) * messages) + 100
    return batching.request_budget()


def test_the_judge_window_is_memory_context_tokens_or_else_the_chat_window(settings: Any) -> None:
    settings.CHAT_CONTEXT_TOKENS, settings.MEMORY_CONTEXT_TOKENS, settings.MEMORY_JUDGE_MAX_TOKENS = 32000, 0, 2000
    assert batching.window() == 32000 and batching.request_budget() == 30000
    settings.MEMORY_CONTEXT_TOKENS = 8192
    assert batching.window() == 8192 and batching.request_budget() == 6192


def test_a_batch_is_cut_to_what_fits_the_judges_window_and_the_rest_waits_for_the_next(
    fake_model: Any, user: Any, conversation: Any, settings: Any
) -> None:
    budget = window_for(settings, 2.5)
    said = [say(conversation, f"{i}. {LONG}") for i in range(6)]

    result = run(user, up_to=said[-1], trigger=ExtractionRun.Trigger.MANUAL)

    assert result.status == Outcome.APPLIED
    assert statuses(*said) == ["processed"] * 6
    sizes = [estimate_request(r["messages"]) for r in fake_model.judge_requests]
    assert len(sizes) == 3 and max(sizes) <= budget
    assert [len(r.message_ids) for r in ExtractionRun.objects.order_by("id")] == [2, 2, 2]


def test_a_batch_refused_for_length_is_split_and_nothing_is_skipped(
    fake_model: Any, user: Any, conversation: Any
) -> None:
    said = [say(conversation, f"Message {i}") for i in range(4)]
    fake_model.judge(TOO_LONG)

    result = run(user, up_to=said[-1], trigger=ExtractionRun.Trigger.MANUAL)

    assert result.status == Outcome.APPLIED
    assert statuses(*said) == ["processed"] * 4
    runs = list(ExtractionRun.objects.order_by("id"))
    assert [(r.status, len(r.message_ids)) for r in runs] == [("split", 4), ("applied", 2), ("applied", 2)]
    assert "exceed context window of 8192" in runs[0].error


def test_a_judge_answer_cut_off_at_max_tokens_splits_the_batch_too(
    fake_model: Any, user: Any, conversation: Any
) -> None:
    said = [say(conversation, f"Message {i}") for i in range(2)]
    fake_model.judge(LLMError("The answer was cut off at max_tokens (2000).", kind="length"))

    run(user, up_to=said[-1], trigger=ExtractionRun.Trigger.MANUAL)

    assert statuses(*said) == ["processed", "processed"]
    assert ExtractionRun.objects.order_by("id").first().status == "split"  # type: ignore[union-attr]


def test_a_single_message_refused_for_length_stays_pending_however_often_it_is_tried(
    fake_model: Any, user: Any, conversation: Any
) -> None:
    message = say(conversation, "Remember that I am vegetarian.")
    for _ in range(5):
        fake_model.judge(TOO_LONG)
        result = run(user, up_to=message, trigger=ExtractionRun.Trigger.MANUAL)
        assert result.status == Outcome.FAILED
    assert statuses(message) == ["pending"]
    runs = ExtractionRun.objects.all()
    assert {r.status for r in runs} == {"too_large"} and runs.count() == 5
    assert "MEMORY_CONTEXT_TOKENS" in runs[0].error


def test_memories_too_many_to_show_beside_one_message_leave_out_the_oldest(
    fake_model: Any, user: Any, conversation: Any, settings: Any
) -> None:
    old = make_memory(owner=user, content="OLDEST " + "x" * 480)
    for i in range(12):
        make_memory(owner=user, content=f"Memory {i} " + "y" * 480)
    newest = make_memory(owner=user, content="NEWEST fact.")
    budget = window_for(settings, 1.5)
    message = say(conversation, LONG)

    run(user, up_to=message, trigger=ExtractionRun.Trigger.MANUAL)

    shown = fake_model.judge_requests[0]["messages"][-1]["content"]
    assert estimate_request(fake_model.judge_requests[0]["messages"]) <= budget
    assert f"[{newest.pk}] NEWEST fact." in shown and f"[{old.pk}]" not in shown
    extraction = ExtractionRun.objects.get()
    assert extraction.status == "applied"
    assert statuses(message) == ["processed"]


def test_through_the_real_adapter_no_judge_request_exceeds_the_providers_window(
    fake_openai: FakeOpenAIServer, user: Any, conversation: Any, settings: Any
) -> None:
    settings.MEMORY_MODEL = "judge"
    window_for(settings, 2.5)
    fake_openai.context_window = settings.MEMORY_CONTEXT_TOKENS
    fake_openai.responder = lambda body: FakeResponse('{"operations": []}')
    said = [say(conversation, f"{i}. {LONG}") for i in range(6)]

    run(user, up_to=said[-1], trigger=ExtractionRun.Trigger.MANUAL)

    assert fake_openai.refused == 0
    assert all(r["max_tokens"] == 100 for r in fake_openai.requests)
    assert statuses(*said) == ["processed"] * 6


def test_a_dropped_batch_can_be_retried_from_the_admin(
    admin_client: Any,
    fake_model: Any,
    user: Any,
    conversation: Any,
    settings: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    settings.MEMORY_RETRY_BASE_SECONDS = 0
    message = say(conversation, "Remember that I am vegetarian.")
    for _ in range(3):
        fake_model.judge(LLMError("The model provider answered HTTP 500.", kind="status"))
        run(user, up_to=message, trigger=ExtractionRun.Trigger.MANUAL)
    dropped = ExtractionRun.objects.get(status="dropped")
    assert statuses(message) == ["skipped"]

    sent: list[Any] = []
    from memory import tasks

    original = tasks._send
    tasks._send = lambda *args, **kwargs: sent.append(args)  # type: ignore[assignment]
    try:
        with django_capture_on_commit_callbacks(execute=True):
            response = admin_client.post(
                reverse("admin:memory_extractionrun_changelist"),
                {"action": "retry_dropped_batches", "_selected_action": [dropped.pk]},
                follow=True,
            )
    finally:
        tasks._send = original  # type: ignore[assignment]
    assert response.status_code == 200
    assert statuses(message) == ["pending"]
    assert sent and sent[0][0] == user.pk and sent[0][1] == message.pk
    dropped.refresh_from_db()
    assert "retried from the admin" in dropped.error


def test_a_background_judge_request_waits_behind_chat_and_gives_up_its_place_when_too_long(
    fake_model: Any, user: Any, conversation: Any, settings: Any
) -> None:
    settings.MEMORY_EXTRACT_MIN_TURNS, settings.MEMORY_YIELD_TO_CHAT, settings.MEMORY_JUDGE_TIMEOUT = 1, True, 0.3
    said = say(conversation, "I am vegetarian.")
    chat = model_queue._enter(model_queue.Priority.CHAT)  # a chat request being answered
    assert model_queue.position(chat, 60) is None

    background = run(user, up_to=said, trigger=ExtractionRun.Trigger.BACKGROUND)

    assert background.status == Outcome.BUSY and not fake_model.judge_requests
    assert statuses(said) == ["pending"]
    model_queue._leave(chat)
    assert run(user, up_to=said, trigger=ExtractionRun.Trigger.BACKGROUND).status == Outcome.APPLIED


def test_without_yield_to_chat_a_background_run_does_not_wait_for_chat(
    fake_model: Any, user: Any, conversation: Any, settings: Any
) -> None:
    settings.MEMORY_EXTRACT_MIN_TURNS, settings.MEMORY_YIELD_TO_CHAT = 1, False
    said = say(conversation, "I am vegetarian.")
    turn_start(user=user, conversation=conversation_create(user=user), content="Tell me more")

    assert run(user, up_to=said, trigger=ExtractionRun.Trigger.BACKGROUND).status == Outcome.APPLIED
