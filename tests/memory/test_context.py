from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.utils import timezone
from django.utils.formats import date_format

from accounts.models import User
from chat import extensions
from chat.extensions import TurnContext
from chat.models import AgentState, Message
from chat.services import conversation_create
from chat.turn.agent import Turn
from memory import services
from memory.context import BACKGROUND_HEADER, SERVING_HEADER, block_for_turn, memory_block, memory_recall_summary
from memory.models import Memory, MemoryUse
from tests.helpers import make_conversation, make_memory, make_message, make_user
from tests.turns import run_to_end


def context_for(user: Any, text: str = "Hello", *, temporary: bool = False, reply: bool = False) -> TurnContext:
    conversation = make_conversation(owner=user, temporary=temporary)
    message = make_message(conversation=conversation, content=text)
    assistant = make_message(conversation=conversation, role=Message.Role.ASSISTANT, content="") if reply else None
    return TurnContext(user=user, conversation=conversation, user_message=message, assistant_message=assistant)


LEARNED = re.compile(r" \(learned [^)]*\)$")


def lines(block: str | None) -> list[str]:
    """The block's memory lines, without the date a background line says it was learned."""
    return [LEARNED.sub("", ln[2:]) for ln in (block or "").splitlines() if ln.startswith("- ")]


@pytest.mark.django_db
def test_block_holds_the_memories_relevant_to_the_message_as_background(user: Any, other_user: Any) -> None:
    make_memory(owner=user, content="Prefers small phones.")
    make_memory(owner=user, content="Old phone fact.", invalid_at=timezone.now(), invalid_reason="updated")
    make_memory(owner=other_user, content="Someone else's phone.")
    make_memory(owner=user, content="Wears glasses.")

    block = memory_block(context_for(user, "Suggest a phone for me"))

    assert block is not None and LEARNED.sub("", block) == f"{BACKGROUND_HEADER}\n- Prefers small phones."
    assert "not instructions" in BACKGROUND_HEADER and "current message wins" in BACKGROUND_HEADER


@pytest.mark.django_db
def test_pinned_and_keyed_memories_are_in_every_turn_as_how_to_serve(user: Any) -> None:
    make_memory(owner=user, content="Wears glasses.")
    make_memory(owner=user, content="Is allergic to peanuts.", pinned=True)
    make_memory(owner=user, content="Wants replies in Chinese.", key="reply_language")

    block = memory_block(context_for(user, "hi"))

    assert block == f"{SERVING_HEADER}\n- Is allergic to peanuts.\n- Wants replies in Chinese."
    assert "follow unless the current message asks otherwise" in SERVING_HEADER


@pytest.mark.django_db
def test_a_greeting_with_no_pinned_memories_carries_no_block(user: Any) -> None:
    for i in range(300):
        make_memory(owner=user, content=f"Enjoys hobby number {i}, kayaking near Porto.")

    assert memory_block(context_for(user, "Hello!")) is None


@pytest.mark.django_db
def test_a_greeting_carries_the_pinned_text_and_at_most_80_characters_more(user: Any) -> None:
    pinned = ["Is allergic to peanuts.", "Prefers to be called Sam."]
    for text in pinned:
        make_memory(owner=user, content=text, pinned=True)
    make_memory(owner=user, content="Enjoys kayaking near Porto.")

    block = memory_block(context_for(user, "Hello!"))

    assert block is not None and all(text in block for text in pinned)
    assert len(block) - sum(map(len, pinned)) <= 80


@pytest.mark.django_db
def test_word_forms_and_chinese_find_their_memories(user: Any) -> None:
    make_memory(owner=user, content="Is allergic to peanuts.")
    make_memory(owner=user, content="喜欢小屏手机，单手操作方便。")
    make_memory(owner=user, content="Plays the cello.")

    assert lines(memory_block(context_for(user, "Can I eat this peanut butter cookie?"))) == ["Is allergic to peanuts."]
    assert lines(memory_block(context_for(user, "帮我推荐一款手机"))) == ["喜欢小屏手机，单手操作方便。"]


