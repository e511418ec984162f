"""A turn against models that misbehave the way real servers do: empty replies, replies that never end,
tools that are switched off. In-process fake model, real database."""

from __future__ import annotations

from typing import Any, cast

import pytest

from accounts.models import User
from chat.models import AgentState, Conversation, Message
from chat.turn.agent import Turn
from chat.turn.events import TurnEvent
from tests.chat.fake_tools import EchoTool
from tests.turns import run_to_end

pytestmark = pytest.mark.django_db(transaction=True)


async def run_turn(user: User, conversation: Conversation, content: str = "Hello") -> TurnEvent:
    turn = await Turn.begin(user=user, conversation=conversation, content=content)
    return await run_to_end(turn)


async def test_an_empty_reply_is_an_error_not_a_complete_message(
    fake_model: Any, user: User, conversation: Conversation
) -> None:
    fake_model.reply("")
    event = await run_turn(user, conversation)

    assert event.type == "error" and "empty reply" in event.text
    message = cast(Message, event.assistant_message)
    assert message.status == Message.Status.ERROR and message.error == event.text
    state = await AgentState.objects.aget(conversation=conversation)
    assert state.context == [{"role": "user", "content": "Hello"}]  # the next turn (or Retry) starts clean


async def test_every_step_is_bounded_by_the_replys_room_in_the_budget(
    fake_model: Any, user: User, conversation: Conversation, settings: Any
) -> None:
    settings.CHAT_CONTEXT_TOKENS, settings.CHAT_REPLY_TOKENS = 6000, 4000
    await run_turn(user, conversation)
    assert fake_model.requests[0]["max_tokens"] == 3000  # at most half the window


async def test_a_reply_of_only_whitespace_is_empty_too(fake_model: Any, user: User, conversation: Conversation) -> None:
    fake_model.reply(" ", "\n")
    event = await run_turn(user, conversation)
    assert event.type == "error"


async def test_a_reply_that_never_ends_stops_at_the_turn_time_limit_keeping_its_text(
    fake_model: Any, user: User, conversation: Conversation, settings: Any
) -> None:
    settings.CHAT_TURN_TIMEOUT = 0.5
    fake_model.reply("First part. ", *["more "] * 100, delay=0.05)
    event = await run_turn(user, conversation)

    assert event.type == "error" and "time limit (0.5 s)" in event.text
    message = cast(Message, event.assistant_message)
    assert message.status == Message.Status.ERROR and message.content.startswith("First part.")
    assert (await Conversation.objects.aget(pk=conversation.pk)).lock_token is None


async def test_the_time_limit_covers_every_step_of_the_turn(
    fake_model: Any, user: User, conversation: Conversation, settings: Any, register_tool: Any
) -> None:
    settings.CHAT_TURN_TIMEOUT = 0.6
    register_tool(EchoTool())
    fake_model.call_tool("lookup", text="Checking.").delay = 0.4  # each step alone fits in the limit
    fake_model.reply("Slow ", "answer ", "after ", "tool", delay=0.1)
    event = await run_turn(user, conversation)
    assert event.type == "error" and "time limit" in event.text


async def test_chat_tools_off_offers_no_tools(
    fake_model: Any, user: User, conversation: Conversation, settings: Any, register_tool: Any
) -> None:
    settings.CHAT_TOOLS = "off"
    register_tool(EchoTool())
    event = await run_turn(user, conversation)
    assert event.type == "done"
    assert fake_model.requests[0]["tools"] is None


async def test_a_call_to_an_unknown_tool_gets_a_clear_tool_error_and_the_turn_completes(
    fake_model: Any, user: User, conversation: Conversation, register_tool: Any
) -> None:
    register_tool(EchoTool())
    fake_model.call_tool("flush_memoryflush_memory")
    fake_model.reply("Sorry, that did not work.")
    event = await run_turn(user, conversation)
    assert event.type == "done"
    tool_result = fake_model.requests[1]["messages"][-1]
    assert tool_result["role"] == "tool" and "no tool named 'flush_memoryflush_memory'" in tool_result["content"]
