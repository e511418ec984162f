"""One contract for every model provider: the offline demo model and the OpenAI adapter pass the same tests.

A new backend joins by adding a fixture param below.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator, Iterator
from typing import Any, cast

import pytest

from chat.llm import ChatModel, TextDelta, ToolCalls, Usage, get_chat_model
from chat.llm import demo as demo_module
from tests.fake_openai import FakeResponse

MESSAGES = [
    {"role": "system", "content": "You are a test."},
    {"role": "user", "content": "Please say something."},
]
TOOLS = [
    {
        "type": "function",
        "function": {"name": "noop", "description": "Does nothing.", "parameters": {"type": "object"}},
    }
]


def _openai_reply(body: dict[str, Any]) -> FakeResponse:
    if body.get("response_format") == {"type": "json_object"}:
        return FakeResponse('{"operations": []}')
    return FakeResponse("A streamed answer from the fake provider.")


@pytest.fixture(params=["demo", "openai"])
def chat_model(request: pytest.FixtureRequest, settings: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[ChatModel]:
    if request.param == "demo":
        monkeypatch.setattr(demo_module, "WORD_DELAY_SECONDS", 0)
        settings.LLM_BACKEND = "demo"
        yield get_chat_model()
        return
    server = request.getfixturevalue("fake_openai")
    server.responder = _openai_reply
    yield get_chat_model()


async def _stream(model: ChatModel, tools: list[dict[str, Any]] | None = None) -> list[Any]:
    return [chunk async for chunk in model.stream(messages=MESSAGES, tools=tools)]


def test_has_a_label(chat_model: ChatModel) -> None:
    assert chat_model.label


async def test_stream_yields_text_deltas_that_form_a_non_empty_answer(chat_model: ChatModel) -> None:
    chunks = [c for c in await _stream(chat_model) if not isinstance(c, Usage)]
    assert chunks and all(isinstance(c, TextDelta) for c in chunks)
    assert "".join(c.text for c in chunks).strip()


async def test_stream_reports_the_prompt_size_at_most_once_after_the_text(chat_model: ChatModel) -> None:
    chunks = await _stream(chat_model)
    usage = [i for i, c in enumerate(chunks) if isinstance(c, Usage)]
    assert len(usage) <= 1
    if usage:
        assert all(isinstance(c, TextDelta) for c in chunks[: usage[0]])
        assert cast(Usage, chunks[usage[0]]).prompt_tokens > 0


async def test_stream_with_tools_offered_ends_with_at_most_one_tool_calls(chat_model: ChatModel) -> None:
    chunks = await _stream(chat_model, tools=TOOLS)
    assert all(isinstance(c, TextDelta | ToolCalls | Usage) for c in chunks)
    tool_calls = [c for c in chunks if isinstance(c, ToolCalls)]
    assert len(tool_calls) <= 1
    if tool_calls:
        assert chunks[-1] is tool_calls[0]


async def test_stream_does_not_change_the_messages_it_was_given(chat_model: ChatModel) -> None:
    before = json.dumps(MESSAGES)
    await _stream(chat_model)
    assert json.dumps(MESSAGES) == before


async def test_stream_can_be_closed_early(chat_model: ChatModel) -> None:
    stream = cast(AsyncGenerator[Any, None], chat_model.stream(messages=MESSAGES))
    first = await anext(stream)
    assert isinstance(first, TextDelta)
    await stream.aclose()
    assert await _stream(chat_model)  # still usable afterwards


async def test_complete_json_answers_a_json_object(chat_model: ChatModel) -> None:
    answer = await asyncio.to_thread(
        chat_model.complete_json, messages=MESSAGES, model="judge", temperature=0.3, timeout=5
    )
    assert isinstance(json.loads(answer), dict)


async def test_complete_text_answers_non_empty_text(chat_model: ChatModel) -> None:
    messages = [MESSAGES[0], {"role": "user", "content": "User: I want a small phone.\n\nAssistant: Noted."}]
    answer = await asyncio.to_thread(
        chat_model.complete_text, messages=messages, model="summary", max_tokens=200, timeout=5
    )
    assert isinstance(answer, str) and answer.strip()