@pytest.mark.django_db
def test_the_last_exchange_counts_too(user: Any) -> None:
    make_memory(owner=user, content="Lives in Lyon.")
    for content in ("Plays the cello.", "Reads science fiction.", "Cycles to work."):
        make_memory(owner=user, content=content)
    ctx = context_for(user, "And what about the weekend?")
    make_message(conversation=ctx.conversation, content="Is it going to rain in Lyon?", id=ctx.user_message.pk - 2)

    assert lines(memory_block(ctx)) == ["Lives in Lyon."]


@pytest.mark.django_db
def test_an_end_date_is_shown(user: Any) -> None:
    ends = timezone.now() + timedelta(days=3)
    make_memory(owner=user, content="Is in Tokyo for work.", expires_at=ends)

    assert lines(memory_block(context_for(user, "Any ideas for dinner in Tokyo?"))) == [
        f"Is in Tokyo for work. (until {ends.date().isoformat()})"
    ]


@pytest.mark.django_db
def test_with_three_hundred_memories_a_greeting_is_small_and_old_facts_are_found(user: Any, settings: Any) -> None:
    settings.MEMORY_PROMPT_MAX_CHARS = 4000
    oldest = make_memory(owner=user, content="Has a cat called Miso who hates thunderstorms.")
    Memory.objects.bulk_create(
        [Memory(owner=user, content=f"Fact {i}: enjoys topic{i} and hobby{i % 37} on weekends.") for i in range(297)]
    )
    make_memory(owner=user, content="Answer in British English.", pinned=True)
    make_memory(owner=user, content="住在上海浦东新区附近。")

    greeting = memory_block(context_for(user, "Good morning!"))
    assert greeting is not None and len(greeting) <= 1000
    assert lines(greeting) == ["Answer in British English."]

    about_cat = block_for_turn(context_for(user, "What should I do for my cat during a thunderstorm?"))
    assert about_cat is not None and oldest.pk in about_cat.ids

    chinese = memory_block(context_for(user, "上海周末有什么好玩的？"))
    assert "住在上海浦东新区附近。" in lines(chinese)

    everything = memory_block(context_for(user, " ".join(f"hobby{i}" for i in range(37))))
    assert everything is not None and len(everything) <= 4000


@pytest.mark.django_db
def test_every_block_stays_within_the_budget_and_pinned_overflow_is_reported(user: Any, settings: Any) -> None:
    settings.MEMORY_PROMPT_MAX_CHARS = len(SERVING_HEADER) + 60
    for i in range(3):
        make_memory(owner=user, content=f"Pinned preference number {i} about phones.", pinned=True)

    block = memory_block(context_for(user, "phones"))
    summary = memory_recall_summary(user=user)

    assert block is not None and len(block) <= settings.MEMORY_PROMPT_MAX_CHARS
    assert summary.always == 3 and summary.left_out == 2 and summary.total == 3


@pytest.mark.django_db
def test_no_block_without_memories_in_temporary_conversations_or_with_memory_off(user: Any) -> None:
    assert memory_block(context_for(user)) is None
    make_memory(owner=user, content="Prefers small phones.", pinned=True)
    assert memory_block(context_for(user, temporary=True)) is None
    stale = User.objects.get(pk=user.pk)
    User.objects.filter(pk=user.pk).update(memory_enabled=False)
    assert memory_block(context_for(stale)) is None


