"""The OpenAI adapter against a local OpenAI-compatible server (tests/fake_openai.py): never the internet."""

from __future__ import annotations

import asyncio
import inspect
import json
import socket
import time
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any, cast

import pytest

from chat.llm import LLMError, TextDelta, ToolCalls, Usage, get_chat_model
from chat.llm.deadlines import Deadline
from chat.llm.openai_adapter import OpenAIChatModel
from chat.llm.sse import DRAIN_SECONDS
from tests.fake_openai import FakeOpenAIServer, FakeResponse

USER = [{"role": "user", "content": "Hello"}]
LOOKUP = {
    "type": "function",
    "function": {"name": "lookup", "description": "Look something up.", "parameters": {"type": "object"}},
}


async def _collect(model: Any, **kwargs: Any) -> list[Any]:
    """The reply's chunks (the prompt size the provider reports is left out; see the usage tests)."""
    return [chunk async for chunk in model.stream(**kwargs) if not isinstance(chunk, Usage)]


def test_backend_setting_selects_the_adapter(fake_openai: FakeOpenAIServer) -> None:
    assert isinstance(get_chat_model(), OpenAIChatModel)


async def test_streamed_text_arrives_as_deltas_in_order(fake_openai: FakeOpenAIServer, settings: Any) -> None:
    fake_openai.queue(FakeResponse(chunks=["Hel", "lo ", "there"]))
    chunks = await _collect(get_chat_model(), messages=USER)
    assert chunks == [TextDelta("Hel"), TextDelta("lo "), TextDelta("there")]
    request = fake_openai.requests[0]
    assert request["model"] == settings.CHAT_MODEL
    assert request["stream"] is True
    assert request["messages"] == USER
    assert "tools" not in request
    assert fake_openai.request_headers[0]["authorization"] == "Bearer test-key"


