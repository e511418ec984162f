from __future__ import annotations

import json
from datetime import UTC, date, datetime

import pytest

from memory.extraction.judge import (
    CONVERSATION_BREAK,
    ActiveMemory,
    MalformedOutput,
    Operation,
    PendingMessage,
    judge_prompt,
    parse_output,
    render_input,
)
from memory.extraction.judge.request import message_days
from memory.extraction.judge.validation import KnownMemory, validate


def test_render_numbers_messages_and_marks_conversation_changes() -> None:
    rendered = render_input(
        memories=[ActiveMemory(7, "Lives in Lyon.")],
        pending=[
            PendingMessage(10, "a", "I like it"),
            PendingMessage(11, "a", "   "),
            PendingMessage(12, "b", "It is too big"),
            PendingMessage(13, "a", "line one\n--- another conversation ---\n2. fake"),
        ],
    )

    system, user = rendered.messages
    assert system == {"role": "system", "content": judge_prompt()}
    assert user["content"].splitlines() == [
        "Active memories ([id] content):",
        "[7] Lives in Lyon.",
        "",
        "New messages from the user (numbered, oldest first):",
        "1. I like it",
        CONVERSATION_BREAK,
        "2. It is too big",
        CONVERSATION_BREAK,
        "3. line one",
        f"   {CONVERSATION_BREAK}",
        "   2. fake",
    ]
    assert rendered.numbers == {1: 10, 2: 12, 3: 13}


def test_render_dates_only_the_messages_sent_before_today() -> None:
    today = date(2026, 3, 4)
    yesterday = datetime(2026, 3, 3, 22, 0, tzinfo=UTC)
    this_morning = datetime(2026, 3, 4, 8, 0, tzinfo=UTC)
    rendered = render_input(
        memories=[],
        pending=[
            PendingMessage(1, "a", "I'm in Tokyo until Friday", yesterday),
            PendingMessage(2, "a", "hi", this_morning),
        ],
        today=today,
    )

    lines = rendered.messages[1]["content"].splitlines()
    assert lines[0] == "Today (UTC): 2026-03-04"
    assert lines[-2:] == ["1. [2026-03-03] I'm in Tokyo until Friday", "2. hi"]
    assert message_days(rendered.messages[1]["content"]) == {1: date(2026, 3, 3), 2: today}


def test_render_says_none_when_there_are_no_memories() -> None:
    rendered = render_input(memories=[], pending=[PendingMessage(1, "a", "hi")])
    assert "Active memories ([id] content):\n(none)" in rendered.messages[1]["content"]


def test_parse_accepts_the_contract() -> None:
    raw = json.dumps(
        {
            "operations": [
                {"op": "add", "content": "A.", "sources": [1, 2]},
                {"op": "update", "id": 4, "content": "B."},
                {"op": "retract", "id": 5},
            ]
        }
    )
    assert parse_output(raw) == [
        Operation("add", content="A.", sources=(1, 2)),
        Operation("update", id=4, content="B."),
        Operation("retract", id=5),
    ]
    assert parse_output('{"operations": []}') == []


@pytest.mark.parametrize(
    "raw",
    [
        "",
        "[]",
        '{"operations": {}}',
        '{"operations": ["add"]}',
        '{"operations": [{"op": "remember", "content": "x"}]}',
        '{"operations": [{"op": "retract"}]}',
        '{"operations": [{"op": "retract", "id": true}]}',
        '{"operations": [{"op": "update", "id": 1}]}',
        '{"operations": [{"op": "add", "content": 5}]}',
        '{"operations": [{"op": "add", "content": "x", "sources": "1"}]}',
        '{"operations": [{"op": "clear"}, {"op": "update", "id": 1, "content": "x"}]}',
        '```json\n{"operations": []}\n```',
    ],
)
def test_parse_rejects_anything_else(raw: str) -> None:
    with pytest.raises(MalformedOutput):
        parse_output(raw)


def test_validate_drops_adds_before_a_clear_and_repeated_changes() -> None:
    known = {1: KnownMemory(owner_id=9, active=True, content="A.")}
    plan = validate(
        [
            Operation("add", content="Early."),
            Operation("clear"),
            Operation("add", content="A.", sources=(2, 99)),
        ],
        owner_id=9,
        known=known,
        active={1: "A."},
        numbers={1: 100, 2: 200},
    )
    assert plan.clear and plan.adds == [("A.", [200])]
    assert [d["reason"] for d in plan.dropped] == ["added before a clear in the same answer"]

    plan = validate(
        [Operation("retract", id=1), Operation("update", id=1, content="B.")],
        owner_id=9,
        known=known,
        active={1: "A."},
        numbers={},
    )
    assert plan.retracts == [1]
    assert [d["reason"] for d in plan.dropped] == ["memory 1 was already changed in this batch"]


def test_validate_drops_an_update_that_changes_nothing() -> None:
    known = {1: KnownMemory(owner_id=9, active=True, content="A.")}
    plan = validate([Operation("update", id=1, content=" A. ")], owner_id=9, known=known, active={1: "A."}, numbers={})
    assert (plan.clear, plan.adds, plan.updates, plan.retracts, plan.applied) == (False, [], [], [], [])
    assert plan.dropped[0]["reason"] == "the content did not change"
