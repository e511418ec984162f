"""The OpenAI adapter against the ways servers people run themselves (llama.cpp, vLLM, Ollama) behave:
bounded generations, wall-clock deadlines, safe retries, honest errors, tools they reject or mangle.
All against the local fake server (tests/fake_openai.py), never a real model."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from chat.llm import LLMError, TextDelta, ToolCalls, Usage, get_chat_model
from tests.fake_openai import FakeOpenAIServer, FakeResponse, context_length_refusal

USER = [{"role": "user", "content": "Hello"}]
FLUSH = {
    "type": "function",
    "function": {"name": "flush_memory", "description": "Flush.", "parameters": {"type": "object", "properties": {}}},
}


async def _collect(**kwargs: Any) -> list[Any]:
    return [chunk async for chunk in get_chat_model().stream(**kwargs)]


def _text(chunks: list[Any]) -> str:
    return "".join(c.text for c in chunks if isinstance(c, TextDelta))


# --- bounded generations ---


async def test_every_chat_request_carries_max_tokens_from_the_reply_budget(
    fake_openai: FakeOpenAIServer, settings: Any
) -> None:
    settings.CHAT_REPLY_TOKENS = 321
    await _collect(messages=USER)
    assert fake_openai.requests[0]["max_tokens"] == 321


def test_the_judge_call_carries_max_tokens_its_schema_and_the_judge_model(
    fake_openai: FakeOpenAIServer, settings: Any
) -> None:
    from memory.extraction.judge.call import answer_schema, call_judge

    settings.MEMORY_JUDGE_MAX_TOKENS = 777
    settings.MEMORY_MODEL = "judge-model"
    fake_openai.queue(FakeResponse('{"operations": []}'))
    assert call_judge(USER) == '{"operations": []}'
    request = fake_openai.requests[0]
    assert request["max_tokens"] == 777
    assert request["model"] == "judge-model"
    assert request["response_format"]["type"] == "json_schema"
    assert request["response_format"]["json_schema"]["schema"] == answer_schema()


def test_a_judge_answer_cut_off_at_max_tokens_is_a_length_error(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.queue(FakeResponse('{"operations": [{"op": "add", "content": "Lik', finish_reason="length"))
    with pytest.raises(LLMError) as caught:
        get_chat_model().complete_json(messages=USER, model="judge", temperature=0.3, timeout=5, max_tokens=10)
    assert caught.value.kind == "length" and caught.value.too_long


def test_a_request_larger_than_the_window_is_recognised_as_too_long(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.queue(context_length_refusal(9731, 8192))
    with pytest.raises(LLMError) as caught:
        get_chat_model().complete_json(messages=USER, model="judge", temperature=0.3, timeout=5, max_tokens=10)
    assert caught.value.too_long and caught.value.status == 400
    assert "exceed context window of 8192" in str(caught.value)


# --- deadlines that keep-alive pings cannot extend ---


async def test_a_stream_that_only_sends_pings_ends_at_the_first_token_timeout(
    fake_openai: FakeOpenAIServer, settings: Any
) -> None:
    settings.LLM_TIMEOUT = 10.0  # the read timeout alone would never fire: a ping comes every 50 ms
    settings.LLM_FIRST_TOKEN_TIMEOUT = 1.0
    settings.LLM_MAX_RETRIES = 2
    await _collect(messages=USER)  # the client's first request has a start-up cost of its own
    fake_openai.queue(FakeResponse(hang=True, ping_every=0.05))
    started = time.monotonic()
    with pytest.raises(LLMError) as caught:
        await _collect(messages=USER)
    assert caught.value.kind == "timeout"
    assert "no reply within 1 s" in str(caught.value)
    assert time.monotonic() - started < 5
    assert len(fake_openai.requests) == 2  # a timeout is never retried: the server may still be busy with it


async def test_a_never_ending_stream_with_pings_ends_at_the_total_limit_keeping_its_text(
    fake_openai: FakeOpenAIServer, settings: Any
) -> None:
    settings.LLM_TIMEOUT = 10.0
    settings.CHAT_TURN_TIMEOUT = 1.5
    fake_openai.queue(FakeResponse(chunks=["Half ", "an answer"], hang=True, ping_every=0.05))
    received: list[str] = []
    with pytest.raises(LLMError) as caught:
        async for chunk in get_chat_model().stream(messages=USER):
            assert isinstance(chunk, TextDelta)
            received.append(chunk.text)
    assert caught.value.kind == "timeout" and "time limit" in str(caught.value)
    assert received == ["Half ", "an answer"]


async def test_a_stream_that_stalls_after_its_first_tokens_ends_at_the_stall_limit_despite_pings(
    fake_openai: FakeOpenAIServer, settings: Any
) -> None:
    settings.LLM_TIMEOUT = 10.0
    settings.CHAT_TURN_TIMEOUT = 30.0
    settings.LLM_STALL_TIMEOUT = 0.8
    fake_openai.queue(FakeResponse(chunks=["Half ", "an answer"], hang=True, ping_every=0.05))
    received: list[str] = []
    started = time.monotonic()
    with pytest.raises(LLMError) as caught:
        async for chunk in get_chat_model().stream(messages=USER):
            assert isinstance(chunk, TextDelta)
            received.append(chunk.text)
    assert caught.value.kind == "timeout"
    assert "stopped sending the reply: nothing arrived for 0.8 s" in str(caught.value)
    assert received == ["Half ", "an answer"]
    assert time.monotonic() - started < 5


async def test_a_slow_but_steady_stream_outlasts_the_stall_limit(fake_openai: FakeOpenAIServer, settings: Any) -> None:
    settings.LLM_TIMEOUT = 10.0
    settings.LLM_STALL_TIMEOUT = 0.6
    fake_openai.queue(FakeResponse(chunks=["One ", "two ", "three ", "four ", "five"], chunk_delay=0.3))
    assert _text(await _collect(messages=USER)) == "One two three four five"  # 1.2 s in all, 0.3 s apart


def test_the_judge_deadline_holds_for_a_server_that_never_answers(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.queue(FakeResponse(hang=True))
    started = time.monotonic()
    with pytest.raises(LLMError) as caught:
        get_chat_model().complete_json(messages=USER, model="judge", temperature=0.3, timeout=0.4, max_tokens=10)
    assert caught.value.kind == "timeout"
    assert time.monotonic() - started < 2


# --- retries only when nothing can still be running ---


async def test_a_server_error_before_anything_arrived_is_retried(fake_openai: FakeOpenAIServer, settings: Any) -> None:
    settings.LLM_MAX_RETRIES = 1
    fake_openai.queue(FakeResponse(status=503), FakeResponse("recovered"))
    assert _text(await _collect(messages=USER)) == "recovered"
    assert len(fake_openai.requests) == 2


async def test_a_refused_request_is_not_retried(fake_openai: FakeOpenAIServer, settings: Any) -> None:
    settings.LLM_MAX_RETRIES = 2
    fake_openai.queue(FakeResponse(status=400), FakeResponse("never"))
    with pytest.raises(LLMError):
        await _collect(messages=USER)
    assert len(fake_openai.requests) == 1


# --- honest errors ---


async def test_the_providers_own_message_is_kept_trimmed_and_without_secrets(
    fake_openai: FakeOpenAIServer, settings: Any
) -> None:
    said = "Model 'llama3' not found; check http://admin:hunter2@gpu:8000 with key test-key " + "x" * 500
    fake_openai.queue(FakeResponse(status=404, error_body={"error": {"message": said, "type": "not_found"}}))
    with pytest.raises(LLMError) as caught:
        await _collect(messages=USER)
    text = str(caught.value)
    assert text.startswith("The model provider answered HTTP 404: Model 'llama3' not found")
    assert "hunter2" not in text and "test-key" not in text
    assert len(text) < 400 and text.endswith("…")


async def test_a_fastapi_style_error_detail_is_kept(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.queue(FakeResponse(status=422, error_body={"detail": "messages: field required"}))
    with pytest.raises(LLMError) as caught:
        await _collect(messages=USER)
    assert "messages: field required" in str(caught.value)


# --- one system message ---


async def test_several_system_messages_are_sent_as_one(fake_openai: FakeOpenAIServer) -> None:
    messages = [
        {"role": "system", "content": "You are Memora."},
        {"role": "system", "content": "Background: prefers tea."},
        {"role": "user", "content": "Hi"},
    ]
    await _collect(messages=messages)
    sent = fake_openai.requests[0]["messages"]
    assert sent == [{"role": "system", "content": "You are Memora.\n\nBackground: prefers tea."}, messages[-1]]


# --- tools on servers that mangle, reject or ignore them ---


@pytest.mark.parametrize("style", ["openai", "repeat_name", "no_ids", "index_zero"])
async def test_tool_calls_survive_the_way_each_server_streams_them(fake_openai: FakeOpenAIServer, style: str) -> None:
    calls = [
        {"id": "call_a", "name": "flush_memory", "arguments": '{"why": "a stated fact"}'},
        {"id": "call_b", "name": "lookup", "arguments": '{"query": "small phones", "limit": 3}'},
    ]
    fake_openai.queue(FakeResponse(tool_calls=calls, tool_style=style))
    chunks = await _collect(messages=USER, tools=[FLUSH])
    (assembled,) = [c for c in chunks if isinstance(c, ToolCalls)]
    assert [c.name for c in assembled.calls] == ["flush_memory", "lookup"]
    assert [json.loads(c.arguments) for c in assembled.calls] == [json.loads(c["arguments"]) for c in calls]
    ids = [c.id for c in assembled.calls]
    assert all(ids) and len(set(ids)) == 2
    if style != "no_ids":
        assert ids == ["call_a", "call_b"]


async def test_tools_are_sent_with_tool_choice_auto(fake_openai: FakeOpenAIServer) -> None:
    await _collect(messages=USER, tools=[FLUSH])
    assert fake_openai.requests[0]["tools"] == [FLUSH]
    assert fake_openai.requests[0]["tool_choice"] == "auto"


async def test_a_server_that_rejects_tools_is_asked_again_without_them_and_not_offered_them_again(
    fake_openai: FakeOpenAIServer,
) -> None:
    refusal = {"error": {"message": '"auto" tool choice requires --enable-auto-tool-choice', "type": "BadRequest"}}
    fake_openai.queue(FakeResponse(status=400, error_body=refusal), FakeResponse("Plain answer"), FakeResponse("Next"))
    assert _text(await _collect(messages=USER, tools=[FLUSH])) == "Plain answer"
    assert _text(await _collect(messages=USER, tools=[FLUSH])) == "Next"
    assert ["tools" in r for r in fake_openai.requests] == [True, False, False]


async def test_an_empty_answer_to_a_request_with_tools_is_asked_again_without_them(
    fake_openai: FakeOpenAIServer,
) -> None:
    # llama.cpp's chatml-function-calling: "automatic streaming tool choice is not supported" — an empty 200.
    fake_openai.queue(FakeResponse(chunks=[]), FakeResponse("Plain answer"))
    assert _text(await _collect(messages=USER, tools=[FLUSH])) == "Plain answer"
    assert ["tools" in r for r in fake_openai.requests] == [True, False]


async def test_chat_tools_off_never_sends_tools(fake_openai: FakeOpenAIServer, settings: Any) -> None:
    settings.CHAT_TOOLS = "off"
    await _collect(messages=USER, tools=[FLUSH])
    assert "tools" not in fake_openai.requests[0] and "tool_choice" not in fake_openai.requests[0]


async def test_an_empty_answer_without_tools_streams_nothing(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.queue(FakeResponse(chunks=[]), FakeResponse(chunks=[]))
    chunks = await _collect(messages=USER)
    assert not [c for c in chunks if not isinstance(c, Usage)]  # the agent turns this into an error with Retry
    assert len(fake_openai.requests) == 2  # asked once more, then given up


@pytest.mark.parametrize("empty", [[], ["\n", "  ", "\n\n"]], ids=["nothing", "blanks"])
async def test_an_empty_answer_is_asked_once_more_and_the_second_answer_is_the_reply(
    fake_openai: FakeOpenAIServer, empty: list[str]
) -> None:
    # Gemma 3 270M under a ChatML template sometimes samples its end-of-turn token first.
    fake_openai.queue(FakeResponse(chunks=empty), FakeResponse("Seven is a prime."))
    assert _text(await _collect(messages=USER)) == "Seven is a prime."
    assert len(fake_openai.requests) == 2


async def test_with_tools_an_empty_answer_is_asked_without_them_and_once_more(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.queue(FakeResponse(chunks=[]), FakeResponse(chunks=[]), FakeResponse("Eight is even."))
    assert _text(await _collect(messages=USER, tools=[FLUSH])) == "Eight is even."
    assert ["tools" in r for r in fake_openai.requests] == [True, False, False]