async def test_streamed_tool_calls_are_assembled_from_fragments(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.queue(
        FakeResponse(
            "Let me check.",
            tool_calls=[
                {"id": "call_a", "name": "lookup", "arguments": '{"query": "small phones", "limit": 3}'},
                {"id": "call_b", "name": "lookup", "arguments": '{"query": "big phones"}'},
            ],
        )
    )
    chunks = await _collect(get_chat_model(), messages=USER, tools=[LOOKUP])
    assert "".join(c.text for c in chunks if isinstance(c, TextDelta)) == "Let me check."
    assert isinstance(chunks[-1], ToolCalls)
    assert [c for c in chunks if isinstance(c, ToolCalls)] == [chunks[-1]]
    calls = chunks[-1].calls
    assert [(c.id, c.name) for c in calls] == [("call_a", "lookup"), ("call_b", "lookup")]
    assert json.loads(calls[0].arguments) == {"query": "small phones", "limit": 3}
    assert json.loads(calls[1].arguments) == {"query": "big phones"}
    assert fake_openai.requests[0]["tools"] == [LOOKUP]


async def test_usage_only_chunks_are_skipped(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.responder = None
    chunks = await _collect(get_chat_model(), messages=USER)
    assert chunks == [TextDelta("ok")]


@pytest.mark.parametrize("status", [400, 401, 429, 500, 503])
async def test_provider_http_error_becomes_llm_error_status(fake_openai: FakeOpenAIServer, status: int) -> None:
    fake_openai.queue(FakeResponse(status=status))
    with pytest.raises(LLMError) as caught:
        await _collect(get_chat_model(), messages=USER)
    assert caught.value.kind == "status"
    assert str(status) in str(caught.value)
    assert len(fake_openai.requests) == 1  # LLM_MAX_RETRIES=0: no retry


async def test_retries_follow_the_setting(fake_openai: FakeOpenAIServer, settings: Any) -> None:
    settings.LLM_MAX_RETRIES = 1
    fake_openai.queue(FakeResponse(status=500, error_body={"error": {"message": "x"}}), FakeResponse("recovered"))
    # The SDK waits a short backoff before its retry; it ends in the scripted second reply.
    chunks = await _collect(get_chat_model(), messages=USER)
    assert chunks == [TextDelta("recovered")]
    assert len(fake_openai.requests) == 2


async def test_timeout_before_the_first_byte_becomes_llm_error_timeout(
    fake_openai: FakeOpenAIServer, settings: Any
) -> None:
    settings.LLM_TIMEOUT = 0.3
    fake_openai.queue(FakeResponse(hang=True))
    with pytest.raises(LLMError) as caught:
        await _collect(get_chat_model(), messages=USER)
    assert caught.value.kind == "timeout"


async def test_timeout_in_the_middle_of_a_stream_keeps_the_text_already_sent(
    fake_openai: FakeOpenAIServer, settings: Any
) -> None:
    settings.LLM_TIMEOUT = 0.3
    fake_openai.queue(FakeResponse(chunks=["Half ", "an answer"], hang=True))
    received: list[str] = []
    with pytest.raises(LLMError) as caught:
        async for chunk in get_chat_model().stream(messages=USER):
            assert isinstance(chunk, TextDelta)
            received.append(chunk.text)
    assert caught.value.kind == "timeout"
    assert received == ["Half ", "an answer"]


async def test_a_stream_cut_off_before_its_finish_reason_is_an_error_not_a_complete_reply(
    fake_openai: FakeOpenAIServer,
) -> None:
    fake_openai.queue(FakeResponse(chunks=["Half ", "an ", "answer"], cut=True))
    received: list[str] = []
    with pytest.raises(LLMError) as caught:
        async for chunk in get_chat_model().stream(messages=USER):
            assert isinstance(chunk, TextDelta)
            received.append(chunk.text)
    assert caught.value.kind == "bad_response"
    assert "".join(received).startswith("Half ")


async def test_unreachable_provider_becomes_llm_error_connection(settings: Any) -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    settings.LLM_BACKEND = "openai"
    settings.OPENAI_BASE_URL = f"http://127.0.0.1:{port}/v1"
    settings.LLM_MAX_RETRIES = 0
    with pytest.raises(LLMError) as caught:
        await _collect(get_chat_model(), messages=USER)
    assert caught.value.kind == "connection"


@pytest.mark.parametrize("stream", [True, False])
async def test_garbage_answer_becomes_llm_error(fake_openai: FakeOpenAIServer, stream: bool) -> None:
    fake_openai.queue(FakeResponse(raw="data: {not json\n\n" if stream else "<html>oops</html>"))
    model = get_chat_model()
    with pytest.raises(LLMError) as caught:
        if stream:
            await _collect(model, messages=USER)
        else:
            await asyncio.to_thread(model.complete_json, messages=USER, model="judge", temperature=0.3, timeout=2)
    assert caught.value.kind == "bad_response"


async def test_an_error_event_inside_the_stream_becomes_llm_error(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.queue(FakeResponse(raw='data: {"error": {"message": "Overloaded", "type": "server_error"}}\n\n'))
    with pytest.raises(LLMError) as caught:
        await _collect(get_chat_model(), messages=USER)
    assert caught.value.kind == "status"


async def test_closing_the_stream_early_releases_the_connection(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.queue(FakeResponse(chunks=["one ", "two ", "three"], hang=True), FakeResponse("next"))
    model = get_chat_model()
    stream = cast(AsyncGenerator[Any, None], model.stream(messages=USER))
    assert await anext(stream) == TextDelta("one ")
    await stream.aclose()  # a cancelled turn
    assert await _collect(model, messages=USER) == [TextDelta("next")]


async def test_streamed_replies_reuse_one_provider_connection(fake_openai: FakeOpenAIServer) -> None:
    # Read to the end of the body after [DONE]: a response closed before it closes its connection, and
    # every turn would open a new one (a TLS handshake, with a remote provider).
    model = get_chat_model()
    for expected in ("first", "second", "third"):
        fake_openai.queue(FakeResponse(chunks=[expected, "!"]))
        assert await _collect(model, messages=USER) == [TextDelta(expected), TextDelta("!")]
    assert fake_openai.connections_opened == 1


async def test_a_response_held_open_after_done_ends_the_reply_on_time(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.queue(FakeResponse(chunks=["All ", "here"], linger=True), FakeResponse("next"))
    model = get_chat_model()
    started = time.monotonic()
    assert await _collect(model, messages=USER) == [TextDelta("All "), TextDelta("here")]
    assert time.monotonic() - started < DRAIN_SECONDS + 1
    assert await _collect(model, messages=USER) == [TextDelta("next")]  # on a new connection


def test_one_model_serves_several_event_loops(fake_openai: FakeOpenAIServer) -> None:
    # Under WSGI each async view runs in its own event loop; a cached client must not outlive its loop.
    model = get_chat_model()
    for expected in ("first", "second"):
        fake_openai.queue(FakeResponse(expected))
        assert asyncio.run(_collect(model, messages=USER)) == [TextDelta(expected)]


def test_complete_json_sends_json_mode_temperature_model_and_timeout(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.queue(FakeResponse('{"operations": [{"op": "clear"}]}'))
    answer = get_chat_model().complete_json(messages=USER, model="judge-model", temperature=0.3, timeout=5)
    assert answer == '{"operations": [{"op": "clear"}]}'
    request = fake_openai.requests[0]
    assert request["response_format"] == {"type": "json_object"}
    assert request["temperature"] == 0.3
    assert request["model"] == "judge-model"
    assert request["messages"] == USER
    assert request["stream"] is True  # streamed: given up, it stops the server


def test_complete_json_error_and_timeout_become_llm_errors(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.queue(FakeResponse(status=502), FakeResponse(hang=True))
    model = get_chat_model()
    with pytest.raises(LLMError) as failed:
        model.complete_json(messages=USER, model="judge", temperature=0.3, timeout=5)
    assert failed.value.kind == "status"
    with pytest.raises(LLMError) as timed_out:  # the per-call timeout wins over LLM_TIMEOUT
        model.complete_json(messages=USER, model="judge", temperature=0.3, timeout=0.3)
    assert timed_out.value.kind == "timeout"


def test_complete_json_without_content_is_a_bad_response(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.queue(FakeResponse(tool_calls=[{"id": "c", "name": "x", "arguments": "{}"}]))
    with pytest.raises(LLMError) as caught:
        get_chat_model().complete_json(messages=USER, model="judge", temperature=0.3, timeout=5)
    assert caught.value.kind == "bad_response"


def test_changing_settings_builds_a_fresh_model(fake_openai: FakeOpenAIServer, settings: Any) -> None:
    first = get_chat_model()
    assert get_chat_model() is first  # built once, then shared
    settings.LLM_TIMEOUT = 1.5
    second = get_chat_model()
    assert second is not first
    assert get_chat_model() is second
    settings.CHAT_MODEL = "another-model"
    assert cast(OpenAIChatModel, get_chat_model()).model == "another-model"


async def test_the_provider_reported_prompt_size_comes_last_before_tool_calls(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.queue(FakeResponse("Hi", tool_calls=[{"id": "c1", "name": "lookup", "arguments": "{}"}]))
    chunks = [chunk async for chunk in get_chat_model().stream(messages=USER, tools=[LOOKUP])]
    assert fake_openai.requests[0]["stream_options"] == {"include_usage": True}
    assert isinstance(chunks[-2], Usage) and chunks[-2].prompt_tokens > 0
    assert isinstance(chunks[-1], ToolCalls)


async def test_a_refusal_for_length_says_so_and_states_the_window(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.context_window = 5
    with pytest.raises(LLMError) as caught:
        await _collect(get_chat_model(), messages=[{"role": "user", "content": "a b c d e f g h"}])
    assert caught.value.kind == "context_length"
    assert caught.value.context_window == 5


async def test_a_400_whose_message_says_the_context_was_exceeded_is_a_refusal_for_length(
    fake_openai: FakeOpenAIServer,
) -> None:
    error = {"error": {"message": "the request exceeds the available context size", "code": 400}}
    fake_openai.queue(FakeResponse(status=400, error_body=error))
    with pytest.raises(LLMError) as caught:
        await _collect(get_chat_model(), messages=USER)
    assert caught.value.kind == "context_length"
    assert caught.value.context_window is None


async def test_other_400s_stay_plain_status_errors(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.queue(FakeResponse(status=400))
    with pytest.raises(LLMError) as caught:
        await _collect(get_chat_model(), messages=USER)
    assert caught.value.kind == "status"


async def test_an_empty_stream_is_reported_as_empty(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.context_window = 5
    fake_openai.overflow = "empty_stream"  # llama.cpp's answer to an over-long streaming request
    with pytest.raises(LLMError) as caught:
        await _collect(get_chat_model(), messages=[{"role": "user", "content": "a b c d e f g h"}])
    assert caught.value.kind == "empty"


def test_complete_text_sends_one_streamed_request_without_a_format(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.queue(FakeResponse("The user wants a small phone."))
    answer = get_chat_model().complete_text(messages=USER, model="summarizer", max_tokens=300, timeout=5)
    assert answer == "The user wants a small phone."
    request = fake_openai.requests[0]
    assert request["model"] == "summarizer" and request["max_tokens"] == 300
    assert request["stream"] is True and "response_format" not in request


def test_a_summary_given_up_while_it_streams_closes_it_and_the_server_stops(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.queue(FakeResponse("The user talked about phones. " * 30, chunk_delay=0.1))
    with pytest.raises(LLMError) as caught:
        get_chat_model().complete_text(messages=USER, model="summarizer", max_tokens=300, timeout=0.5)

    assert caught.value.kind == "timeout" and caught.value.writing
    deadline = time.monotonic() + 3
    while fake_openai.in_flight and time.monotonic() < deadline:
        time.sleep(0.05)
    assert fake_openai.in_flight == 0


def test_judge_and_summary_calls_ask_for_no_more_than_the_server_writes_within_their_limit(
    fake_openai: FakeOpenAIServer,
) -> None:
    from chat.llm import server_load

    server_load.observe_speed(model="slow", completion_tokens=100, seconds=10)  # 10 tokens a second
    model = get_chat_model()
    model.complete_text(messages=USER, model="slow", max_tokens=300, timeout=5)
    model.complete_json(messages=USER, model="slow", temperature=0.3, timeout=20, max_tokens=512)
    model.complete_json(messages=USER, model="fast", temperature=0.3, timeout=20, max_tokens=512)

    assert [r["max_tokens"] for r in fake_openai.requests] == [server_load.MIN_CAPPED_TOKENS, 200, 512]


def test_a_judge_answer_cut_at_the_tokens_its_time_allowed_is_a_timeout_not_an_unusable_answer(
    fake_openai: FakeOpenAIServer,
) -> None:
    from chat.llm import server_load

    server_load.observe_speed(model="slow", completion_tokens=100, seconds=10)  # 10 a second: 64 tokens in 2 s
    fake_openai.queue(FakeResponse('{"operations": [', finish_reason="length", delay_before=0.6))
    with pytest.raises(LLMError) as caught:
        get_chat_model().complete_json(messages=USER, model="slow", temperature=0.3, timeout=2, max_tokens=512)
    assert caught.value.kind == "timeout" and "10.0 tokens a second" in str(caught.value)

    fake_openai.queue(FakeResponse('{"operations": [', finish_reason="length"))  # fast this time: just too long
    with pytest.raises(LLMError) as caught:
        get_chat_model().complete_json(messages=USER, model="slow", temperature=0.3, timeout=20, max_tokens=512)
    assert caught.value.kind == "length"

    fake_openai.queue(FakeResponse('{"operations": [', finish_reason="length"))  # within its own max_tokens
    with pytest.raises(LLMError) as caught:
        get_chat_model().complete_json(messages=USER, model="slow", temperature=0.3, timeout=20, max_tokens=100)
    assert caught.value.kind == "length"


async def test_stream_chunks_are_read_from_the_raw_events() -> None:
    from chat.llm.sse import sse_chunks

    async def lines(*items: str) -> AsyncIterator[str]:
        for item in items:
            yield item

    stream = lines(
        ": ping", "", 'data: {"choices": [{"delta": {"content": "Hi"}}]}', "",
        "data: {\"choices\":", 'data: [{"delta": {"content": " there"}}]}', "",  # one event on two lines
        "data: [DONE]", "", 'data: {"after": "done"}', "",
    )  # fmt: skip
    assert [chunk async for chunk in sse_chunks(stream)] == [
        {"choices": [{"delta": {"content": "Hi"}}]},
        {"choices": [{"delta": {"content": " there"}}]},
    ]
    failing = lines('data: {"choices": []}', "", 'data: {"error": {"message": "Out of memory"}}', "")
    with pytest.raises(LLMError, match="reported an error: Out of memory"):
        _ = [chunk async for chunk in sse_chunks(failing)]


async def test_a_stream_deadline_turns_its_own_expiry_into_a_timeout_and_lets_a_stop_through() -> None:
    deadline = Deadline(time.monotonic() + 0.05)
    with pytest.raises(TimeoutError):  # expired while waiting for a read
        await deadline.wait(asyncio.sleep(5))

    deadline = Deadline(time.monotonic() + 0.05)
    assert await deadline.wait(asyncio.sleep(0, "chunk")) == "chunk"
    await asyncio.sleep(0.1)  # expired between reads (the consumer was busy): the next read times out
    read = asyncio.sleep(0)
    with pytest.raises(TimeoutError):
        await deadline.wait(read)
    assert inspect.getcoroutinestate(read) == inspect.CORO_CLOSED  # never run: closed, not left to warn

    deadline = Deadline(time.monotonic() + 0.05)
    deadline.move(time.monotonic() + 5)  # moved at the first token: no longer expires
    await asyncio.sleep(0.1)
    assert await deadline.wait(asyncio.sleep(0, "later")) == "later"
    deadline.cancel()

    async def stopped_while_reading() -> None:
        inner = Deadline(time.monotonic() + 5)
        await inner.wait(asyncio.sleep(5))

    task = asyncio.create_task(stopped_while_reading())
    await asyncio.sleep(0.01)
    task.cancel()  # a Stop: stays a cancellation, not a timeout
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_the_turn_hears_when_its_request_is_written_before_any_reply_arrives(
    fake_openai: FakeOpenAIServer,
) -> None:
    from chat.llm import written

    events: list[str] = []
    fake_openai.queue(FakeResponse(chunks=["Hi"], delay_before=0.3))  # the provider thinks before it answers
    token = written.on_request_written.set(lambda: events.append(f"written, {len(fake_openai.requests)} received"))
    try:
        async for chunk in get_chat_model().stream(messages=USER):
            if isinstance(chunk, TextDelta):
                events.append("text")
    finally:
        written.on_request_written.reset(token)
    # Once, for the one request, as soon as it was sent: long before the reply's first byte.
    assert events[0].startswith("written") and events[-1] == "text" and events.count("text") == 1
    assert sum(e.startswith("written") for e in events) == 1

    fake_openai.queue(FakeResponse(chunks=["Hi"]))
    assert await _collect(get_chat_model(), messages=USER) == [TextDelta("Hi")]  # no callback set: nothing heard
    assert sum(e.startswith("written") for e in events) == 1


SCHEMA = {"type": "object", "properties": {"operations": {"type": "array"}}, "required": ["operations"]}


@pytest.mark.parametrize(
    ("takes", "sent"),
    [
        (None, [{"type": "json_schema", "json_schema": {"name": "answer", "schema": SCHEMA, "strict": False}}]),
        (("text", "json_object"), None),  # llama-cpp-python: refuses json_schema, takes a schema in JSON mode
    ],
)
def test_complete_json_sends_the_schema_where_the_server_takes_it_else_json_mode_with_it(
    fake_openai: FakeOpenAIServer, takes: tuple[str, ...] | None, sent: list[dict[str, Any]] | None
) -> None:
    fake_openai.response_formats = takes
    fake_openai.queue(FakeResponse('{"operations": []}'), FakeResponse('{"operations": []}'))
    model = get_chat_model()
    for _ in range(2):
        answer = model.complete_json(messages=USER, model=f"judge-{takes}", temperature=0.3, timeout=5, schema=SCHEMA)
        assert answer == '{"operations": []}'

    formats = [r["response_format"] for r in fake_openai.requests]
    if sent is not None:
        assert formats == sent * 2
    else:  # refused once, then asked in the form it took, which is remembered
        assert [f["type"] for f in formats] == ["json_schema", "json_object", "json_object"]
        assert formats[1] == {"type": "json_object", "schema": SCHEMA}


def test_a_server_that_takes_no_schema_at_all_gets_plain_json_mode(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.response_formats = ("json_object",)

    def respond(body: dict[str, Any]) -> FakeResponse:
        if "schema" in body["response_format"]:
            return FakeResponse(status=400, error_body={"error": {"message": "'schema' is not supported here"}})
        return FakeResponse('{"operations": []}')

    fake_openai.responder = respond
    answer = get_chat_model().complete_json(messages=USER, model="plain", temperature=0.3, timeout=5, schema=SCHEMA)

    assert answer == '{"operations": []}'
    assert [r["response_format"] for r in fake_openai.requests][1:] == [
        {"type": "json_object", "schema": SCHEMA},
        {"type": "json_object"},
    ]


def test_a_judge_call_given_up_while_the_answer_streams_closes_it_and_the_server_stops(
    fake_openai: FakeOpenAIServer,
) -> None:
    fake_openai.queue(FakeResponse('{"operations": [' + '{"op": "clear"}, ' * 40 + "]}", chunk_delay=0.1))
    started = time.monotonic()
    with pytest.raises(LLMError) as caught:
        get_chat_model().complete_json(messages=USER, model="judge", temperature=0.3, timeout=0.5)

    assert caught.value.kind == "timeout" and caught.value.writing
    assert time.monotonic() - started < 2
    deadline = time.monotonic() + 3
    while fake_openai.in_flight and time.monotonic() < deadline:
        time.sleep(0.05)
    assert fake_openai.in_flight == 0  # it stopped writing at its next token, not at the end of the answer