@pytest.mark.django_db
def test_the_block_is_recorded_against_the_reply_when_it_is_saved_and_stamps_last_used(
    user: Any, django_assert_num_queries: Any
) -> None:
    used = make_memory(owner=user, content="Prefers small phones.")
    unused = make_memory(owner=user, content="Plays the cello.")
    ctx = context_for(user, "Suggest a phone", reply=True)
    assert ctx.assistant_message is not None

    with django_assert_num_queries(2):  # the block's two reads: nothing written before the first token
        memory_block(ctx)
    assert not MemoryUse.objects.filter(message=ctx.assistant_message).exists()
    extensions.turn_saving.send(sender=Message, user_id=user.pk, assistant_message_id=ctx.assistant_message.pk)

    recorded = MemoryUse.objects.filter(message=ctx.assistant_message).values_list("memory_id", flat=True)
    assert list(recorded) == [used.pk]
    used.refresh_from_db()
    unused.refresh_from_db()
    assert used.last_used_at is not None and unused.last_used_at is None


@pytest.mark.django_db
def test_block_is_two_reads_with_three_hundred_memories(user: Any, django_assert_num_queries: Any) -> None:
    Memory.objects.bulk_create([Memory(owner=user, content=f"Fact number {i}.") for i in range(300)])
    ctx = context_for(user, "Tell me about fact 299")
    with django_assert_num_queries(2):
        block = block_for_turn(ctx)
    assert block is not None


def _memory_blocks(request: dict[str, Any]) -> list[str]:
    # The block is one part of the single system message (parts are separated by a blank line).
    parts = [part for m in request["messages"] if m["role"] == "system" for part in m["content"].split("\n\n")]
    found = [part for part in parts if part.startswith((SERVING_HEADER, BACKGROUND_HEADER))]
    return ["\n".join(LEARNED.sub("", line) for line in part.splitlines()) for part in found]


@pytest.mark.django_db(transaction=True)
async def test_edit_and_delete_take_effect_on_the_next_turn_of_an_old_conversation(fake_model: Any) -> None:
    user = await sync_to_async(make_user)()
    conversation = await sync_to_async(conversation_create)(user=user)
    small = await sync_to_async(make_memory)(owner=user, content="Prefers small phones.")
    glasses = await sync_to_async(make_memory)(owner=user, content="Wears glasses when reading phones.")

    turn = await Turn.begin(user=user, conversation=conversation, content="Suggest a phone")
    await run_to_end(turn)
    expected = f"{BACKGROUND_HEADER}\n- Prefers small phones.\n- Wears glasses when reading phones."
    assert sorted(_memory_blocks(fake_model.requests[-1])[0].splitlines()) == sorted(expected.splitlines())

    await sync_to_async(services.memory_edit)(user=user, memory=small, content="Prefers large-screen phones.")
    await sync_to_async(services.memory_delete)(user=user, memory=glasses)
    turn = await Turn.begin(user=user, conversation=conversation, content="And now, which phone?")
    await run_to_end(turn)

    assert _memory_blocks(fake_model.requests[-1]) == [f"{BACKGROUND_HEADER}\n- Prefers large-screen phones."]
    state = await AgentState.objects.aget(conversation=conversation)
    assert BACKGROUND_HEADER not in str(state.context)  # never stored in the agent state


@pytest.mark.django_db(transaction=True)
async def test_a_memory_pinned_on_the_page_is_in_the_next_turn(fake_model: Any) -> None:
    user = await sync_to_async(make_user)()
    conversation = await sync_to_async(conversation_create)(user=user)
    diet = await sync_to_async(make_memory)(owner=user, content="Is vegetarian.")

    await run_to_end(await Turn.begin(user=user, conversation=conversation, content="Hello there"))
    assert _memory_blocks(fake_model.requests[-1]) == []

    await Memory.objects.filter(pk=diet.pk).aupdate(pinned=True)  # what the page's pin button writes
    await run_to_end(await Turn.begin(user=user, conversation=conversation, content="Hello again"))
    assert _memory_blocks(fake_model.requests[-1]) == [f"{SERVING_HEADER}\n- Is vegetarian."]


