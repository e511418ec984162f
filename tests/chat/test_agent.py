"""The agent turn (SPEC §3) with an in-process fake model: state versus display, locks, slots, failures, tools."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any, cast

import pytest
from asgiref.sync import sync_to_async

from accounts.models import User
from chat import extensions
from chat.extensions import TurnContext
from chat.llm import ToolCall
from chat.models import AgentState, Conversation, Message
from chat.services import ConversationBusy, InvalidMessage, RunSlotsFull, conversation_create, conversation_delete
from chat.turn.agent import Turn
from chat.turn.events import TurnEvent
from tests.chat.fake_tools import EchoTool
from tests.factories import UserFactory
from tests.fakes import Step
from tests.turns import run_to_end

pytestmark = pytest.mark.django_db(transaction=True)


def make_user(**fields: Any) -> User:
    return cast(User, UserFactory(**fields))


def reply_of(event: TurnEvent) -> Message:
    assert event.assistant_message is not None
    return event.assistant_message


async def run_turn(user: User, conversation: Conversation, content: str = "Hello") -> TurnEvent:
    turn = await Turn.begin(user=user, conversation=conversation, content=content)
    return await run_to_end(turn)


async def collect(turn: Turn) -> list[TurnEvent]:
    return [event async for event in turn.events()]


async def messages_of(conversation: Conversation) -> list[Message]:
    return [m async for m in Message.objects.filter(conversation=conversation).order_by("created_at", "id")]


async def state_of(conversation: Conversation) -> AgentState:
    return await AgentState.objects.aget(conversation=conversation)


async def lock_of(conversation: Conversation) -> Any:
    return (await Conversation.objects.aget(pk=conversation.pk)).lock_token


# --- the happy path ---


async def test_turn_streams_start_deltas_done_and_saves_both_messages(
    fake_model: Any, user: User, conversation: Conversation
) -> None:
    fake_model.reply("Hi ", "there")
    turn = await Turn.begin(user=user, conversation=conversation, content="Hello")
    events = await collect(turn)
    assert [e.type for e in events] == ["start", "delta", "delta", "done"]
    assert "".join(e.text for e in events if e.type == "delta") == "Hi there"
    user_message, assistant = await messages_of(conversation)
    assert (user_message.role, user_message.content, user_message.memory_status) == ("user", "Hello", "pending")
    assert (assistant.role, assistant.content, assistant.status, assistant.memory_status) == (
        "assistant",
        "Hi there",
        "complete",
        "",
    )
    assert reply_of(events[-1]).pk == assistant.pk
    state = await state_of(conversation)
    assert state.context == [{"role": "user", "content": "Hello"}, {"role": "assistant", "content": "Hi there"}]
    assert state.version == 1
    assert await lock_of(conversation) is None


async def test_model_input_is_system_prompt_then_context_then_new_message(
    fake_model: Any, user: User, conversation: Conversation
) -> None:
    await run_turn(user, conversation, "Hello")
    messages = fake_model.requests[0]["messages"]
    assert messages[0]["role"] == "system" and "Memora" in messages[0]["content"]
    assert messages[-1] == {"role": "user", "content": "Hello"}


async def test_second_turn_sees_the_first(fake_model: Any, user: User, conversation: Conversation) -> None:
    fake_model.reply("I like small phones too.")
    await run_turn(user, conversation, "I like small phones.")
    await run_turn(user, conversation, "What did I say?")
    second = [m for m in fake_model.requests[1]["messages"] if m["role"] != "system"]
    assert second == [
        {"role": "user", "content": "I like small phones."},
        {"role": "assistant", "content": "I like small phones too."},
        {"role": "user", "content": "What did I say?"},
    ]
    assert (await state_of(conversation)).version == 2


async def test_first_message_titles_the_conversation_and_later_ones_do_not(
    fake_model: Any, user: User, conversation: Conversation
) -> None:
    await run_turn(user, conversation, "  Which   phone should I buy?  ")
    await run_turn(user, conversation, "Something else entirely")
    assert (await Conversation.objects.aget(pk=conversation.pk)).title == "Which phone should I buy?"


@pytest.mark.parametrize("temporary, memory_enabled", [(True, True), (False, False)])
async def test_user_message_is_skipped_for_memory_when_temporary_or_memory_is_off(
    fake_model: Any, temporary: bool, memory_enabled: bool
) -> None:
    user = await sync_to_async(make_user)(memory_enabled=memory_enabled)
    conversation = await sync_to_async(conversation_create)(user=user, temporary=temporary)
    await run_turn(user, conversation)
    user_message, _ = await messages_of(conversation)
    assert user_message.memory_status == "skipped"


# --- state is not display: tools ---


async def test_state_holds_the_tool_call_and_its_result_while_the_display_log_does_not(
    fake_model: Any, user: User, conversation: Conversation, register_tool: Any
) -> None:
    tool = register_tool(EchoTool())
    fake_model.call_tool("lookup", '{"q": "phones"}', call_id="call_7")
    fake_model.reply("Found it.")
    turn = await Turn.begin(user=user, conversation=conversation, content="Look it up")
    events = await collect(turn)

    assert [e.type for e in events] == ["start", "tool", "delta", "done"]
    assert tool.calls == [{"q": "phones"}]
    state = await state_of(conversation)
    assert state.context == [
        {"role": "user", "content": "Look it up"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "call_7", "type": "function", "function": {"name": "lookup", "arguments": '{"q": "phones"}'}}
            ],
        },
        {"role": "tool", "tool_call_id": "call_7", "content": "RESULT-42"},
        {"role": "assistant", "content": "Found it."},
    ]
    display = await messages_of(conversation)
    assert [(m.role, m.content) for m in display] == [("user", "Look it up"), ("assistant", "Found it.")]
    # The model's second step saw the tool result; the tools were offered in the model's format.
    assert fake_model.requests[1]["messages"][-1] == {"role": "tool", "tool_call_id": "call_7", "content": "RESULT-42"}
    assert {
        "type": "function",
        "function": {"name": "lookup", "description": "Look something up.", "parameters": tool.parameters},
    } in fake_model.requests[0]["tools"]


async def test_a_tool_unavailable_in_the_turn_is_neither_offered_nor_run(
    fake_model: Any, user: User, conversation: Conversation, register_tool: Any
) -> None:
    class Unavailable(EchoTool):
        def available(self, ctx: TurnContext) -> bool:
            return ctx.conversation.title != "Tools off"

    register_tool(EchoTool())
    hidden = register_tool(Unavailable(name="hidden"))
    await Conversation.objects.filter(pk=conversation.pk).aupdate(title="Tools off")
    conversation.title = "Tools off"
    fake_model.call_tool("hidden")  # a model calling it anyway gets an error, and nothing runs
    fake_model.reply("Done.")
    event = await run_turn(user, conversation)

    assert event.type == "done"
    offered = [t["function"]["name"] for t in fake_model.requests[0]["tools"]]
    assert "lookup" in offered and "hidden" not in offered
    assert hidden.calls == []
    assert "no tool named 'hidden'" in fake_model.requests[1]["messages"][-1]["content"]


async def test_without_an_available_tool_the_request_has_no_tools(
    fake_model: Any, user: User, conversation: Conversation, register_tool: Any
) -> None:
    class Never(EchoTool):
        def available(self, ctx: TurnContext) -> bool:
            return False

    extensions._tools.clear()  # restored by the register_tool fixture
    register_tool(Never())
    fake_model.reply("Hi.")
    await run_turn(user, conversation)
    assert fake_model.requests[0]["tools"] is None


async def test_text_written_before_and_after_a_tool_call_is_kept_apart(
    fake_model: Any, user: User, conversation: Conversation, register_tool: Any
) -> None:
    register_tool(EchoTool())
    fake_model.call_tool("lookup", text="Let me check.")
    fake_model.reply("Done.")
    event = await run_turn(user, conversation)
    assert reply_of(event).content == "Let me check.\n\nDone."


@pytest.mark.parametrize(
    "name, arguments, expected",
    [
        ("missing_tool", "{}", "no tool named"),
        ("lookup", "{not json", "not valid JSON"),
        ("lookup", "[1, 2]", "must be a JSON object"),
    ],
)
async def test_a_bad_tool_call_returns_an_error_to_the_model_and_the_turn_completes(
    fake_model: Any,
    user: User,
    conversation: Conversation,
    register_tool: Any,
    name: str,
    arguments: str,
    expected: str,
) -> None:
    tool = register_tool(EchoTool())
    fake_model.call_tool(name, arguments)
    fake_model.reply("Sorry.")
    event = await run_turn(user, conversation)
    assert event.type == "done"
    assert tool.calls == []
    result = fake_model.requests[1]["messages"][-1]
    assert result["role"] == "tool" and expected in result["content"]


async def test_a_failing_tool_does_not_break_the_turn(
    fake_model: Any, user: User, conversation: Conversation, register_tool: Any
) -> None:
    class Broken(EchoTool):
        def run(self, ctx: TurnContext, arguments: dict[str, Any]) -> str:
            raise RuntimeError("boom")

    register_tool(Broken(name="broken"))
    fake_model.call_tool("broken")
    fake_model.reply("It failed.")
    event = await run_turn(user, conversation)
    assert event.type == "done"
    assert "failed; nothing was done" in fake_model.requests[1]["messages"][-1]["content"]


async def test_tool_steps_are_bounded(
    fake_model: Any, user: User, conversation: Conversation, register_tool: Any, settings: Any
) -> None:
    settings.CHAT_MAX_TOOL_STEPS = 2
    tool = register_tool(EchoTool())
    for i in range(5):  # a model that would call tools forever
        fake_model.call_tool("lookup", call_id=f"call_{i}", text=f"Looking ({i}).")
    event = await run_turn(user, conversation)

    assert event.type == "done"
    assert len(tool.calls) == 2
    assert len(fake_model.requests) == 3
    assert [r["tools"] is None for r in fake_model.requests] == [False, False, True]
    state = await state_of(conversation)
    called = [c["id"] for m in state.context for c in m.get("tool_calls", [])]
    answered = [m["tool_call_id"] for m in state.context if m["role"] == "tool"]
    assert called == answered == ["call_0", "call_1"]  # the stray call on the last step was not run


# --- context providers ---


async def test_context_provider_blocks_reach_the_model_but_never_the_state(
    fake_model: Any, user: User, conversation: Conversation, register_provider: Any
) -> None:
    seen: list[TurnContext] = []

    def provider(ctx: TurnContext) -> str:
        seen.append(ctx)
        return "BACKGROUND-BLOCK: prefers small phones"

    register_provider("test-background", provider)
    await run_turn(user, conversation, "first")
    await run_turn(user, conversation, "second")

    for request in fake_model.requests:
        system = [m["content"] for m in request["messages"] if m["role"] == "system"]
        assert len(system) == 1 and request["messages"][0]["role"] == "system"
        assert system[0].endswith("\n\nBACKGROUND-BLOCK: prefers small phones")
    # Exactly one block per turn: the old one is not carried over in the context.
    assert sum("BACKGROUND-BLOCK" in json.dumps(m) for m in fake_model.requests[1]["messages"]) == 1
    assert "BACKGROUND-BLOCK" not in json.dumps((await state_of(conversation)).context)
    assert [c.user_message.content for c in seen] == ["first", "second"]
    assert seen[0].user.pk == user.pk and seen[0].conversation.pk == conversation.pk


async def test_the_step_after_a_tool_call_sees_the_blocks_as_the_tool_left_them(
    fake_model: Any, user: User, conversation: Conversation, register_provider: Any, register_tool: Any
) -> None:
    # A tool that changes what a provider shows (as flush_memory changes memories) must not leave
    # the rest of the turn answering from the old block.
    facts = ["Prefers small phones"]

    class UpdatingTool(EchoTool):
        def run(self, ctx: TurnContext, arguments: dict[str, Any]) -> str:
            facts[0] = "Prefers big screens"
            return "Updated."

    register_tool(UpdatingTool())
    register_provider("test-facts", lambda ctx: "FACTS: " + facts[0])
    fake_model.call_tool("lookup")
    fake_model.reply("Noted.")
    await run_turn(user, conversation, "I prefer big screens now")

    def system_blocks(request: dict[str, Any]) -> list[str]:
        (system,) = [m["content"] for m in request["messages"] if m["role"] == "system"]
        return str(system).split("\n\n")

    assert "FACTS: Prefers small phones" in system_blocks(fake_model.requests[0])
    assert "FACTS: Prefers big screens" in system_blocks(fake_model.requests[1])
    assert "FACTS: Prefers small phones" not in system_blocks(fake_model.requests[1])


async def test_a_provider_that_returns_nothing_or_fails_is_left_out(
    fake_model: Any, user: User, conversation: Conversation, register_provider: Any
) -> None:
    def broken(ctx: TurnContext) -> str:
        raise RuntimeError("provider down")

    register_provider("test-empty", lambda ctx: None)
    register_provider("test-broken", broken)
    event = await run_turn(user, conversation)
    assert event.type == "done"
    assert [m["role"] for m in fake_model.requests[0]["messages"]] == ["system", "user"]


# --- the lock and the run slots ---


async def test_a_concurrent_turn_in_the_same_conversation_is_refused_and_writes_nothing(
    fake_model: Any, user: User, conversation: Conversation
) -> None:
    first = await Turn.begin(user=user, conversation=conversation, content="first")
    with pytest.raises(ConversationBusy) as refused:
        await Turn.begin(user=user, conversation=conversation, content="second")
    assert refused.value.status == 409
    assert "Another reply" in str(refused.value)
    assert [m.content for m in await messages_of(conversation)] == ["first", ""]

    await run_to_end(first)
    assert await lock_of(conversation) is None
    assert (await run_turn(user, conversation, "third")).type == "done"


async def test_a_third_concurrent_turn_of_one_user_is_refused_by_the_run_slots(
    fake_model: Any, user: User, settings: Any
) -> None:
    assert settings.CHAT_USER_RUN_SLOTS == 2
    a, b, c = [await sync_to_async(conversation_create)(user=user) for _ in range(3)]
    turn_a = await Turn.begin(user=user, conversation=a, content="a")
    turn_b = await Turn.begin(user=user, conversation=b, content="b")
    with pytest.raises(RunSlotsFull) as refused:
        await Turn.begin(user=user, conversation=c, content="c")
    assert refused.value.status == 429
    assert await Message.objects.filter(conversation=c).acount() == 0
    assert await lock_of(c) is None  # the refused turn's lock was rolled back

    # Another user's turns do not count against this user's slots.
    other = await sync_to_async(make_user)()
    other_conversation = await sync_to_async(conversation_create)(user=other)
    assert (await run_turn(other, other_conversation)).type == "done"

    await run_to_end(turn_a)
    assert (await run_turn(user, c, "c")).type == "done"
    await run_to_end(turn_b)


async def test_an_expired_lock_neither_blocks_nor_takes_a_slot(
    fake_model: Any, user: User, conversation: Conversation, settings: Any
) -> None:
    settings.CHAT_USER_RUN_SLOTS = 1
    await Turn.begin(user=user, conversation=conversation, content="crashed")  # never run: its lock stays
    await Conversation.objects.filter(pk=conversation.pk).aupdate(lock_expires_at="2000-01-01T00:00:00Z")
    other = await sync_to_async(conversation_create)(user=user)
    assert (await run_turn(user, other)).type == "done"
    assert (await run_turn(user, conversation, "again")).type == "done"


@pytest.mark.parametrize("content", ["", "   \n\t ", "x" * 8001])
async def test_invalid_message_is_refused_and_writes_nothing(
    fake_model: Any, user: User, conversation: Conversation, content: str
) -> None:
    with pytest.raises(InvalidMessage):
        await Turn.begin(user=user, conversation=conversation, content=content)
    assert await Message.objects.acount() == 0
    assert await lock_of(conversation) is None
    assert fake_model.requests == []


async def test_a_message_of_exactly_the_limit_is_accepted(
    fake_model: Any, user: User, conversation: Conversation
) -> None:
    assert (await run_turn(user, conversation, "x" * 8000)).type == "done"


# --- failures ---


async def test_provider_failure_keeps_the_user_message_and_saves_the_partial_reply(
    fake_model: Any, user: User, conversation: Conversation
) -> None:
    fake_model.fail("Half an ", "answer", kind="timeout", message="The model provider timed out.")
    turn = await Turn.begin(user=user, conversation=conversation, content="Tell me")
    events = await collect(turn)

    assert [e.type for e in events] == ["start", "delta", "delta", "error"]
    assert events[-1].text == "The model provider timed out."
    user_message, assistant = await messages_of(conversation)
    assert (user_message.content, user_message.status) == ("Tell me", "complete")
    assert (assistant.content, assistant.status, assistant.error) == (
        "Half an answer",
        "error",
        "The model provider timed out.",
    )
    assert await lock_of(conversation) is None
    # The state stays a valid conversation, and the next turn works and sees it.
    assert (await state_of(conversation)).context == [
        {"role": "user", "content": "Tell me"},
        {"role": "assistant", "content": "Half an answer [reply cut short]"},  # the model learns it was cut
    ]
    assert (await run_turn(user, conversation, "Again")).type == "done"
    assert fake_model.requests[1]["messages"][-2] == {
        "role": "assistant",
        "content": "Half an answer [reply cut short]",
    }


async def test_provider_failure_before_any_text_leaves_only_the_user_message_in_the_state(
    fake_model: Any, user: User, conversation: Conversation
) -> None:
    fake_model.fail(kind="status", message="The model provider answered HTTP 500.")
    event = await run_turn(user, conversation)
    assert (event.type, reply_of(event).status, reply_of(event).content) == ("error", "error", "")
    assert (await state_of(conversation)).context == [{"role": "user", "content": "Hello"}]


async def test_an_unexpected_error_is_saved_with_a_generic_message(
    user: User, conversation: Conversation, settings: Any
) -> None:
    settings.LLM_BACKEND = "tests.chat.fake_tools.ExplodingModel"
    event = await run_turn(user, conversation)
    assert event.type == "error"
    assert reply_of(event).status == "error"
    assert event.text == "Something went wrong while writing the reply."
    assert "secret detail" not in event.text
    assert await lock_of(conversation) is None


async def test_deleting_the_conversation_during_a_turn_ends_it_quietly(
    fake_model: Any, user: User, conversation: Conversation, turn_hook_calls: list[dict[str, Any]]
) -> None:
    turn = await Turn.begin(user=user, conversation=conversation, content="Hello")
    await sync_to_async(conversation_delete)(conversation=await Conversation.objects.aget(pk=conversation.pk))
    assert (await run_to_end(turn)).type == "done"
    assert await Message.objects.acount() == 0
    assert turn_hook_calls == []


# --- cancelling ---


async def test_cancelling_a_streaming_turn_saves_it_interrupted_with_the_partial_text(
    user: User, conversation: Conversation, settings: Any
) -> None:
    settings.LLM_BACKEND = "tests.chat.fake_tools.StallingModel"
    turn = await Turn.begin(user=user, conversation=conversation, content="Go")
    first_delta = asyncio.Event()

    async def consume() -> None:
        async for event in turn.events():
            if event.type == "delta":
                first_delta.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(first_delta.wait(), 10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    _, assistant = await messages_of(conversation)
    assert (assistant.status, assistant.content) == ("interrupted", "Partial")
    assert await lock_of(conversation) is None
    assert (await state_of(conversation)).context[-1] == {"role": "assistant", "content": "Partial [reply cut short]"}

    settings.LLM_BACKEND = "demo"
    assert (await run_turn(user, conversation, "Next")).type == "done"


async def test_closing_the_event_stream_at_a_yield_saves_it_interrupted(
    fake_model: Any, user: User, conversation: Conversation
) -> None:
    fake_model.reply("One ", "two ", "three")
    turn = await Turn.begin(user=user, conversation=conversation, content="Go")
    events = turn.events()
    assert (await anext(events)).type == "start"
    assert (await anext(events)).text == "One "
    await events.aclose()  # a dropped connection: GeneratorExit at the yield

    _, assistant = await messages_of(conversation)
    assert (assistant.status, assistant.content) == ("interrupted", "One")
    assert assistant.error
    assert await lock_of(conversation) is None


async def test_closing_the_event_stream_closes_the_model_stream_at_once(
    user: User, conversation: Conversation, settings: Any
) -> None:
    from tests.chat.fake_tools import ClosableModel

    ClosableModel.closed = []
    settings.LLM_BACKEND = "tests.chat.fake_tools.ClosableModel"
    events = (await Turn.begin(user=user, conversation=conversation, content="Go")).events()
    await anext(events)
    await anext(events)
    assert ClosableModel.closed == []
    await events.aclose()
    assert ClosableModel.closed == [True]  # not left to the garbage collector


async def test_closing_right_after_start_saves_an_empty_interrupted_reply(
    fake_model: Any, user: User, conversation: Conversation
) -> None:
    turn = await Turn.begin(user=user, conversation=conversation, content="Go")
    events = turn.events()
    await anext(events)
    await events.aclose()
    _, assistant = await messages_of(conversation)
    assert (assistant.status, assistant.content) == ("interrupted", "")
    assert (await state_of(conversation)).context == [{"role": "user", "content": "Go"}]


async def test_cancelling_while_tools_run_leaves_every_tool_call_answered_in_the_state(
    fake_model: Any, user: User, conversation: Conversation, register_tool: Any
) -> None:
    release = threading.Event()
    fast = register_tool(EchoTool(name="fast", result="FAST"))
    slow = register_tool(EchoTool(name="slow", block=release))
    fake_model.model.steps.append(
        Step(tool_calls=[ToolCall(id="call_fast", name="fast", arguments="{}"), ToolCall("call_slow", "slow", "{}")])
    )
    turn = await Turn.begin(user=user, conversation=conversation, content="Use both")
    task = asyncio.create_task(run_to_end(turn))
    try:
        await asyncio.to_thread(slow.started.wait, 10)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    finally:
        release.set()

    assert fast.calls == [{}]
    context = (await state_of(conversation)).context
    assert [c["id"] for c in context[1]["tool_calls"]] == ["call_fast", "call_slow"]
    assert context[2] == {"role": "tool", "tool_call_id": "call_fast", "content": "FAST"}
    assert context[3]["tool_call_id"] == "call_slow" and context[3]["content"].startswith("Error")
    _, assistant = await messages_of(conversation)
    assert assistant.status == "interrupted"


async def test_nul_characters_from_the_model_or_a_tool_are_dropped_before_saving(
    fake_model: Any, user: User, conversation: Conversation, register_tool: Any
) -> None:
    # PostgreSQL refuses NUL in text and JSON; a provider or tool sending one must not break the turn.
    register_tool(EchoTool(result="tool\x00result"))
    fake_model.call_tool("lookup", text="before\x00")
    fake_model.reply("after\x00wards")
    event = await run_turn(user, conversation)
    assert event.type == "done"
    assert reply_of(event).content == "before\n\nafterwards"
    context = json.dumps((await state_of(conversation)).context)
    assert "\\u0000" not in context and "toolresult" in context


# --- the post-turn hook ---


@pytest.mark.parametrize("fails", [False, True])
async def test_the_post_turn_hook_fires_once_with_the_turn_ids_and_status(
    fake_model: Any, user: User, conversation: Conversation, turn_hook_calls: list[dict[str, Any]], fails: bool
) -> None:
    if fails:
        fake_model.fail()
    event = await run_turn(user, conversation)
    assert turn_hook_calls == [
        {
            "user_id": user.pk,
            "conversation_id": conversation.pk,
            "user_message_id": event.user_message and event.user_message.pk,
            "assistant_message_id": reply_of(event).pk,
            "status": "error" if fails else "complete",
        }
    ]


async def test_the_post_turn_hook_sees_the_saved_turn_and_a_free_conversation(
    fake_model: Any, user: User, conversation: Conversation
) -> None:
    seen: list[tuple[Any, str, int]] = []

    def receiver(sender: object, *, conversation_id: Any, assistant_message_id: int, **kwargs: Any) -> None:
        # Runs after commit: what a background task started from here would read.
        seen.append(
            (
                Conversation.objects.get(pk=conversation_id).lock_token,
                Message.objects.get(pk=assistant_message_id).status,
                AgentState.objects.get(conversation_id=conversation_id).version,
            )
        )

    extensions.turn_finished.connect(receiver, dispatch_uid="test-hook-order")
    try:
        await run_turn(user, conversation)
    finally:
        extensions.turn_finished.disconnect(dispatch_uid="test-hook-order")
    assert seen == [(None, "complete", 1)]
