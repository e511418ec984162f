from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import sync_to_async

from chat import extensions
from chat.extensions import TurnContext
from chat.llm import LLMError
from chat.services import conversation_create
from chat.turn.agent import Turn
from memory import tools
from memory.extraction import claim, retries
from memory.models import Memory
from tests.fake_openai import FakeOpenAIServer, FakeResponse
from tests.helpers import make_conversation, make_memory, make_user, say
from tests.turns import run_to_end


def ctx_for(user: Any, text: str = "I'm vegetarian", *, temporary: bool = False) -> TurnContext:
    conversation = make_conversation(owner=user, temporary=temporary)
    return TurnContext(user=user, conversation=conversation, user_message=say(conversation, text))


def test_flush_memory_is_registered_with_no_parameters() -> None:
    schema = next(s for s in extensions.tool_schemas() if s["function"]["name"] == "flush_memory")
    assert schema["function"]["parameters"] == {"type": "object", "properties": {}, "additionalProperties": False}
    description = schema["function"]["description"]
    assert "remember, correct or forget" in description
    assert "Never tell the user that something was remembered" in description


def test_the_reply_says_memory_is_updating_while_flush_memory_runs() -> None:
    from chat.fragments import activity_html

    assert "Updating memory…" in activity_html(7, "flush_memory")


def _offered_tools(request: dict[str, Any]) -> list[str]:
    return [t["function"]["name"] for t in request.get("tools", [])]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    "memory_enabled, temporary, offered",
    [(True, False, True), (False, False, False), (True, True, False), (False, True, False)],
)
async def test_the_provider_is_offered_flush_memory_only_where_it_can_act(
    fake_openai: FakeOpenAIServer, memory_enabled: bool, temporary: bool, offered: bool
) -> None:
    user = await sync_to_async(make_user)()
    conversation = await sync_to_async(conversation_create)(user=user, temporary=temporary)
    # Switched in the database only: the turn must read the current setting, not the stale object.
    await type(user).objects.filter(pk=user.pk).aupdate(memory_enabled=memory_enabled)
    fake_openai.queue(FakeResponse("Hello."))

    turn = await Turn.begin(user=user, conversation=conversation, content="I'm vegetarian")
    assert (await run_to_end(turn)).type == "done"

    assert ("flush_memory" in _offered_tools(fake_openai.requests[0])) is offered


@pytest.mark.django_db
def test_flush_saves_and_says_what_was_saved(fake_model: Any, user: Any) -> None:
    ctx = ctx_for(user)
    fake_model.judge({"operations": [{"op": "add", "content": "Is vegetarian.", "sources": [1]}]})

    result = tools.flush_memory.run(ctx, {})

    assert result == "Memory updated. Remembered: Is vegetarian."
    assert Memory.objects.filter(owner=user, content="Is vegetarian.").exists()


@pytest.mark.django_db
def test_flush_ignores_the_threshold_and_stops_at_the_current_message(
    fake_model: Any, user: Any, settings: Any
) -> None:
    settings.MEMORY_EXTRACT_MIN_TURNS = 3
    ctx = ctx_for(user)
    later = say(ctx.conversation, "A later message from another turn")

    tools.flush_memory.run(ctx, {})

    assert len(fake_model.judge_requests) == 1
    assert later.content not in fake_model.judge_requests[0]["messages"][-1]["content"]


@pytest.mark.django_db
def test_flush_update_and_forget_sentences(fake_model: Any, user: Any) -> None:
    memory = make_memory(owner=user, content="Prefers small phones.")
    fake_model.judge({"operations": [{"op": "update", "id": memory.pk, "content": "Prefers large-screen phones."}]})
    assert tools.flush_memory.run(ctx_for(user, "I prefer big screens now"), {}) == (
        "Memory updated. Updated: Prefers large-screen phones."
    )
    new = Memory.objects.get(owner=user, invalid_at__isnull=True)
    fake_model.judge({"operations": [{"op": "retract", "id": new.pk}]})
    assert tools.flush_memory.run(ctx_for(user, "Forget my screen preference"), {}) == (
        "Memory updated. Forgot: Prefers large-screen phones."
    )


