"""Every provider call is counted (SPEC §9 "Usage"): a chat turn, the memory block's share of it, the judge,
summaries and embeddings, as the provider reported them or estimated and marked so."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.db.models import Sum

from accounts.models import User
from chat.llm import get_chat_model, metering
from chat.models import Conversation, Message, Project
from chat.services import conversation_create
from chat.turn.agent import Turn
from chat.turn.events import TurnEvent
from tests.fake_openai import FakeOpenAIServer, FakeResponse, summary_request
from tests.turns import run_to_end
from usage.models import DailyUsage, ReplyMemoryTokens
from usage.services import usage_record

pytestmark = pytest.mark.django_db(transaction=True)

BLOCK = "What you know about the user: " + "they like quiet trains and green tea. " * 12


@sync_to_async
def sums(user: User, kind: str) -> dict[str, int]:
    rows = DailyUsage.objects.filter(user=user, kind=kind)
    totals = rows.aggregate(
        prompt=Sum("prompt_tokens"), completion=Sum("completion_tokens"), estimated=Sum("estimated_tokens")
    )
    return {k: int(v or 0) for k, v in totals.items()}


async def turn(user: User, conversation: Conversation, content: str = "Which train is quieter?") -> TurnEvent:
    started = await Turn.begin(user=user, conversation=conversation, content=content)
    return await run_to_end(started)


@pytest.fixture
def memory_block(register_provider: Any) -> None:
    """A memory block of known text, whatever the user remembers (the memory app's provider stands aside)."""
    register_provider("memory", lambda ctx: None if ctx.conversation.temporary else BLOCK)


async def test_a_turns_recorded_tokens_add_up_to_what_the_provider_reported(
    fake_openai: FakeOpenAIServer, memory_block: None, user: User, conversation: Conversation
) -> None:
    fake_openai.queue(FakeResponse("Both are quiet.", usage={"prompt_tokens": 900, "completion_tokens": 7}))

    assert (await turn(user, conversation)).type == "done"

    chat, block = await sums(user, "chat"), await sums(user, "memory_block")
    assert chat["prompt"] + block["prompt"] == 900
    assert chat["completion"] == 7 and block["completion"] == 0
    assert chat["estimated"] == 0  # the provider's own counts
    assert 50 < block["prompt"] < 900  # the block's share, measured when the input was built


async def test_the_memory_block_tokens_are_kept_for_the_reply(
    fake_openai: FakeOpenAIServer, memory_block: None, user: User, conversation: Conversation
) -> None:
    fake_openai.queue(FakeResponse("Both are quiet.", usage={"prompt_tokens": 900, "completion_tokens": 7}))
    event = await turn(user, conversation)

    assert event.assistant_message is not None
    kept = await ReplyMemoryTokens.objects.aget(message_id=event.assistant_message.pk)
    assert kept.tokens == (await sums(user, "memory_block"))["prompt"] > 0


async def test_a_temporary_chat_records_no_memory_block(
    fake_openai: FakeOpenAIServer, memory_block: None, user: User
) -> None:
    temporary = await sync_to_async(conversation_create)(user=user, temporary=True)
    fake_openai.queue(FakeResponse("Both are quiet.", usage={"prompt_tokens": 300, "completion_tokens": 4}))

    assert (await turn(user, temporary)).type == "done"

    assert (await sums(user, "memory_block"))["prompt"] == 0
    assert (await sums(user, "chat"))["prompt"] == 300


async def test_a_provider_without_usage_gives_estimated_counts_marked_so(
    fake_openai: FakeOpenAIServer, user: User, conversation: Conversation
) -> None:
    fake_openai.queue(FakeResponse("Both trains are quiet in the morning.", no_usage=True))

    assert (await turn(user, conversation)).type == "done"

    chat = await sums(user, "chat")
    assert chat["prompt"] > 0 and chat["completion"] > 0
    assert chat["estimated"] == chat["prompt"] + chat["completion"]


async def test_a_turn_in_a_project_is_counted_for_the_project(fake_openai: FakeOpenAIServer, user: User) -> None:
    project = await Project.objects.acreate(owner=user, name="Trains")
    conversation = await sync_to_async(conversation_create)(user=user, project=project)
    fake_openai.queue(FakeResponse("Quiet.", usage={"prompt_tokens": 50, "completion_tokens": 2}))

    await turn(user, conversation)

    keys = [row.project_id async for row in DailyUsage.objects.filter(user=user, kind="chat")]
    assert keys == [project.pk]


async def test_recording_happens_after_the_reply_is_saved(
    fake_openai: FakeOpenAIServer, user: User, conversation: Conversation
) -> None:
    """Nothing is written before the reply's end: at its first piece of text, no usage row exists yet."""
    fake_openai.queue(FakeResponse("One two three four.", usage={"prompt_tokens": 40, "completion_tokens": 4}))
    started = await Turn.begin(user=user, conversation=conversation, content="Count.")
    seen_at_first_delta: int | None = None
    async for event in started.events():
        if event.type == "delta" and seen_at_first_delta is None:
            seen_at_first_delta = await DailyUsage.objects.filter(user=user).acount()
    assert seen_at_first_delta == 0
    assert await DailyUsage.objects.filter(user=user, kind="chat").acount() == 1


def test_a_non_streamed_call_is_noted_with_the_providers_counts(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.queue(FakeResponse('{"operations": []}', usage={"prompt_tokens": 321, "completion_tokens": 12}))

    with metering.counting() as calls:
        get_chat_model().complete_json(
            messages=[{"role": "user", "content": "hi"}], model="judge-model", temperature=0, timeout=2
        )

    assert calls == [metering.Call("judge-model", 321, 12, False)]


def test_a_non_streamed_call_without_usage_is_estimated(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.queue(FakeResponse("A summary of the chat.", no_usage=True))

    with metering.counting() as calls:
        get_chat_model().complete_text(
            messages=[{"role": "user", "content": "Summarize this."}], model="sum-model", max_tokens=50, timeout=2
        )

    assert len(calls) == 1 and calls[0].estimated and calls[0].prompt_tokens > 0 and calls[0].completion_tokens > 0


@pytest.mark.needs_memory
def test_judge_calls_are_counted_as_the_provider_reported(fake_openai: FakeOpenAIServer, user: User) -> None:
    from tests.helpers import run, say

    conversation = conversation_create(user=user)
    said = say(conversation, "I take the 7:40 train every weekday.")
    fake_openai.queue(FakeResponse('{"operations": []}', usage={"prompt_tokens": 640, "completion_tokens": 9}))

    run(user, up_to=said, trigger="manual")

    row = DailyUsage.objects.get(user=user, kind="judge")
    assert (row.prompt_tokens, row.completion_tokens, row.calls, row.estimated_tokens) == (640, 9, 1, 0)
    assert Message.objects.get(pk=said.pk).memory_status == Message.MemoryStatus.PROCESSED


def test_calls_on_one_day_add_up_in_one_row(user: User) -> None:
    for prompt in (10, 20):
        usage_record(
            user_id=user.pk,
            project_id=None,
            model="m",
            kind="chat",
            prompt_tokens=prompt,
            completion_tokens=1,
            estimated=False,
        )
    usage_record(
        user_id=user.pk, project_id=None, model="m", kind="chat", prompt_tokens=5, completion_tokens=5, estimated=True
    )

    row = DailyUsage.objects.get(user=user)
    assert (row.calls, row.prompt_tokens, row.completion_tokens, row.estimated_tokens) == (3, 35, 7, 10)


def test_an_unknown_kind_is_refused(user: User) -> None:
    with pytest.raises(ValueError):
        usage_record(
            user_id=user.pk,
            project_id=None,
            model="m",
            kind="guess",
            prompt_tokens=1,
            completion_tokens=1,
            estimated=False,
        )


@pytest.mark.needs_memory  # the token budget assumes the full app's request (as tests/chat/test_compaction.py)
async def test_summaries_are_counted_for_the_conversations_owner(
    fake_openai: FakeOpenAIServer, settings: Any, user: User, conversation: Conversation, monkeypatch: Any
) -> None:
    from chat.tasks import compact_conversation_task
    from chat.turn import compaction

    monkeypatch.setattr(compact_conversation_task, "apply_async", lambda *args, **kwargs: None)

    def respond(body: dict[str, Any]) -> FakeResponse:
        if not summary_request(body):
            return FakeResponse("A considered answer about phones, cameras and batteries. " * 3)
        return FakeResponse("Summary: two phones.", usage={"prompt_tokens": 777, "completion_tokens": 33})

    fake_openai.responder = respond
    for i in range(8):
        await turn(user, conversation, f"Message {i}: still comparing the two small phones and their batteries. " * 2)
    settings.CHAT_CONTEXT_TOKENS, settings.CHAT_REPLY_TOKENS = 1500, 200

    assert await sync_to_async(compaction.compact_in_background)(conversation_id=conversation.pk) == "compacted"

    row = await DailyUsage.objects.aget(user=user, kind="summary")
    assert row.calls >= 1 and (row.prompt_tokens, row.completion_tokens) == (777 * row.calls, 33 * row.calls)


@pytest.mark.needs_memory
def test_consolidation_calls_are_counted_as_the_provider_reported(fake_openai: FakeOpenAIServer, user: User) -> None:
    import json

    from memory.consolidation import services as tidy
    from tests.helpers import make_memory

    rows = [make_memory(owner=user, content=text) for text in ("I like green tea", "I really like green tea")]
    answer = json.dumps({"proposals": [{"op": "merge", "ids": [m.pk for m in rows], "content": "Likes green tea"}]})
    fake_openai.queue(FakeResponse(answer, usage={"prompt_tokens": 410, "completion_tokens": 21}))

    done = tidy.consolidation_pass(user_id=user.pk)

    row = DailyUsage.objects.get(user=user, kind="consolidation")
    assert (row.prompt_tokens, row.completion_tokens, row.calls) == (410, 21, done.judge_calls)