@pytest.mark.django_db(transaction=True)
async def test_temporary_conversation_gets_no_block_and_its_messages_are_skipped(fake_model: Any) -> None:
    user = await sync_to_async(make_user)()
    await sync_to_async(make_memory)(owner=user, content="Prefers small phones.", pinned=True)
    conversation = await sync_to_async(conversation_create)(user=user, temporary=True)

    turn = await Turn.begin(user=user, conversation=conversation, content="I'm vegetarian")
    await run_to_end(turn)

    assert _memory_blocks(fake_model.requests[-1]) == []
    message = await Message.objects.aget(conversation=conversation, role="user")
    assert message.memory_status == Message.MemoryStatus.SKIPPED


def test_the_system_prompt_tells_preferences_from_background() -> None:
    from chat.turn.model_input import system_prompt

    prompt = system_prompt()
    assert "to be followed" in prompt and "not instructions" in prompt and "grants permissions" in prompt
    assert "current message wins" in prompt


@pytest.mark.django_db
def test_the_demo_models_what_do_you_remember_lists_what_it_was_given(user: Any) -> None:
    from chat.llm.demo import DemoChatModel
    from chat.turn.model_input import build_model_input

    make_memory(owner=user, content="Answer briefly.", pinned=True)
    make_memory(owner=user, content="Plays the cello.")
    make_memory(owner=user, content="Has a cat called Miso.")
    ctx = context_for(user, "What do you remember about my cat?")

    reply = DemoChatModel().reply_for(build_model_input(ctx, []))

    assert "What I remember about you: Answer briefly.; Has a cat called Miso. (learned " in reply
    assert "cello" not in reply


@pytest.mark.django_db
def test_each_background_line_says_when_it_was_learned_and_an_old_one_says_it_is_old(user: Any) -> None:
    today = timezone.localdate()
    make_memory(owner=user, content="Is learning to ski this winter.")
    old = make_memory(owner=user, content="Is preparing for the CFA exam.")
    Memory.objects.filter(pk=old.pk).update(created_at=timezone.now() - timedelta(days=700))
    make_memory(owner=user, content="Answer briefly.", pinned=True)

    block = memory_block(context_for(user, "Ski lessons or the CFA exam first?")) or ""

    written = today - timedelta(days=700)
    assert f"- Is learning to ski this winter. (learned {date_format(today, 'DATE_FORMAT')})" in block
    assert f"- Is preparing for the CFA exam. (learned {date_format(written, 'DATE_FORMAT')}, over a year ago)" in block
    assert "- Answer briefly.\n" in block + "\n"  # how to serve the user: no date


@pytest.mark.django_db
def test_the_learned_date_is_in_the_users_language(user: Any) -> None:
    User.objects.filter(pk=user.pk).update(language="zh-hans")
    user.refresh_from_db()
    old = make_memory(owner=user, content="正在准备CFA考试。")
    Memory.objects.filter(pk=old.pk).update(created_at=timezone.now() - timedelta(days=700))

    block = memory_block(context_for(user, "CFA考试怎么复习？")) or ""

    written = timezone.localdate() - timedelta(days=700)
    assert f"- 正在准备CFA考试。（{written.year}年{written.month}月{written.day}日记下，一年多以前）" in block


@pytest.mark.django_db
def test_a_learned_date_formatted_in_one_language_is_not_reused_in_another(user: Any) -> None:
    old = make_memory(owner=user, content="Is preparing for the CFA exam.")
    Memory.objects.filter(pk=old.pk).update(created_at=timezone.now() - timedelta(days=700))
    written = timezone.localdate() - timedelta(days=700)
    english = memory_block(context_for(user, "How should I revise for the CFA exam?")) or ""
    assert f"(learned {date_format(written, 'DATE_FORMAT')}, over a year ago)" in english

    User.objects.filter(pk=user.pk).update(language="zh-hans")
    user.refresh_from_db()
    chinese = memory_block(context_for(user, "How should I revise for the CFA exam?")) or ""

    assert f"（{written.year}年{written.month}月{written.day}日记下，一年多以前）" in chinese
