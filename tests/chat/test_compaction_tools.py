"""Background compaction counts what a request really carries: the tool schemas only when tools are
sent, so with CHAT_TOOLS=off a small window is not summarized before the conversation reaches the point."""

from __future__ import annotations

from typing import Any

import pytest

from chat import extensions
from chat.llm import tokens
from chat.models import AgentState
from chat.services import conversation_create
from chat.turn import compaction
from chat.turn.context_budget import budget_for
from chat.turn.model_input import system_prompt

pytestmark = [pytest.mark.django_db, pytest.mark.needs_memory]  # the schemas are the memory app's tools


def without_tools() -> int:
    """A request's size besides the conversation when it carries no tools."""
    return tokens.estimate_request([{"role": "system", "content": system_prompt()}])


def grow_to_just_below_the_point(state: AgentState) -> None:
    """Short turns until one more would pass CHAT_COMPACT_AT, counted as a request without tools."""
    budget = budget_for(state)
    turn = [{"role": "user", "content": "Which small phone?"}, {"role": "assistant", "content": "The lighter one."}]
    while True:
        longer = [*state.context, *turn]
        if tokens.scaled(tokens.estimate_messages(longer) + without_tools(), budget.ratio) > budget.compact_at:
            break
        state.context = longer
    state.version += 1
    state.save()


def test_with_tools_off_a_2k_window_is_not_summarized_before_the_conversation_reaches_the_point(
    user: Any, settings: Any, django_capture_on_commit_callbacks: Any
) -> None:
    settings.CHAT_CONTEXT_TOKENS, settings.CHAT_TOOLS = 2048, "off"
    conversation = conversation_create(user=user)
    state = AgentState.objects.get(conversation=conversation)
    grow_to_just_below_the_point(state)
    queued: list[Any] = []

    assert not compaction.needs_compaction(state)
    assert not compaction.schedule_if_needed(conversation_id=conversation.pk, enqueue=queued.append)
    # Counted with the schemas no request carries, the same conversation was summarized already.
    settings.CHAT_TOOLS = "auto"
    assert tokens.estimate_tools(extensions.tool_schemas()) > 100
    assert compaction.needs_compaction(state)

    settings.CHAT_TOOLS = "off"
    state.context = [*state.context, {"role": "user", "content": "And the battery? " * 20}]
    state.version += 1
    state.save()
    with django_capture_on_commit_callbacks(execute=True):
        assert compaction.schedule_if_needed(conversation_id=conversation.pk, enqueue=queued.append)
    assert queued == [conversation.pk]
