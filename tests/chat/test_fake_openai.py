"""The local OpenAI-compatible server itself, driven through the real `openai` package."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import openai
import pytest

from tests.fake_openai import FakeOpenAIServer, FakeResponse


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as running:
        yield running


def _client(server: FakeOpenAIServer, timeout: float = 5.0) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key="test-key", max_retries=0, timeout=timeout)


def test_binds_to_localhost_on_a_free_port(server: FakeOpenAIServer) -> None:
    assert server.base_url.startswith("http://127.0.0.1:")
    assert server.base_url.endswith("/v1")
    assert server.port > 0


def test_streams_scripted_text_in_chunks_and_records_the_request(server: FakeOpenAIServer) -> None:
    server.queue(FakeResponse("Hello small world"))
    stream = _client(server).chat.completions.create(
        model="m", messages=[{"role": "user", "content": "hi"}], stream=True
    )
    chunks = [c.choices[0] for c in stream if c.choices]
    assert [c.delta.content for c in chunks if c.delta.content] == ["Hello ", "small ", "world"]
    assert chunks[-1].finish_reason == "stop"
    assert server.requests == [{"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True}]
    assert server.request_headers[0]["authorization"] == "Bearer test-key"


def test_explicit_chunks_are_sent_as_given(server: FakeOpenAIServer) -> None:
    server.queue(FakeResponse(chunks=["a", "", "bc"]))
    stream = _client(server).chat.completions.create(model="m", messages=[], stream=True)
    assert "".join(c.choices[0].delta.content or "" for c in stream if c.choices) == "abc"


def test_streams_tool_calls_as_fragments(server: FakeOpenAIServer) -> None:
    server.queue(FakeResponse(tool_calls=[{"id": "call_9", "name": "lookup", "arguments": '{"query": "phones"}'}]))
    stream = _client(server).chat.completions.create(model="m", messages=[], stream=True)
    parts = [p for c in stream if c.choices for p in c.choices[0].delta.tool_calls or []]
    assert len(parts) > 2  # the head, then the arguments in pieces
    assert all(p.index == 0 and p.function is not None for p in parts)
    assert parts[0].id == "call_9" and parts[0].function and parts[0].function.name == "lookup"
    assert "".join(p.function.arguments or "" for p in parts if p.function) == '{"query": "phones"}'


def test_usage_chunk_when_asked_for(server: FakeOpenAIServer) -> None:
    stream = _client(server).chat.completions.create(
        model="m", messages=[], stream=True, stream_options={"include_usage": True}
    )
    chunks = list(stream)
    assert chunks[-1].choices == [] and chunks[-1].usage is not None


def test_non_streaming_reply_returns_the_scripted_content(server: FakeOpenAIServer) -> None:
    server.queue(FakeResponse('{"operations": []}'))
    response = _client(server).chat.completions.create(
        model="judge", messages=[], response_format={"type": "json_object"}, temperature=0.3
    )
    assert response.choices[0].message.content == '{"operations": []}'
    assert server.requests[0]["response_format"] == {"type": "json_object"}


def test_replies_are_consumed_in_order_then_the_responder_answers(server: FakeOpenAIServer) -> None:
    server.queue(FakeResponse("first"), FakeResponse("second"))
    server.responder = lambda body: FakeResponse(f"echo {len(body['messages'])}")
    client = _client(server)
    answers = [client.chat.completions.create(model="m", messages=[]).choices[0].message.content for _ in range(3)]
    assert answers == ["first", "second", "echo 0"]


def test_default_reply_is_ok(server: FakeOpenAIServer) -> None:
    assert _client(server).chat.completions.create(model="m", messages=[]).choices[0].message.content == "ok"


def test_error_status_answers_an_openai_error_body(server: FakeOpenAIServer) -> None:
    server.queue(FakeResponse(status=429, error_body={"error": {"message": "Slow down", "type": "rate_limit"}}))
    with pytest.raises(openai.RateLimitError, match="Slow down"):
        _client(server).chat.completions.create(model="m", messages=[], stream=True)


def test_hang_runs_the_client_into_its_timeout(server: FakeOpenAIServer) -> None:
    server.queue(FakeResponse(hang=True))
    with pytest.raises(openai.APITimeoutError):
        _client(server, timeout=0.3).chat.completions.create(model="m", messages=[])


def test_stop_wakes_a_hanging_request_and_frees_the_port() -> None:
    server = FakeOpenAIServer().start()
    server.queue(FakeResponse(hang=True))

    async def call() -> None:
        async_client = openai.AsyncOpenAI(base_url=server.base_url, api_key="k", max_retries=0, timeout=30)
        await async_client.chat.completions.create(model="m", messages=[])

    async def scenario() -> BaseException | None:
        task = asyncio.create_task(call())
        while not server.requests:
            await asyncio.sleep(0.01)
        await asyncio.to_thread(server.stop)
        try:
            await task
        except BaseException as exc:
            return exc
        return None

    assert isinstance(asyncio.run(scenario()), openai.APIConnectionError)


def test_serves_fifty_concurrent_streams(server: FakeOpenAIServer) -> None:
    server.responder = lambda body: FakeResponse(chunks=[f"w{i} " for i in range(20)], chunk_delay=0.001)

    async def one(client: openai.AsyncOpenAI) -> str:
        stream = await client.chat.completions.create(model="m", messages=[], stream=True)
        return "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])

    async def all_of_them() -> list[str]:
        client = openai.AsyncOpenAI(base_url=server.base_url, api_key="k", max_retries=0, timeout=30)
        async with client:
            return await asyncio.gather(*(one(client) for _ in range(50)))

    texts = asyncio.run(all_of_them())
    assert texts == ["".join(f"w{i} " for i in range(20))] * 50
    assert len(server.requests) == 50


def test_command_line_responder_answers_n_word_tokens() -> None:
    from tests.fake_openai import _benchmark_responder

    reply = _benchmark_responder(tokens=5, token_delay=0.0, first_token_delay=0.0)({"messages": []})
    assert reply.text_chunks() == ["word0 ", "word1 ", "word2 ", "word3 ", "word4 "]


def test_a_failing_responder_answers_a_readable_500(server: FakeOpenAIServer) -> None:
    def broken(body: dict[str, Any]) -> FakeResponse:
        raise KeyError("oops")

    server.responder = broken
    with pytest.raises(openai.InternalServerError, match="responder failed"):
        _client(server).chat.completions.create(model="m", messages=[])
