from __future__ import annotations

import pytest

from imports.formats import Unreadable, chatgpt, claude
from tests.imports import exports


def test_chatgpt_keeps_exactly_the_branch_current_node_names_in_order_with_times() -> None:
    chat = chatgpt.conversation(exports.gpt_branched())

    assert [(t.role, t.content) for t in chat.turns] == [
        ("user", "Which phone is good for one hand?"),
        ("assistant", "Small phones are easier one-handed."),
        ("user", "[image]\nLike this one?"),
        ("assistant", "Yes, that one is small."),
    ]
    assert [t.created_at.timestamp() for t in chat.turns if t.created_at] == [
        exports.T0 + 10,
        exports.T0 + 30,
        exports.T0 + 50,
        exports.T0 + 60,
    ]
    assert chat.title == "Picking a phone"
    assert chat.source_id == "c-phone"
    assert chat.project_key == ""


def test_chatgpt_leaves_out_hidden_context_tool_traffic_reasoning_and_other_branches() -> None:
    chat = chatgpt.conversation(exports.gpt_branched())

    text = "\n".join(t.content for t in chat.turns)
    for absent in ("I am a teacher", "regenerated", "edited away", "search(", "results", "private"):
        assert absent not in text
    assert chat.dropped == {"hidden": 2, "tool": 2, "reasoning": 1, "branches": 2}


def test_chatgpt_chinese_text_stays_intact() -> None:
    chat = chatgpt.conversation(exports.gpt_chinese())

    assert chat.title == "选手机"
    assert chat.turns[0].content == "我一直喜欢小屏手机，单手用起来方便。"


def test_chatgpt_project_chat_carries_its_template_and_a_custom_gpt_does_not() -> None:
    project = exports.gpt_project_chat("p1", "g-p-abc", "hello")
    gpt = {**exports.gpt_project_chat("p2", "g-xyz", "hello"), "gizmo_type": "gpt"}

    assert chatgpt.conversation(project).project_key == "g-p-abc"
    assert chatgpt.conversation(gpt).project_key == ""


def test_chatgpt_tree_with_a_cycle_is_unreadable() -> None:
    with pytest.raises(Unreadable, match="cycle"):
        chatgpt.conversation(exports.gpt_cycle())


def test_chatgpt_tolerates_missing_fields_and_unknown_content() -> None:
    raw = exports.gpt_conversation(
        "c-odd",
        None,  # type: ignore[arg-type]
        [
            ("root", None, None),
            ("u1", "root", {"author": {"role": "user"}, "content": {"content_type": "text", "parts": ["hi", None]}}),
            ("a1", "u1", {"author": {"role": "assistant"}, "content": {"content_type": "hologram"}}),
        ],
        current="missing-node",
    )
    chat = chatgpt.conversation(raw)

    assert [t.content for t in chat.turns] == ["hi", "[hologram]"]
    assert chat.title == ""


def test_claude_reads_text_blocks_and_attachments_and_drops_tool_blocks_and_thinking() -> None:
    conversations, _projects = exports.claude_export()
    chat = claude.conversation(conversations[0])

    assert [(t.role, t.content) for t in chat.turns] == [
        ("user", "Help me outline chapter two of my thesis on river ecology.\n\n[attachment: notes.txt]"),
        ("assistant", "Here is an outline: 1. Habitats 2. Flow."),
    ]
    assert chat.project_key == "proj-thesis"
    assert chat.dropped == {"tool": 2, "reasoning": 1}


def test_claude_falls_back_to_the_text_field_without_content_blocks() -> None:
    conversations, _projects = exports.claude_export()

    assert claude.conversation(conversations[1]).turns[0].content == "I drink my coffee black."


def test_claude_follows_parent_links_to_the_last_message() -> None:
    messages = [
        {**exports.claude_message("a", "human", [exports.claude_text("first")], at="2024-06-01T09:00:00Z")},
        {
            **exports.claude_message("b", "assistant", [exports.claude_text("old reply")], at="2024-06-01T09:00:01Z"),
            "parent_message_uuid": "a",
        },
        {
            **exports.claude_message("c", "assistant", [exports.claude_text("new reply")], at="2024-06-01T09:00:02Z"),
            "parent_message_uuid": "a",
        },
    ]
    chat = claude.conversation(exports.claude_conversation("x", "Branches", messages))

    assert [t.content for t in chat.turns] == ["first", "new reply"]