@pytest.mark.django_db
def test_each_outcome_has_its_own_sentence(fake_model: Any, user: Any, settings: Any, monkeypatch: Any) -> None:
    settings.MEMORY_FLUSH_WAIT_SECONDS = 0
    later: list[tuple[int, int, float | None]] = []
    monkeypatch.setattr(
        "memory.tasks.enqueue_extraction",
        lambda **kw: later.append((kw["user_id"], kw["message_id"], kw.get("countdown"))),
    )
    sentences = {}

    sentences["nothing"] = tools.flush_memory.run(ctx_for(user), {})
    ctx = ctx_for(user)
    tools.flush_memory.run(ctx, {})
    sentences["covered"] = tools.flush_memory.run(ctx, {})
    fake_model.judge(LLMError("The model provider sent an answer that could not be read.", kind="bad_response"))
    failed_ctx = ctx_for(user)
    sentences["failed"] = tools.flush_memory.run(failed_ctx, {})
    fake_model.judge(LLMError("The model provider sent an answer that could not be read.", kind="bad_response"))
    tools.flush_memory.run(failed_ctx, {})  # the second attempt may run at once; the last one waits
    waiting_ctx = ctx_for(user)
    sentences["backing_off"] = tools.flush_memory.run(waiting_ctx, {})
    token = claim.claim_take(user_id=user.pk)
    busy_ctx = ctx_for(user)
    sentences["busy"] = tools.flush_memory.run(busy_ctx, {})
    claim.claim_release(user_id=user.pk, token=token)  # type: ignore[arg-type]
    sentences["temporary"] = tools.flush_memory.run(ctx_for(user, temporary=True), {})
    user.memory_enabled = False
    user.save()
    sentences["off"] = tools.flush_memory.run(ctx_for(user), {})

    assert sentences == {
        "nothing": tools.NOTHING_WORTH_KEEPING,
        "covered": tools.NOTHING_PENDING,
        "failed": tools.FAILED,
        "backing_off": tools.BACKING_OFF,
        "busy": tools.BUSY,
        "temporary": tools.TEMPORARY,
        "off": tools.MEMORY_OFF,
    }
    assert len(set(sentences.values())) == len(sentences)
    # A failed or waiting flush is retried once its backoff window has passed; a busy one shortly.
    window = retries.retry_delay(1)
    assert [(m, c is not None and c > 0) for _, m, c in later] == [
        (failed_ctx.user_message.pk, True),
        (failed_ctx.user_message.pk, True),
        (waiting_ctx.user_message.pk, True),
        (busy_ctx.user_message.pk, False),
    ]
    assert later[0][2] == window
    assert "not" in tools.NOTHING_WORTH_KEEPING and "not" in tools.FAILED and "not" in tools.BUSY


@pytest.mark.django_db(transaction=True)
async def test_model_calling_flush_memory_saves_before_the_reply_finishes(fake_model: Any) -> None:
    user = await sync_to_async(make_user)()
    conversation = await sync_to_async(conversation_create)(user=user)
    fake_model.call_tool("flush_memory")
    fake_model.reply("Noted.")
    fake_model.judge({"operations": [{"op": "add", "content": "Is vegetarian.", "sources": [1]}]})

    turn = await Turn.begin(user=user, conversation=conversation, content="Remember that I'm vegetarian")
    seen_before_reply: list[bool] = []
    async for event in turn.events():
        if event.type == "delta":
            seen_before_reply.append(await Memory.objects.filter(owner=user, content="Is vegetarian.").aexists())

    assert seen_before_reply and all(seen_before_reply)
    tool_message = next(m for m in fake_model.requests[-1]["messages"] if m["role"] == "tool")
    assert tool_message["content"] == "Memory updated. Remembered: Is vegetarian."
    offered = {t["function"]["name"] for t in fake_model.requests[0]["tools"]}
    assert "flush_memory" in offered
