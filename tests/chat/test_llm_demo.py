"""The offline demo model: deterministic, word by word, says what it is, and takes part through hooks."""

from __future__ import annotations

import json
from typing import Any

import pytest

from chat import extensions
from chat.llm import TextDelta, ToolCalls, get_chat_model
from chat.llm import demo as demo_module
from chat.llm.demo import DemoChatModel


@pytest.fixture(autouse=True)
def _instant(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(demo_module, "WORD_DELAY_SECONDS", 0)


@pytest.fixture
def hooks(monkeypatch: pytest.MonkeyPatch) -> tuple[list[Any], list[Any]]:
    """The demo model's hooks (chat.extensions) for one test, starting empty: append to register."""
    triggers: list[Any] = []
    responders: list[Any] = []
    monkeypatch.setattr(extensions, "demo_tool_triggers", lambda: list(triggers))
    monkeypatch.setattr(extensions, "demo_json_responders", lambda: list(responders))
    return triggers, responders


async def reply(messages: list[dict[str, Any]], tools: Any = None) -> list[Any]:
    return [chunk async for chunk in DemoChatModel().stream(messages=messages, tools=tools)]


def test_is_the_default_backend_and_labelled_as_a_demo() -> None:
    model = get_chat_model()
    assert isinstance(model, DemoChatModel)
    assert model.is_demo and model.label == "Offline demo model"


async def test_streams_word_by_word_and_says_it_is_an_offline_demo() -> None:
    chunks = await reply([{"role": "user", "content": "Hello there"}])
    assert len(chunks) > 5 and all(isinstance(c, TextDelta) for c in chunks)
    text = "".join(c.text for c in chunks)
    assert text.startswith("(Offline demo model")
    assert "“Hello there”" in text
    assert all(len(c.text.split()) == 1 for c in chunks)


async def test_is_deterministic() -> None:
    messages = [{"role": "system", "content": "x"}, {"role": "user", "content": "Same input"}]
    assert await reply(messages) == await reply(messages)


async def test_mentions_background_lines_from_context_blocks() -> None:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "The system prompt\n- not background"},
        {"role": "system", "content": "Known facts:\n- Prefers small phones"},
        {"role": "user", "content": "Suggest a phone"},
    ]
    text = "".join(c.text for c in await reply(messages))
    assert "Prefers small phones" in text
    assert "not background" not in text


async def test_long_input_is_shortened_in_the_echo() -> None:
    text = "".join(c.text for c in await reply([{"role": "user", "content": "word " * 100}]))
    assert "…" in text


async def test_a_tool_trigger_makes_it_call_a_tool_once_per_user_message(hooks: Any) -> None:
    triggers, _ = hooks
    triggers.append(lambda text, names: "noop" if "remember" in text else None)
    tools = [{"type": "function", "function": {"name": "noop", "description": "", "parameters": {}}}]
    first = await reply([{"role": "user", "content": "please remember this"}], tools)
    assert len(first) == 1 and isinstance(first[0], ToolCalls)
    assert first[0].calls[0].name == "noop"
    after_tool: list[dict[str, Any]] = [
        {"role": "user", "content": "please remember this"},
        {"role": "assistant", "content": None, "tool_calls": [first[0].calls[0].as_message_part()]},
        {"role": "tool", "tool_call_id": first[0].calls[0].id, "content": "Saved: one memory."},
    ]
    text = "".join(c.text for c in await reply(after_tool, tools))
    assert "Saved: one memory." in text
    assert "".join(c.text for c in await reply([{"role": "user", "content": "hello"}], tools)).startswith("(Offline")


def test_complete_json_uses_responders_then_answers_no_operations(hooks: Any) -> None:
    _, responders = hooks
    model = DemoChatModel()
    assert json.loads(model.complete_json(messages=[], model="m", temperature=0.3, timeout=1)) == {"operations": []}
    responders.append(lambda messages: '{"operations": [{"op": "clear"}]}')
    assert json.loads(model.complete_json(messages=[], model="m", temperature=0.3, timeout=1))["operations"] == [
        {"op": "clear"}
    ]


def test_reply_relays_only_this_turns_tool_results_even_when_a_message_repeats() -> None:
    said = {"role": "user", "content": "I like small phones"}
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are Memora."},
        said,
        {"role": "assistant", "content": None, "tool_calls": []},
        {"role": "tool", "tool_call_id": "call_1", "content": "EARLIER RESULT"},
        {"role": "assistant", "content": "Noted."},
        dict(said),  # the same words again, in a later turn
        {"role": "tool", "tool_call_id": "call_2", "content": "THIS TURN'S RESULT"},
    ]
    reply = DemoChatModel().reply_for(messages)
    assert "THIS TURN'S RESULT" in reply
    assert "EARLIER RESULT" not in reply


def test_the_demo_models_fixed_sentences_follow_the_language() -> None:
    from django.utils import translation

    from chat.llm.demo import DemoChatModel

    messages = [{"role": "user", "content": "你好"}]
    assert DemoChatModel().reply_for(messages).startswith("(Offline demo model — no AI provider is configured.)")
    with translation.override("zh-hans"):
        reply = DemoChatModel().reply_for(messages)
    assert reply.startswith("（离线演示模型——未配置 AI 服务。）你说：“你好”。")
    assert "设置 OPENAI_API_KEY 或 OPENAI_BASE_URL" in reply
