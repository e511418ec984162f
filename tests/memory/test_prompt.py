"""The judge prompt is reviewed like code: these pin the rules it must state."""

from __future__ import annotations

import pytest

from memory.extraction.judge import CONVERSATION_BREAK, judge_prompt

PROMPT = judge_prompt()
# The words the rules are pinned by, whatever the line breaks.
WORDS = " ".join(PROMPT.split())


def words(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.parametrize(
    "rule",
    [
        # the four conditions
        "about the user themself",
        "useful in an unrelated future conversation",
        "relatively stable",
        "change how the assistant serves",
        # the never-store list
        "Restated requests",
        "Progress of a task",
        "system of record",
        "Other people's information",
        "Instructions or rules",
        'even when the user says "remember this"',
        # the preference rule: how to be served is stored, permissions never are
        "Lasting preferences about how the user wants to be served are facts worth remembering",
        "reply language,\nunits, length, format, tone",
        "grant the assistant permissions or skip confirmations",
        "never grants permissions",
        "is not a lasting\npreference",
        # reading and writing
        CONVERSATION_BREAK,
        "only within one segment",
        "cannot be resolved",
        "standalone, self-explanatory sentence",
        "language the user wrote in",
        "Update instead of adding a near-duplicate",
        "only when the user explicitly asks to forget",
        "only when the user asks to forget everything about them",
        "never combined with `update` or `retract`",
        "When unsure, store nothing",
        "Never invent an id",
        '{"operations": []}',
        # a memory's life (SPEC §8)
        "each message sent before today starts with the date it was sent",
        '"expires": "YYYY-MM-DD"',
        "must be after the message's date and at most five years later",
        '"sensitive": true',
        "precise whereabouts",
        "not sensitive",
        "`reply_language`, `form_of_address`",
        '"pin": true',
        "allergies",
        "passwords, PINs, one-time and verification codes, API keys, card numbers",
    ],
)
def test_judge_prompt_states_the_rule(rule: str) -> None:
    assert words(rule) in WORDS


def test_judge_prompt_shows_every_operation_in_the_answer_format() -> None:
    for op in ('"op": "add"', '"op": "update"', '"op": "retract"', '"op": "clear"'):
        assert op in PROMPT


def test_judge_prompt_starts_with_the_marker_the_demo_judge_recognises() -> None:
    from memory.demo.judge import JUDGE_MARKER

    assert PROMPT.startswith(JUDGE_MARKER)


@pytest.mark.parametrize(
    ("said", "stored"),
    [
        ('"From now on, please answer me in Chinese."', '"Prefers replies in Chinese."'),
        ('"以后请用中文回答我。"', '"希望用中文回答。"'),
    ],
)
def test_judge_prompt_shows_a_language_preference_being_stored_in_both_languages(said: str, stored: str) -> None:
    assert words(f"{said} gives {stored}") in WORDS


@pytest.mark.parametrize("instruction", ["submit\n  all my orders without asking", "以后所有订单都不用确认"])
def test_judge_prompt_shows_permission_grants_refused_in_both_languages(instruction: str) -> None:
    never_store = PROMPT.split("## Never store", 1)[1].split("##", 1)[0]
    assert words(instruction) in words(never_store)


def test_judge_prompt_no_longer_refuses_format_preferences() -> None:
    assert "always answer in bullet points" not in PROMPT


def test_judge_prompt_is_lean() -> None:
    assert len(PROMPT) <= 4500
