"""The offline token estimate: conservative for the text people write, cheap, and calibrated by reports."""

from __future__ import annotations

import json

from chat.llm import tokens
from chat.llm.tokens import calibrated_ratio, estimate_message, estimate_request, estimate_text, estimate_tools, scaled

ENGLISH = (
    "We narrowed it down to two phones: the small one with the better camera, and the larger one whose "
    "battery lasts two days. You said the budget is 600 euros and that you mostly take photos of your kids."
)


def test_empty_text_costs_nothing() -> None:
    assert estimate_text("") == 0


def test_english_counts_at_least_one_token_per_four_characters() -> None:
    # Real tokenizers average about 4 characters per token on English prose; the estimate stays above.
    assert estimate_text(ENGLISH) >= len(ENGLISH) / 4
    assert estimate_text(ENGLISH) <= len(ENGLISH) / 2


def test_each_cjk_character_counts_one_token() -> None:
    assert estimate_text("我想买一部小屏手机") == 9
    assert estimate_text("こんにちは") == 5
    assert estimate_text("안녕하세요") == 5


def test_mixed_text_adds_its_parts() -> None:
    assert estimate_text("手机 phone") == estimate_text("手机") + estimate_text(" phone")


def test_other_scripts_count_by_bytes() -> None:
    # Two bytes each in UTF-8: about one token per character, above what tokenizers use.
    assert estimate_text("привет") == 6
    assert estimate_text("🙂") == 2


def test_message_overhead_is_counted() -> None:
    assert estimate_message({"role": "user", "content": ""}) == tokens.MESSAGE_OVERHEAD
    assert estimate_message({"role": "user", "content": "abc"}) == tokens.MESSAGE_OVERHEAD + 1


def test_tool_calls_and_results_are_counted() -> None:
    call = {"id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": '{"q": "x" }'}}
    bare = estimate_message({"role": "assistant", "content": None})
    assert estimate_message({"role": "assistant", "content": None, "tool_calls": [call]}) > bare + 5
    assert estimate_message({"role": "tool", "tool_call_id": "call_1", "content": "found"}) > estimate_message(
        {"role": "tool", "content": "found"}
    )


def test_content_given_as_parts_counts_its_text() -> None:
    parts = [{"type": "text", "text": "hello world"}]
    assert estimate_message({"role": "user", "content": parts}) == estimate_message(
        {"role": "user", "content": "hello world"}
    )


def test_request_counts_messages_and_tool_schemas() -> None:
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": ENGLISH}]
    schema = {"type": "function", "function": {"name": "f", "description": "Does a thing.", "parameters": {}}}
    without = estimate_request(messages)
    assert without == tokens.REQUEST_OVERHEAD + sum(estimate_message(m) for m in messages)
    assert estimate_request(messages, tools=[schema]) == without + estimate_tools([schema])
    assert estimate_tools([schema]) >= len(json.dumps(schema)) / 3


def test_uncalibrated_estimate_is_unchanged() -> None:
    assert scaled(100, None) == 100


def test_a_provider_counting_more_raises_the_factor_at_once() -> None:
    ratio = calibrated_ratio(reported=150, estimated=100)
    assert ratio is not None and ratio >= 1.5
    assert scaled(100, ratio) >= 150


def test_a_provider_counting_less_lowers_the_factor_half_way() -> None:
    first = calibrated_ratio(reported=50, estimated=100)
    assert first is not None and 0.75 < first < 1.0
    second = calibrated_ratio(reported=50, estimated=100, previous=first)
    assert second is not None and second < first
    assert scaled(100, second) > 50  # still above what the provider counted


def test_absurd_reports_are_bounded_or_ignored() -> None:
    assert calibrated_ratio(reported=10_000, estimated=10) == tokens.RATIO_MAX
    assert calibrated_ratio(reported=0, estimated=100, previous=1.2) == 1.2
    assert calibrated_ratio(reported=100, estimated=0) is None
