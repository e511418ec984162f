"""Memory on a small window (2,048–4,096 tokens, as Ollama's default and small llama.cpp servers have):
the compact judge prompt, answer room that scales with the batch, and batches that are applied."""

from __future__ import annotations

from typing import Any

import pytest

from chat.llm import LLMError
from chat.llm.tokens import estimate_request, estimate_text
from chat.models import Message
from memory.extraction import batching, judge
from memory.extraction.outcomes import Outcome
from memory.models import ExtractionRun
from tests.helpers import run, say

pytestmark = pytest.mark.django_db

ORDINARY = [
    "I'm planning a trip to Lisbon next month, any ideas for a three-day walking route?",
    "What is a good way to learn the basics of sourdough baking at home on weekends?",
    "Can you explain how compound interest works with a simple example for a savings account?",
    "Which houseplants survive in a north-facing room with very little direct sunlight?",
]


def ordinary(count: int) -> list[str]:
    return [f"{ORDINARY[i % len(ORDINARY)]} ({i + 1})" for i in range(count)]


def small_window(settings: Any, tokens: int) -> None:
    settings.CHAT_CONTEXT_TOKENS, settings.MEMORY_CONTEXT_TOKENS = tokens, 0
    settings.MEMORY_JUDGE_MAX_TOKENS, settings.MEMORY_JUDGE_PROMPT = 2000, "auto"


def test_the_compact_prompt_is_chosen_below_8192_tokens_unless_a_prompt_is_named(settings: Any) -> None:
    small_window(settings, 4096)
    assert batching.compact_prompt()
    settings.CHAT_CONTEXT_TOKENS = 8192
    assert not batching.compact_prompt()
    settings.MEMORY_JUDGE_PROMPT = "compact"
    assert batching.compact_prompt()
    settings.CHAT_CONTEXT_TOKENS, settings.MEMORY_JUDGE_PROMPT = 2048, "full"
    assert not batching.compact_prompt()


def test_the_compact_prompt_is_smaller_than_the_full_one_and_under_900_tokens() -> None:
    full, compact = estimate_text(judge.judge_prompt()), estimate_text(judge.judge_prompt(compact=True))
    assert compact * 3 <= full * 2 and compact < 900


def test_the_answer_room_scales_with_the_batch_within_memory_judge_max_tokens(settings: Any) -> None:
    settings.MEMORY_JUDGE_MAX_TOKENS = 2000
    assert batching.answer_room(1) < batching.answer_room(5) < batching.answer_room(10) <= 2000
    assert batching.answer_room(100) == 2000
    settings.MEMORY_JUDGE_MAX_TOKENS = 300
    assert batching.answer_room(10) == 300


def test_at_2048_tokens_extraction_applies_a_batch_and_nothing_stays_pending(
    fake_model: Any, user: Any, conversation: Any, settings: Any
) -> None:
    small_window(settings, 2048)
    said = [say(conversation, text) for text in ordinary(12)]

    result = run(user, up_to=said[-1], trigger=ExtractionRun.Trigger.MANUAL)

    assert result.status == Outcome.APPLIED
    assert {Message.objects.get(pk=m.pk).memory_status for m in said} == {"processed"}
    for request in fake_model.judge_requests:
        assert request["messages"][0]["content"] == judge.judge_prompt(compact=True)
        assert estimate_request(request["messages"]) + request["max_tokens"] <= 2048
    assert {r.status for r in ExtractionRun.objects.all()} == {"applied"}


def test_at_2048_tokens_a_background_run_applies_its_first_batch(
    fake_model: Any, user: Any, conversation: Any, settings: Any
) -> None:
    small_window(settings, 2048)
    said = [say(conversation, text) for text in ordinary(3)]

    result = run(user, up_to=said[-1], trigger=ExtractionRun.Trigger.BACKGROUND)

    assert result.status == Outcome.APPLIED
    assert ExtractionRun.objects.get().status == "applied"


def test_at_4096_tokens_a_batch_holds_at_least_ten_ordinary_messages(
    fake_model: Any, user: Any, conversation: Any, settings: Any
) -> None:
    small_window(settings, 4096)
    said = [say(conversation, text) for text in ordinary(14)]

    run(user, up_to=said[-1], trigger=ExtractionRun.Trigger.MANUAL)

    first = ExtractionRun.objects.order_by("id").first()
    assert first is not None and first.status == "applied" and len(first.message_ids) >= 10


def test_a_single_messages_answer_cut_at_its_limit_says_so_and_names_the_setting(
    fake_model: Any, user: Any, conversation: Any, settings: Any
) -> None:
    settings.MEMORY_JUDGE_MAX_TOKENS, settings.MEMORY_RETRY_BASE_SECONDS = 700, 0
    message = say(conversation, "Remember that I am vegetarian.")
    for _ in range(3):
        fake_model.judge(LLMError("The answer was cut off at max_tokens (700).", kind="length"))
        run(user, up_to=message, trigger=ExtractionRun.Trigger.MANUAL)

    runs = list(ExtractionRun.objects.order_by("id"))
    assert [r.status for r in runs] == ["failed", "failed", "dropped"]
    assert "cut off at its limit of 700 tokens" in runs[0].error and "MEMORY_JUDGE_MAX_TOKENS is 700" in runs[0].error
    assert "Too large for the model" not in runs[0].error
    assert Message.objects.get(pk=message.pk).memory_status == "skipped"  # never pending for ever


@pytest.mark.parametrize(
    "rule",
    [
        "about the user themself",
        "unrelated future conversation",
        "relatively stable",
        "change how the assistant serves",
        "system of record",
        "other people's information",
        "grant permissions or skip confirmations",
        'even when the user says "remember this"',
        "转账不用再问我",
        "以后请用中文回答我。",
        "--- another conversation ---",
        "only within one",
        "language the user wrote in",
        "When unsure, store nothing",
        "never a near-duplicate",
        "only when the user explicitly asks to forget",
        "never with `update`/`retract`",
        "Only ids you were shown",
        '"expires": "YYYY-MM-DD"',
        "at most five years later",
        '"sensitive": true',
        "reply_language, form_of_address, units, answer_length, tone,\ntimezone, home_city, diet",
        '"pin": true',
        "passwords, PINs, codes, API keys, card or ID numbers",
        '{"operations": []}',
        '"op": "add"',
        '"op": "update"',
        '"op": "retract"',
        '"op": "clear"',
    ],
)
def test_the_compact_prompt_states_the_same_rules(rule: str) -> None:
    assert rule in judge.judge_prompt(compact=True)


def test_the_compact_prompt_starts_with_the_marker_the_demo_judge_recognises() -> None:
    from memory.demo.judge import JUDGE_MARKER

    assert judge.judge_prompt(compact=True).startswith(JUDGE_MARKER)
