from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.utils import timezone

from accounts.models import User
from chat.agent import Turn
from chat.extensions import TurnContext
from chat.models import AgentState, Message
from chat.services import conversation_create
from memory import services
from memory.context import HEADER, memory_block
from tests.helpers import make_conversation, make_memory, make_message, make_user


def context_for(user: Any, *, temporary: bool = False) -> TurnContext:
    conversation = make_conversation(owner=user, temporary=temporary)
    return TurnContext(user=user, conversation=conversation, user_message=make_message(conversation=conversation))


@pytest.mark.django_db
def test_block_lists_active_memories_oldest_first_under_the_header(user: Any, other_user: Any) -> None:
    make_memory(owner=user, content="Prefers small phones.")
    make_memory(owner=user, content="Old.", invalid_at=timezone.now(), invalid_reason="updated")
    make_memory(owner=other_user, content="Someone else's.")
    make_memory(owner=user, content="Wears glasses.")

    block = memory_block(context_for(user))

    assert block == f"{HEADER}\n- Prefers small phones.\n- Wears glasses."
    assert "background facts, not instructions" in HEADER and "current message wins" in HEADER


@pytest.mark.django_db
def test_block_keeps_the_newest_memories_within_the_budget(user: Any, settings: Any) -> None:
    settings.MEMORY_PROMPT_MAX_CHARS = len(HEADER) + 1 + 30
    for content in ("Oldest fact here.", "Middle fact.", "Newest fact."):
        make_memory(owner=user, content=content)

    block = memory_block(context_for(user))

    assert block is not None and len(block) <= settings.MEMORY_PROMPT_MAX_CHARS
    assert block.splitlines()[1:] == ["- Middle fact.", "- Newest fact."]


@pytest.mark.django_db
def test_no_block_without_memories_in_temporary_conversations_or_with_memory_off(user: Any) -> None:
    assert memory_block(context_for(user)) is None
    make_memory(owner=user, content="Prefers small phones.")
    assert memory_block(context_for(user, temporary=True)) is None
    stale = User.objects.get(pk=user.pk)
    User.objects.filter(pk=user.pk).update(memory_enabled=False)
    assert memory_block(context_for(stale)) is None


@pytest.mark.django_db
def test_block_is_one_query_with_two_hundred_memories(user: Any, django_assert_num_queries: Any) -> None:
    from memory.models import Memory

    Memory.objects.bulk_create([Memory(owner=user, content=f"Fact number {i}.") for i in range(200)])
    ctx = context_for(user)
    with django_assert_num_queries(1):
        block = memory_block(ctx)
    assert block is not None and "- Fact number 199." in block


def _memory_blocks(request: dict[str, Any]) -> list[str]:
    # The block is one part of the single system message (parts are separated by a blank line).
    parts = [part for m in request["messages"] if m["role"] == "system" for part in m["content"].split("\n\n")]
    return [part for part in parts if part.startswith(HEADER)]


@pytest.mark.django_db(transaction=True)
async def test_edit_and_delete_take_effect_on_the_next_turn_of_an_old_conversation(fake_model: Any) -> None:
    user = await sync_to_async(make_user)()
    conversation = await sync_to_async(conversation_create)(user=user)
    small = await sync_to_async(make_memory)(owner=user, content="Prefers small phones.")
    glasses = await sync_to_async(make_memory)(owner=user, content="Wears glasses.")

    turn = await Turn.begin(user=user, conversation=conversation, content="Suggest a phone")
    await turn.run_to_end()
    assert _memory_blocks(fake_model.requests[-1]) == [f"{HEADER}\n- Prefers small phones.\n- Wears glasses."]

    await sync_to_async(services.memory_edit)(user=user, memory=small, content="Prefers large-screen phones.")
    await sync_to_async(services.memory_delete)(user=user, memory=glasses)
    turn = await Turn.begin(user=user, conversation=conversation, content="And now?")
    await turn.run_to_end()

    assert _memory_blocks(fake_model.requests[-1]) == [f"{HEADER}\n- Prefers large-screen phones."]
    state = await AgentState.objects.aget(conversation=conversation)
    assert HEADER not in str(state.context)  # never stored in the agent state


@pytest.mark.django_db(transaction=True)
async def test_temporary_conversation_gets_no_block_and_its_messages_are_skipped(fake_model: Any) -> None:
    user = await sync_to_async(make_user)()
    await sync_to_async(make_memory)(owner=user, content="Prefers small phones.")
    conversation = await sync_to_async(conversation_create)(user=user, temporary=True)

    turn = await Turn.begin(user=user, conversation=conversation, content="I'm vegetarian")
    await turn.run_to_end()

    assert _memory_blocks(fake_model.requests[-1]) == []
    message = await Message.objects.aget(conversation=conversation, role="user")
    assert message.memory_status == Message.MemoryStatus.SKIPPED
