"""Long conversations against a provider with a context window (tests/fake_openai.py): compaction keeps
every turn working, no request exceeds the window, and the display log keeps every word."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import sync_to_async

from accounts.models import User
from chat.models import AgentState, Conversation, Message
from chat.turn import compaction, cut
from chat.turn.agent import Turn
from chat.turn.events import TurnEvent
from tests.fake_openai import FakeOpenAIServer, FakeResponse, summary_request
from tests.turns import run_to_end

pytestmark = pytest.mark.django_db(transaction=True)

REPLY = "Here is a considered answer about phones, cameras, batteries and prices, " * 3


@pytest.fixture
def provider(fake_openai: FakeOpenAIServer) -> FakeOpenAIServer:
    """The fake provider answering a reply of ~40 words to chat requests and a short summary otherwise."""

    def respond(body: dict[str, Any]) -> FakeResponse:
        if not summary_request(body):
            return FakeResponse(REPLY)
        return FakeResponse("Summary: the user compares two small phones; budget 600 euros.")

    fake_openai.responder = respond
    return fake_openai


def said(i: int) -> str:
    return f"Message {i}: I am still comparing the two small phones, what about the battery and the price? " * 2


async def turn(user: User, conversation: Conversation, content: str) -> TurnEvent:
    started = await Turn.begin(user=user, conversation=conversation, content=content)
    return await run_to_end(started)


async def display(conversation: Conversation) -> list[tuple[str, str]]:
    return [(m.role, m.content) async for m in Message.objects.filter(conversation=conversation).order_by("id")]


async def state_of(conversation: Conversation) -> AgentState:
    return await AgentState.objects.aget(conversation=conversation)


async def test_with_the_window_set_a_long_conversation_never_sends_a_request_above_it(
    provider: FakeOpenAIServer, settings: Any, user: User, conversation: Conversation
) -> None:
    settings.CHAT_CONTEXT_TOKENS, settings.CHAT_REPLY_TOKENS = 1500, 300
    provider.context_window = 1500
    for i in range(25):
        event = await turn(user, conversation, said(i))
        assert event.type == "done", event.text
    assert provider.refused == 0
    assert max(provider.prompt_sizes) <= 1500
    state = await state_of(conversation)
    assert state.compactions >= 1 and cut.is_summary(state.context[0])
    log = await display(conversation)
    assert [c for r, c in log if r == "user"] == [said(i) for i in range(25)]  # every word, in order


async def test_a_refusal_for_length_compacts_and_retries_the_same_turn_once(
    provider: FakeOpenAIServer, settings: Any, user: User, conversation: Conversation
) -> None:
    settings.CHAT_REPLY_TOKENS = 300  # the reply's room, which a request's max_tokens may claim
    for i in range(12):
        assert (await turn(user, conversation, said(i))).type == "done"
    before = await display(conversation)
    provider.context_window = 1100  # the provider's window is smaller than CHAT_CONTEXT_TOKENS says
    requests = len(provider.requests)
    event = await turn(user, conversation, "And which one would you pick?")
    assert event.type == "done" and event.assistant_message is not None
    assert event.assistant_message.content == REPLY.strip()
    chat_requests = [r for r in provider.requests[requests:] if not summary_request(r)]
    assert len(chat_requests) == 2  # refused once, retried once
    assert chat_requests[1]["messages"][-1] == {"role": "user", "content": "And which one would you pick?"}
    state = await state_of(conversation)
    assert state.context_window == 1100  # learned from the refusal's text
    assert state.compactions == 1
    after = await display(conversation)
    assert after[: len(before)] == before and len(after) == len(before) + 2
    # The next turn fits from the start.
    refused = provider.refused
    assert (await turn(user, conversation, "Thanks.")).type == "done"
    assert provider.refused == refused


async def test_an_empty_stream_on_a_large_input_is_treated_as_a_refusal_for_length(
    provider: FakeOpenAIServer, settings: Any, user: User, conversation: Conversation
) -> None:
    settings.CHAT_CONTEXT_TOKENS, settings.CHAT_REPLY_TOKENS = 2000, 200
    for i in range(10):
        assert (await turn(user, conversation, said(i))).type == "done"
    # llama.cpp's way: an empty stream for a prompt that alone fills the window (the next one would).
    provider.context_window, provider.overflow = provider.prompt_sizes[-1] * 3 // 4, "empty_stream"
    assert provider.prompt_sizes[-1] > 1800 // 2  # a large input for the budget, as the agent judges it
    found = len((await state_of(conversation)).context)
    event = await turn(user, conversation, "Which one?")
    assert event.type == "done", event.text
    state = await state_of(conversation)
    assert state.compactions >= 1 or len(state.context) < found  # summarized, or the oldest items dropped


async def test_the_sse_stream_announces_the_summary_as_a_tool_event(
    provider: FakeOpenAIServer, settings: Any, user: User, conversation: Conversation
) -> None:
    for i in range(10):
        await turn(user, conversation, said(i))
    settings.CHAT_CONTEXT_TOKENS, settings.CHAT_REPLY_TOKENS = 1200, 200
    started = await Turn.begin(user=user, conversation=conversation, content="Go on.")
    events = [event async for event in started.events()]
    kinds = [(e.type, e.tool) for e in events if e.type in ("tool", "done")]
    assert kinds == [("tool", compaction.SUMMARIZING), ("done", "")]


async def test_a_failing_summarizer_falls_back_to_dropping_the_oldest_messages(
    provider: FakeOpenAIServer, settings: Any, user: User, conversation: Conversation, caplog: Any
) -> None:
    def respond(body: dict[str, Any]) -> FakeResponse:
        return FakeResponse(status=500) if summary_request(body) else FakeResponse(REPLY)

    provider.responder = respond
    for i in range(10):
        await turn(user, conversation, said(i))
    # A window the state overflows, in which the oldest part that must go ends before a user message (sized
    # with the tools memory offers: flush_memory and search_history).
    settings.CHAT_CONTEXT_TOKENS, settings.CHAT_REPLY_TOKENS = 1250, 200
    event = await turn(user, conversation, "Go on.")
    assert event.type == "done", event.text
    state = await state_of(conversation)
    assert state.compactions == 0 and not cut.is_summary(state.context[0])
    assert state.context[0]["role"] == "user"  # cut before a user message
    assert "dropped the oldest part" in caplog.text
    assert len(await display(conversation)) == 22


async def test_a_maximal_message_in_a_small_window_gets_a_clear_error_and_never_a_lock(
    provider: FakeOpenAIServer, settings: Any, user: User, conversation: Conversation
) -> None:
    settings.CHAT_CONTEXT_TOKENS, settings.CHAT_REPLY_TOKENS = 2000, 500
    provider.context_window = 2000
    await turn(user, conversation, "Hello")
    before = await state_of(conversation)
    event = await turn(user, conversation, "x" * 8000)
    assert event.type == "error" and "too long" in event.text
    assert provider.refused == 0  # refused here, not sent
    conv = await Conversation.objects.aget(pk=conversation.pk)
    assert conv.lock_token is None
    after = await state_of(conversation)
    assert after.context == before.context  # the failed turn left the state as it found it
    log = await display(conversation)
    assert log[-2] == ("user", "x" * 8000)  # the display log keeps it
    assert (await turn(user, conversation, "Shorter then.")).type == "done"


async def test_a_maximal_message_fits_a_larger_window(
    provider: FakeOpenAIServer, settings: Any, user: User, conversation: Conversation
) -> None:
    settings.CHAT_CONTEXT_TOKENS, settings.CHAT_REPLY_TOKENS = 4000, 500
    provider.context_window = 4000
    for i in range(6):
        await turn(user, conversation, said(i))
    event = await turn(user, conversation, "word " * 1600)
    assert event.type == "done", event.text
    assert provider.refused == 0


async def test_a_second_refusal_fails_the_turn_without_growing_the_state(
    provider: FakeOpenAIServer, settings: Any, user: User, conversation: Conversation
) -> None:
    for i in range(8):
        await turn(user, conversation, said(i))
    found = await state_of(conversation)
    refusal = {"error": {"message": "context length exceeded", "code": "context_length_exceeded"}}
    provider.queue(FakeResponse(status=400, error_body=refusal), FakeResponse(status=400, error_body=refusal))
    event = await turn(user, conversation, "Again?")
    assert event.type == "error"
    state = await state_of(conversation)
    assert len(str(state.context)) <= len(str(found.context))
    assert (await Conversation.objects.aget(pk=conversation.pk)).lock_token is None
    assert (await turn(user, conversation, "Once more.")).type == "done"  # not a permanent failure


async def test_provider_reported_prompt_sizes_calibrate_the_estimate(
    provider: FakeOpenAIServer, user: User, conversation: Conversation
) -> None:
    await turn(user, conversation, said(1))
    ratio = (await state_of(conversation)).token_ratio
    assert ratio is not None and 0.5 <= ratio < 1.0  # the fake counts fewer tokens than our estimate


@sync_to_async
def _compact_in_background(conversation: Conversation) -> str:
    return compaction.compact_in_background(conversation_id=conversation.pk)


# --- in the background ---


@pytest.fixture
def queued(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, ...]]:
    """Compaction tasks sent to the broker (captured, not run)."""
    from chat.tasks import compact_conversation_task

    sent: list[tuple[Any, ...]] = []
    monkeypatch.setattr(compact_conversation_task, "apply_async", lambda args, **kwargs: sent.append(args))
    return sent


async def test_a_turn_above_the_threshold_queues_one_background_compaction(
    provider: FakeOpenAIServer, settings: Any, user: User, conversation: Conversation, queued: list[Any]
) -> None:
    settings.CHAT_CONTEXT_TOKENS, settings.CHAT_REPLY_TOKENS = 6000, 500
    for i in range(6):
        await turn(user, conversation, said(i))
    assert queued == []  # below CHAT_COMPACT_AT
    settings.CHAT_COMPACT_AT = 0.1
    await turn(user, conversation, said(7))
    await turn(user, conversation, said(8))
    assert queued == [(str(conversation.pk),)]  # one, while it is pending
    assert (await state_of(conversation)).compacting_since is not None


@pytest.mark.needs_memory  # its token budget assumes the full app's request (flush_memory's schema)
async def test_background_compaction_applies_when_the_state_is_unchanged(
    provider: FakeOpenAIServer, settings: Any, user: User, conversation: Conversation, queued: list[Any]
) -> None:
    for i in range(8):
        await turn(user, conversation, said(i))
    before = await state_of(conversation)
    settings.CHAT_CONTEXT_TOKENS, settings.CHAT_REPLY_TOKENS = 1500, 200  # the state is now above 0.75
    assert await _compact_in_background(conversation) == "compacted"
    after = await state_of(conversation)
    assert after.version == before.version + 1 and after.compactions == 1
    assert cut.is_summary(after.context[0]) and after.compacting_since is None
    assert after.summarized_through_id is not None
    assert len(await display(conversation)) == 16  # the display log is untouched


@pytest.mark.needs_memory  # its token budget assumes the full app's request (flush_memory's schema)
async def test_background_compaction_never_applies_while_a_turn_holds_the_lock(
    provider: FakeOpenAIServer, settings: Any, user: User, conversation: Conversation, queued: list[Any]
) -> None:
    for i in range(8):
        await turn(user, conversation, said(i))
    settings.CHAT_CONTEXT_TOKENS, settings.CHAT_REPLY_TOKENS = 1500, 200  # the state is now above 0.75
    running = await Turn.begin(user=user, conversation=conversation, content="A turn in progress")
    assert await _compact_in_background(conversation) == "changed"
    assert (await state_of(conversation)).compactions == 0
    assert (await run_to_end(running)).type == "done"  # and the running turn saves normally
    assert (await state_of(conversation)).context[-2]["content"] == "A turn in progress"


@pytest.mark.needs_memory  # its token budget assumes the full app's request (flush_memory's schema)
async def test_background_compaction_keeps_the_old_state_when_the_summarizer_fails(
    provider: FakeOpenAIServer, settings: Any, user: User, conversation: Conversation, queued: list[Any]
) -> None:
    for i in range(8):
        await turn(user, conversation, said(i))
    before = await state_of(conversation)
    provider.responder = lambda body: FakeResponse(status=500) if summary_request(body) else FakeResponse(REPLY)
    settings.CHAT_CONTEXT_TOKENS, settings.CHAT_REPLY_TOKENS = 1500, 200  # the state is now above 0.75
    assert await _compact_in_background(conversation) == "failed"
    after = await state_of(conversation)
    assert (after.context, after.version, after.compacting_since) == (before.context, before.version, None)


async def test_background_compaction_is_not_needed_below_the_threshold(
    provider: FakeOpenAIServer, user: User, conversation: Conversation, queued: list[Any]
) -> None:
    await turn(user, conversation, said(1))
    assert await _compact_in_background(conversation) == "not_needed"
